import Foundation
import Logging

/// The transport a listener takes connections or datagrams on; addresses of different transports never meet.
enum ListeningTransport: Hashable, Sendable {
    case tcp
    case udp
}

/// One address linkcond listens on or relays to, with its transport.
struct TransportAddress: Hashable {
    var transport: ListeningTransport
    var address: SocketAddress
}

/// What one of linkcond's listeners holds open in its network namespace, and where it relays to.
struct ListenerAddresses {
    /// Who may share a loopback port with another listener.
    enum Role {
        /// A listener the owner named on the command line (`run --listen`, `--dns`, `--proxy`): two of them may
        /// split a port between loopback addresses (127.0.0.1 and [::1] for one name), as the owner chose.
        case commandLine
        /// A Toxiproxy proxy, made by whoever reaches the API.
        case toxiproxy
        /// The control endpoint or the Toxiproxy API.
        case api
    }

    /// What the listener is, for messages: `Toxiproxy proxy "db"`, `tcp relay`, `control endpoint`.
    var name: String
    var role: Role
    var listening: [TransportAddress] = []
    /// The fixed upstreams it relays to; a proxy front end's clients name theirs, checked one by one.
    var upstreams: [TransportAddress] = []
}

/// A listener or relay refused because it would reach linkcond itself: a relay to its own listener loops, each
/// connection opening another until every descriptor is taken, or it would catch clients of another listener.
public struct OwnListenerRefusal: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// Every address linkcond listens on in its network namespace, the one place that decides whether an address
/// reaches linkcond itself: relays, Toxiproxy proxies, the SOCKS5/HTTP front end, DNS, the control endpoint and the
/// Toxiproxy API. It also knows the local addresses of upstream connections made to one of linkcond's own ports,
/// so a loop creation could not see (an interface address that appeared later) is caught when it comes back.
///
/// Lives on the main loop thread. The listeners themselves are read from the proxy's state (`listAll`), so a
/// listener added or removed anywhere is known at once; the owner calls `changed` when the list changes. The loop
/// check alone (`listensForTCP`, `noteUpstream`, `forgetUpstream`, `isOwnUpstream`) is made by the relays of every
/// event loop (`ProxyOptions.threads`): it reads the TCP ports and the upstream local addresses under `loopCheck`,
/// a lock held for nothing else, and `changed` copies the ports there on the main loop.
final class OwnListeners {
    /// Every listener now; set once by the proxy's state.
    var listAll: () -> [ListenerAddresses] = { [] }
    private var cachedListening: [(TransportAddress, name: String)]?
    /// Orders the loops' reads and writes of `tcpPorts` and `upstreamLocals`.
    private let loopCheck = NSLock()
    /// The ports linkcond listens on for TCP at some address, as `changed` last read them.
    private var tcpPorts: Set<UInt16> = []
    /// The local address of each open upstream connection whose destination port is one linkcond listens on.
    private var upstreamLocals: Set<SocketAddress> = []
    /// Where the machine's interface addresses come from (tests give their own).
    var interfaceAddresses: () -> Set<[UInt8]> = LocalInterfaces.addresses

    /// Reads the listeners again; call when one is added or removed. Main loop thread.
    func changed() {
        cachedListening = nil
        let ports = Set(listening.filter { $0.0.transport == .tcp }.map(\.0.address.port))
        loopCheck.withLock { tcpPorts = ports }
    }

    private var listening: [(TransportAddress, name: String)] {
        if let cachedListening { return cachedListening }
        let all = listAll().flatMap { listener in listener.listening.map { ($0, name: listener.name) } }
        cachedListening = all
        return all
    }

    /// Whether linkcond listens for TCP on `port` at some address. Any loop's thread.
    func listensForTCP(on port: UInt16) -> Bool {
        loopCheck.withLock { tcpPorts.contains(port) }
    }

    /// The listener a connection to `destination` would reach, by name and address; nil when none would.
    func listener(reachedBy destination: SocketAddress, transport: ListeningTransport = .tcp) -> String? {
        let interfaces = InterfacesOnce(interfaceAddresses)
        for (own, name) in listening where own.transport == transport {
            if Self.reaches(destination, own.address, interfaces: interfaces.read) {
                return "\(name) on \(own.address)"
            }
        }
        return nil
    }

