/// `linkcond attach`'s hold on a network namespace: the sockets it listens on there and the nftables table that
/// redirects the namespace's TCP connections and DNS queries to them (`RedirectRules`).
///
/// Made on the command's main thread before any other thread starts: it moves that thread into the target
/// namespace (setns acts on the calling thread, and threads started later inherit its namespace), so the proxy's
/// sockets, its upstream connections and the nft it runs are all in that namespace.
///
/// The table lives exactly as long as linkcond: it is made with `flags owner` by an `nft -i` process whose
/// standard input is a pipe only linkcond writes to. When linkcond ends in any way (SIGKILL included), the pipe
/// closes, nft reads its end and exits, and the kernel deletes the table with the netlink socket that owned it: a
/// killed sidecar leaves its namespace unconditioned, never redirected to a port nobody listens on.
public final class NamespaceAttachment {
    /// The network namespace to condition.
    public enum Target: Sendable, Hashable {
        /// The one linkcond runs in (a sidecar container sharing the app's namespace).
        case current
        /// A namespace file, such as /run/netns/NAME.
        case path(String)
        /// The namespace of a running process.
        case process(Int32)

        /// How messages name it.
        public var description: String {
            switch self {
            case .current: "the network namespace linkcond runs in"
            case .path(let path): "the network namespace \(path)"
            case .process(let pid): "the network namespace of process \(pid)"
            }
        }

        /// The resolver configuration the namespace's programs read, whose first nameserver the DNS forwarder asks
        /// when none is given: the one a resolver reachable from the namespace is named in, where the host's may not
        /// be. For /run/netns/NAME, /etc/netns/NAME/resolv.conf when it exists (what `ip netns exec` mounts over
        /// /etc/resolv.conf); for a process, the file under its own root; else linkcond's own /etc/resolv.conf.
        public var resolverConfiguration: String {
            let own = "/etc/resolv.conf"
            let candidate: String
            switch self {
            case .current:
                return own
            case .process(let pid):
                candidate = "/proc/\(pid)/root/etc/resolv.conf"
            case .path(let path):
                let components = path.split(separator: "/")
                let directory = components.dropLast().joined(separator: "/")
                if directory == "run/netns" || directory == "var/run/netns", let name = components.last {
                    candidate = "/etc/netns/\(name)/resolv.conf"
                } else if components.count == 4, components[0] == "proc", components[2...] == ["ns", "net"] {
                    candidate = "/proc/\(components[1])/root/etc/resolv.conf"
                } else {
                    return own
                }
            }
            return Namespaces.isReadable(candidate) ? candidate : own
        }
    }

