/// The profile's connection faults as they apply to one UDP flow of the relay (`--udp-listen`).
///
/// - `blocked.ports` matches the upstream's port and drops every datagram of the flow, both ways. `refuse` and
///   `blackhole` look the same to the client: a refusing firewall answers with an ICMP "port unreachable", which a
///   userspace relay cannot send (that needs a raw socket), so both are silence, counted as fault drops.
/// - `cut.after` stops the flow relaying, both ways, once a direction has carried that many bytes (whole datagrams:
///   the one that would cross the limit is the first dropped, none is truncated), or that long after the flow
///   opened. UDP has no connection to reset or close, so every `cut.mode` is a silent cut ("cable unplugged"); the
///   flow stays cut until it has been idle for `--udp-idle`, then the client's next datagram opens a new one.
/// - `connect.stall`, `captive-portal`, `first-byte.delay`, `slice.*` and `close.delay` concern connection set-up,
///   HTTP, turns of a stream or its end, which datagrams do not have: the relay leaves datagrams alone for them.
///
/// Pure; lives on the event loop thread of its flow.
struct DatagramFlowFaults {
    /// Why a datagram was not relayed.
    enum Drop: Equatable {
        case blocked(BlockedPortsSetting.Mode)
        case cut
    }

    let opened: Instant
    let upstreamPort: UInt16
    /// Payload bytes relayed so far, client to upstream and back.
    private(set) var carriedUp = 0
    private(set) var carriedDown = 0
    /// True once a cut has happened: nothing more crosses.
    private(set) var isCut = false

    init(opened: Instant, upstreamPort: UInt16) {
        self.opened = opened
        self.upstreamPort = upstreamPort
    }

    /// Whether a datagram of `size` bytes may cross in direction `up` (client to upstream) at `now` under `profile`,
    /// counting it if so.
    mutating func admit(_ size: Int, up: Bool, profile: Profile, at now: Instant) -> Drop? {
        if let mode = profile.connection.blocking(port: upstreamPort) { return .blocked(mode) }
        if isCut { return .cut }
        for direction in [profile.uplink, profile.downlink] {
            if case .time(let after)? = direction.faults.cutAfter, now - opened >= after {
                isCut = true
                return .cut
            }
        }
        let carried = up ? carriedUp : carriedDown
        if case .bytes(let limit)? = (up ? profile.uplink : profile.downlink).faults.cutAfter, carried + size > limit {
            isCut = true
            return .cut
        }
        if up { carriedUp += size } else { carriedDown += size }
        return nil
    }
}