    /// Why `new` may not be added next to the listeners there are now, or nil when it may: one of its upstreams
    /// reaches a listener (itself included), an upstream already there reaches it, or it shares a port on loopback
    /// with a listener of the control endpoint, the Toxiproxy API or a Toxiproxy proxy.
    func refusal(adding new: ListenerAddresses) -> OwnListenerRefusal? {
        let existing = listAll()
        let localAddresses = InterfacesOnce(interfaceAddresses).read
        for upstream in new.upstreams {
            for listener in existing + [new] {
                for own in listener.listening
                where own.transport == upstream.transport
                    && Self.reaches(upstream.address, own.address, interfaces: localAddresses)
                {
                    return OwnListenerRefusal(
                        description:
                            "\(new.name): upstream \(upstream.address) is linkcond's own \(listener.name) on \(own.address); a relay to linkcond itself loops until every descriptor is taken. Give the address of the real server"
                    )
                }
            }
        }
        for listener in existing {
            for upstream in listener.upstreams {
                for own in new.listening
                where own.transport == upstream.transport
                    && Self.reaches(upstream.address, own.address, interfaces: localAddresses)
                {
                    return OwnListenerRefusal(
                        description:
                            "\(new.name) on \(own.address): linkcond's own \(listener.name) relays to \(upstream.address), which would reach it; a relay to linkcond itself can loop until every descriptor is taken. Choose another address"
                    )
                }
            }
            guard new.role != .commandLine || listener.role != .commandLine else { continue }
            for own in new.listening {
                for other in listener.listening
                where other.transport == own.transport && Self.overlaps(own.address, other.address) {
                    return OwnListenerRefusal(
                        description:
                            "\(new.name) on \(own.address) would share port \(own.address.port) on loopback with linkcond's own \(listener.name) on \(other.address) and catch its clients (a client of localhost:\(own.address.port) tries [::1] and 127.0.0.1); choose another port"
                    )
                }
            }
        }
        return nil
    }

    /// Whether a connection to `destination` reaches a listener bound to `listener` (same port): the same address,
    /// any address of the host when either is unspecified (0.0.0.0, [::]), or any loopback address when the
    /// listener is on loopback, so 127.0.0.2, [::1] and [::ffff:127.0.0.1] count as the listener's 127.0.0.1. That
    /// is wider than the kernel's rule, on purpose: no relay of linkcond's needs a loopback port linkcond listens on.
    static func reaches(_ destination: SocketAddress, _ listener: SocketAddress, interfaces: () -> Set<[UInt8]>) -> Bool
    {
        guard destination.port == listener.port else { return false }
        let target = destination.canonicalAddressBytes
        let own = listener.canonicalAddressBytes
        if target == own || isUnspecified(target) { return true }
        if destination.isLoopback && (listener.isLoopback || isUnspecified(own)) { return true }
        return isUnspecified(own) && interfaces().contains(target)
    }

    /// Whether two listeners on the same port would take each other's clients: the same address, or both on
    /// loopback or unspecified, where a client of `localhost:PORT` may land on either.
    static func overlaps(_ a: SocketAddress, _ b: SocketAddress) -> Bool {
        guard a.port == b.port else { return false }
        let first = a.canonicalAddressBytes
        let second = b.canonicalAddressBytes
        if first == second { return true }
        return (a.isLoopback || isUnspecified(first)) && (b.isLoopback || isUnspecified(second))
    }

    private static func isUnspecified(_ bytes: [UInt8]) -> Bool { !bytes.isEmpty && bytes.allSatisfy { $0 == 0 } }

    // MARK: loops creation cannot see

    /// Notes the local address of `relay`'s upstream connection to `destination`, when that port is one linkcond
    /// listens on (any other connection cannot come back to it, so it costs no `getsockname`). Any loop's thread.
    func noteUpstream(_ socket: Socket, to destination: SocketAddress) -> SocketAddress? {
        guard listensForTCP(on: destination.port), let local = try? socket.localAddress() else { return nil }
        loopCheck.withLock { _ = upstreamLocals.insert(local) }
        return local
    }

    /// Forgets an upstream connection `noteUpstream` noted. Any loop's thread.
    func forgetUpstream(_ local: SocketAddress) {
        loopCheck.withLock { _ = upstreamLocals.remove(local) }
    }

    /// Whether a client connecting from `peer` is one of linkcond's own upstream connections: a loop. Any loop's
    /// thread.
    func isOwnUpstream(_ peer: SocketAddress) -> Bool {
        loopCheck.withLock { !upstreamLocals.isEmpty && upstreamLocals.contains(peer) }
    }

    /// Closes `client` when it is one of linkcond's own upstream connections (a loop through relays pointing at
    /// each other), counting it in `looped` and logging the first for `listener`; true when it did.
    func closeIfLooped(
        _ client: Socket, from peer: SocketAddress, at listener: String, looped: inout Int,
        logger: Logger
    ) -> Bool {
        guard isOwnUpstream(peer) else { return false }
        looped += 1
        if looped == 1 {
            logger.warning(
                "\(listener): connection from \(peer) is linkcond's own upstream connection (a relay loop); closed. Later ones are counted in status (connectionsLooped), not logged"
            )
        }
        client.close()
        return true
    }
}

/// The machine's interface addresses, read at most once per check and only when a check needs them.
private final class InterfacesOnce {
    private let source: () -> Set<[UInt8]>
    private var addresses: Set<[UInt8]>?

    init(_ source: @escaping () -> Set<[UInt8]>) { self.source = source }

    func read() -> Set<[UInt8]> {
        if let addresses { return addresses }
        let read = source()
        addresses = read
        return read
    }
}