    /// Why attaching failed, in the user's words; `isBadInput` for a namespace that does not exist (exit status
    /// 2), else the system refused (exit status 1). Nothing is left installed.
    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
        public var isBadInput = false
    }

    /// The table's name (family `inet`), which `nft list tables` inside the namespace shows while linkcond runs.
    public static let table = "linkcond-attach"
    /// The mark linkcond's own sockets carry (`Socket.markEverySocket`), which the rules let through.
    public static let socketMark: UInt32 = 0x6c63_6174

    /// The listeners and DNS socket the proxy adopts.
    public let plumbing: ExecNamespace.Plumbing
    /// The `nft -i` process that owns the table, the write end of its standard input, and the read end of its
    /// output, kept open for as long as it runs: nft would die of SIGPIPE writing to a closed pipe.
    public let ownerPID: Int32
    private var ownerInput: Int32?
    private let ownerOutput: Int32
    /// Why DNS is not redirected, nil when it is: with no resolver for the forwarder to ask (`dnsUpstream` not
    /// given, and no nameserver in the namespace's resolv.conf) or none it can reach, a redirect would send the
    /// namespace's lookups nowhere, so they flow unconditioned instead.
    public let dnsRefusal: String?

    /// Enters `target`, checks CAP_NET_ADMIN, opens the sockets and installs the rules, replacing a table a
    /// previous run left. `bypass` are the user's exclusions as nftables matches (`Exclusion.match`);
    /// `dnsUpstream` is the resolver the DNS forwarder asks (nil: the first nameserver of the target's
    /// resolv.conf).
    public init(target: Target, bypass: [String], dnsUpstream: Endpoint?) throws(Refusal) {
        try Self.enter(target)
        guard Namespaces.hasEffectiveCapability(Namespaces.capabilityNetworkAdministration) != false else {
            throw Refusal(
                description:
                    "linkcond attach needs CAP_NET_ADMIN in \(target.description) to install its nftables rules, and has not got it: run it as root there, or give its container NET_ADMIN (podman run --cap-add NET_ADMIN; Kubernetes: securityContext runAsUser 0 and capabilities add NET_ADMIN). Nothing was installed."
            )
        }
        guard let nft = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].first(where: Namespaces.isExecutable) else {
            throw Refusal(description: "nft is not installed (apt-get install nftables); nothing was installed")
        }
        dnsRefusal = Self.forwardingRefusal(dnsUpstream, target: target)
        var opened: [Socket] = []
        let listenerV4: Socket
        let listenerV6: Socket?
        let dnsQueries: Socket?
        do {
            listenerV4 = try Socket.listening(on: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
            opened.append(listenerV4)
            if dnsRefusal == nil {
                let socket = try Socket.datagram(boundTo: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
                opened.append(socket)
                dnsQueries = socket
            } else {
                dnsQueries = nil
            }
        } catch {
            for socket in opened { socket.close() }
            throw Refusal(
                description:
                    "cannot listen on 127.0.0.1 in \(target.description) (\(error)): is its loopback up? (ip link set lo up)"
            )
        }
        listenerV6 = try? Socket.listening(on: SocketAddress(numericHost: "::1", port: 0)!)
        opened += listenerV6.map { [$0] } ?? []
        var rules: RedirectRules
        do {
            rules = RedirectRules(
                table: Self.table, tcpPortV4: try listenerV4.localAddress().port,
                tcpPortV6: try listenerV6?.localAddress().port, dnsPort: try dnsQueries?.localAddress().port)
        } catch {
            for socket in opened { socket.close() }
            throw Refusal(description: "\(error)")
        }
        rules.ownedByItsMaker = true
        rules.bypass = ["meta mark 0x" + String(Self.socketMark, radix: 16), "oifname \"lo\""] + bypass
        do {
            (ownerPID, ownerInput, ownerOutput) = try Self.install(rules, nft: nft, target: target)
        } catch {
            for socket in opened { socket.close() }
            throw error
        }
        Socket.markEverySocket(Self.socketMark)
        plumbing = .attached(
            listenerV4: listenerV4.descriptor, listenerV6: listenerV6?.descriptor, dnsQueries: dnsQueries?.descriptor)
    }

    /// Why the DNS forwarder could not ask `given` (or the first nameserver of the target's resolv.conf), from the
    /// namespace it will run in: there is none, its name does not resolve, or no route reaches it. nil when it can.
    private static func forwardingRefusal(_ given: Endpoint?, target: Target) -> String? {
        let resolver: SocketAddress
        do {
            if let given {
                guard let first = try given.resolve().first else { return "--dns-upstream \(given) has no address" }
                resolver = first
            } else {
                resolver = try DNSForwarder.systemResolver(configuration: target.resolverConfiguration)
            }
        } catch {
            return given == nil ? "no nameserver in \(target.resolverConfiguration)" : "\(error)"
        }
        do {
            try Socket.datagram(connectedTo: resolver).close()
        } catch {
            return "cannot reach \(resolver): \(error)"
        }
        return nil
    }

    /// Removes the rules: closes nft's input, so that it exits and the kernel deletes the table it owns, and waits
    /// for it.
    public func detach() {
        guard let input = ownerInput else { return }
        ownerInput = nil
        Namespaces.close(input)
        _ = Namespaces.waitForChild(ownerPID)
        Namespaces.close(ownerOutput)
    }

    /// Whether the nft process that owns the table ended (so the rules are gone) without `detach`.
    public var ownerEnded: Bool {
        ownerInput != nil && Namespaces.waitForChild(ownerPID, blocking: false) != nil
    }

    private static func enter(_ target: Target) throws(Refusal) {
        let path: String
        switch target {
        case .current: return
        case .path(let given): path = given
        case .process(let pid): path = "/proc/\(pid)/ns/net"
        }
        let descriptor: Int32
        do {
            descriptor = try Namespaces.openNetwork(at: path)
        } catch {
            if error.errno == .noSuchFile {
                if case .process(let pid) = target {
                    throw Refusal(description: "--pid \(pid): no such process", isBadInput: true)
                }
                throw Refusal(
                    description: "--netns \(path): no such file (ip netns list shows the named ones)",
                    isBadInput: true)
            }
            throw Refusal(description: "cannot open \(target.description): \(error)")
        }
        defer { Namespaces.close(descriptor) }
        do {
            try Namespaces.enterNetwork(descriptor)
        } catch {
            if error.errno == .invalidArgument {
                throw Refusal(description: "\(path) is not a network namespace", isBadInput: true)
            }
            throw Refusal(
                description:
                    "cannot enter \(target.description) (\(error)): entering another namespace needs CAP_SYS_ADMIN, and conditioning it CAP_NET_ADMIN in it (run as root, or run linkcond attach inside it). Nothing was installed."
            )
        }
    }

    /// Starts `nft -i` and has it replace the table with `rules`; returns its pid and its input's and output's
    /// ends once the table is there, or throws nft's error.
    private static func install(_ rules: RedirectRules, nft: String, target: Target) throws(Refusal) -> (
        Int32, Int32, Int32
    ) {
        let session: (pid: Int32, input: Int32, output: Int32)
        do {
            session = try Namespaces.spawnPiped(nft, ["nft", "-i"])
        } catch {
            throw Refusal(description: "cannot start \(nft): \(error)")
        }
        // One line is one transaction: the table a run that could not clean up left (one made without `owner`)
        // goes, and the new one comes, at once. Then listing the table says it is there.
        let replace =
            ["add table inet \(table)", "delete table inet \(table)"] + rules.commands
        let script = replace.joined(separator: "; ") + "\nlist table inet \(table)\n"
        var output = ""
        var outcome: Result<Void, Refusal>?
        do {
            try Namespaces.write(script, to: session.input)
            var budget = 100 // tenths of a second
            while outcome == nil {
                switch try Namespaces.read(from: session.output, within: 100) {
                case .bytes(let bytes):
                    output += String(decoding: bytes, as: UTF8.self)
                    if output.contains("Error:") {
                        // The rest of the message (the command and a caret line) follows at once.
                        while case .bytes(let more) = try Namespaces.read(from: session.output, within: 200) {
                            output += String(decoding: more, as: UTF8.self)
                        }
                        outcome = .failure(nftRefusal(output, target: target))
                    } else if output.contains("table inet \(table) {") {
                        outcome = .success(())
                    }
                case .end:
                    outcome = .failure(Refusal(description: "nft -i ended: \(output)"))
                case .timedOut:
                    budget -= 1
                    if budget == 0 {
                        outcome = .failure(Refusal(description: "nft -i did not answer in 10 s: \(output)"))
                    }
                }
            }
        } catch {
            outcome = .failure(Refusal(description: "talking to nft -i: \(error)"))
        }
        if case .failure(let refusal) = outcome {
            Namespaces.close(session.input)
            _ = Namespaces.waitForChild(session.pid)
            Namespaces.close(session.output)
            throw refusal
        }
        return (session.pid, session.input, session.output)
    }

    /// nft's error as a refusal: a refused table another process owns means another `linkcond attach` runs there.
    private static func nftRefusal(_ output: String, target: Target) -> Refusal {
        let first = output.split(separator: "\n").first { $0.hasPrefix("Error:") }.map(String.init) ?? output
        if first.contains("Operation not permitted") {
            return Refusal(
                description:
                    "nftables refused the rules in \(target.description) (\(first)): another process owns table inet \(table) there; is another linkcond attach running in it?"
            )
        }
        return Refusal(description: "nftables refused the rules in \(target.description): \(first)")
    }
}

/// A destination `attach` leaves alone (`--exclude`): an IPv4 or IPv6 network, or one address and port.
public struct AttachExclusion: Sendable, Hashable {
    public var network: IPNetwork
    public var port: UInt16?

    /// Why an entry was refused, in the user's words (naming what was wrong in it).
    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads `10.0.0.0/8`, `10.96.0.1`, `10.96.0.1:443`, `fd00::/8`, `[fd00::1]` or `[fd00::1]:443`. An
    /// IPv4-mapped IPv6 address (`::ffff:10.96.0.1`) stands for the IPv4 one, which is what such a connection
    /// carries on the wire. Refuses an empty entry (an unset variable in a manifest must not mean "exclude
    /// nothing" without a word), a port that is not 1 to 65535 in plain digits, and host names (the rules match
    /// addresses).
    public init(parsing text: String) throws(Refusal) {
        let usage =
            "expected an address, a CIDR network or ADDRESS:PORT, such as 10.96.0.0/12, 10.96.0.1:443 or [fd00::1]:443 (names cannot be matched by the rules)"
        guard !text.isEmpty else {
            throw Refusal(description: "an empty entry (an unset variable?): \(usage)")
        }
        var address = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw Refusal(description: "no closing ]: \(usage)") }
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw Refusal(description: "\(usage)") }
                portText = rest.dropFirst()
            }
            address = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            address = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        if let portText {
            guard let port = Self.port(portText) else {
                throw Refusal(description: "port \"\(portText)\" is not a number from 1 to 65535")
            }
            self.port = port
        } else {
            port = nil
        }
        guard case .network(let network) = HostPattern(parsing: address) else { throw Refusal(description: usage) }
        if network.bytes.count == 16, network.bytes[0..<10].allSatisfy({ $0 == 0 }), network.bytes[10] == 0xFF,
            network.bytes[11] == 0xFF, network.prefixLength >= 96
        {
            self.network = IPNetwork(bytes: Array(network.bytes[12...]), prefixLength: network.prefixLength - 96)
        } else {
            self.network = network
        }
    }

    /// A port in plain decimal digits without a leading zero, 1 to 65535; nil for anything else (`+443`, `0443`).
    private static func port(_ text: Substring) -> UInt16? {
        guard let first = text.first, first != "0", text.count <= 5, text.allSatisfy({ ("0"..."9").contains($0) })
        else { return nil }
        return UInt16(text)
    }

    /// The nftables match for it: `ip daddr 10.0.0.0/8`, `ip daddr 10.96.0.1 meta l4proto { tcp, udp } th dport 443`.
    public var match: String {
        let family = network.bytes.count == 4 ? "ip" : "ip6"
        let ports = port.map { " meta l4proto { tcp, udp } th dport \($0)" } ?? ""
        return "\(family) daddr \(network)\(ports)"
    }
}
