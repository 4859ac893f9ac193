import Foundation
import LinkConditioner

/// What linkcond asks the kernel to do to one direction of a device.
///
/// Rates count bytes as tc counts them: whole Ethernet frames including their 14-byte header, so a
/// full-size TCP segment carries 1448 payload bytes per 1514 counted (95.6 %), whatever the profile's
/// `bandwidth.counts` says. The proxy counts payload unless `bandwidth.counts = frames`.
public struct KernelShaping: Hashable, Sendable {
    /// The htb class rate in frame bits per second; `nil` is unlimited.
    public var rate: BitRate?
    public var delay: Duration
    public var jitter: Duration
    public var loss: Percentage
    /// Bytes that may wait behind the rate limit: a bfifo's limit; netem's packet limit is this in full-size frames
    /// plus twice the delay line (at least 1000, at most 100 000 packets).
    public var queue: ByteCount
    /// Bytes the htb class may send at line speed after an idle period; `nil` picks one frame plus 1 ms at `rate`.
    public var burst: ByteCount?
    /// The netem leaf's packet limit as read back from the kernel; `nil` in requests, where it derives from `queue`.
    public var netemLimit: Int?

    public init(
        rate: BitRate? = nil, delay: Duration = .zero, jitter: Duration = .zero, loss: Percentage = .zero,
        queue: ByteCount = DirectionProfile.defaultQueue, burst: ByteCount? = nil
    ) {
        self.rate = rate
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.queue = queue
        self.burst = burst
    }

    /// The direction of `profile` in kernel terms.
    public init(_ direction: DirectionProfile) {
        self.init(
            rate: direction.bandwidth, delay: direction.delay, jitter: direction.jitter, loss: direction.loss,
            queue: direction.queue, burst: direction.burst)
    }

    /// Whether a netem qdisc is needed: the part a kernel without sch_netem cannot do.
    public var needsNetem: Bool { delay > .zero || jitter > .zero || loss > .zero }

    /// Whether this direction changes anything at all.
    public var isImpaired: Bool { rate != nil || needsNetem }

    /// This shaping with delay, jitter and loss removed.
    public var rateOnly: KernelShaping {
        var copy = self
        copy.delay = .zero
        copy.jitter = .zero
        copy.loss = .zero
        return copy
    }

    /// Delay, jitter and loss in words, for saying what `--rate-only` left out.
    var netemSummary: String {
        var parts: [String] = []
        if delay > .zero { parts.append("delay \(delay.milliseconds) ms") }
        if jitter > .zero { parts.append("jitter \(jitter.milliseconds) ms") }
        if loss > .zero { parts.append("loss \(loss.percent.formattedPercent) %") }
        return parts.joined(separator: ", ")
    }

    /// The burst htb is given: the one asked for, or one frame plus 1 ms at the rate.
    var effectiveBurst: Int {
        if let burst { return burst.bytes }
        return TrafficHandle.frameBytes
            + Int(((rate ?? TrafficHandle.unlimitedRate).bitsPerSecond / 8 / 1000).rounded())
    }
}

/// Everything linkcond applies to one device: both directions, DNS delay and an optional traffic match.
public struct KernelConditioning: Hashable, Sendable {
    public var uplink: KernelShaping
    public var downlink: KernelShaping
    /// Extra delay for packets to TCP or UDP port 53 leaving the device (the query's way out), as NLC does.
    public var dnsDelay: Duration
    /// Only this traffic is conditioned (DNS delay still applies to all DNS); `nil` is all traffic.
    public var match: TrafficMatch?

    public init(
        uplink: KernelShaping = KernelShaping(), downlink: KernelShaping = KernelShaping(),
        dnsDelay: Duration = .zero, match: TrafficMatch? = nil
    ) {
        self.uplink = uplink
        self.downlink = downlink
        self.dnsDelay = dnsDelay
        self.match = match
    }

    /// The profile's directions and DNS delay; fault and seed have no kernel counterpart.
    public init(profile: Profile, match: TrafficMatch? = nil) {
        self.init(
            uplink: KernelShaping(profile.uplink), downlink: KernelShaping(profile.downlink),
            dnsDelay: profile.dnsDelay, match: match)
    }

    public var needsNetem: Bool { uplink.needsNetem || downlink.needsNetem || dnsDelay > .zero }

    /// This conditioning without anything netem does, and a sentence naming what was removed (`nil` if nothing).
    public var rateOnly: (conditioning: KernelConditioning, leftOut: String?) {
        var parts: [String] = []
        if uplink.needsNetem { parts.append("uplink \(uplink.netemSummary)") }
        if downlink.needsNetem { parts.append("downlink \(downlink.netemSummary)") }
        if dnsDelay > .zero { parts.append("DNS delay \(dnsDelay.milliseconds) ms") }
        let stripped = KernelConditioning(
            uplink: uplink.rateOnly, downlink: downlink.rateOnly, dnsDelay: .zero, match: match)
        return (stripped, parts.isEmpty ? nil : "left out (needs netem): " + parts.joined(separator: "; "))
    }

    /// The htb tree for `direction`, or `nil` when that direction is left untouched.
    func tree(for direction: TrafficDirection) -> DirectionTree? {
        let shaping = direction == .uplink ? uplink : downlink
        let dns = direction == .uplink ? dnsDelay : .zero
        return DirectionTree(shaping: shaping, dnsDelay: dns, match: match, direction: direction)
    }
}

/// The fixed handles, priorities and names that mark linkcond's kernel objects as its own.
///
/// `clear` and re-apply touch only objects with these marks: a root qdisc with handle 1c0d: ("lc0d"),
/// ingress filters with priority 0x1c0d, and ifb devices named `lc-ifb-<ifindex>`.
enum TrafficHandle {
    static let rootMajor: UInt32 = 0x1c0d
    static let root: UInt32 = rootMajor << 16
    static let shapingClass: UInt32 = root | 0x1
    static let dnsClass: UInt32 = root | 0x35
    static let shapingNetem: UInt32 = 0x1c1e << 16
    static let shapingFifo: UInt32 = 0x1c1f << 16
    static let dnsNetem: UInt32 = 0x1c35 << 16
    /// Priority of the ingress redirect filter on the conditioned device.
    static let redirectPriority: UInt16 = 0x1c0d
    /// Priorities of the filters inside linkcond's htb tree.
    static let dnsPriorities: [UInt16] = [1, 2]
    static let matchPriorityBase: UInt16 = 10
    static let passPriority: UInt16 = 100

    /// An htb class rate that stands for "no limit" (a class needs some rate).
    static let unlimitedRate = BitRate.gbps(100)
    /// Bytes of a full-size Ethernet frame as tc counts it (1500-byte MTU plus the 14-byte header).
    static let frameBytes = 1514

    /// The ifb device that carries `ifindex`'s downlink; at most 15 characters.
    static func ifbName(forIfindex ifindex: Int32) -> String { "lc-ifb-\(ifindex)" }

    /// A tc handle as `tc` prints it: "1c0d:" or "1c0d:1".
    static func text(_ handle: UInt32) -> String {
        if handle == 0xffff_ffff { return "root" }
        let major = String(handle >> 16, radix: 16)
        let minor = handle & 0xffff
        return minor == 0 ? "\(major):" : "\(major):\(String(minor, radix: 16))"
    }
}

/// The htb tree linkcond builds on one device's egress for one direction, as pure data.
///
///     root htb 1c0d: default 1
///       class 1c0d:1  htb rate R ceil R  -> leaf netem 1c1e: (delay, jitter, loss) or bfifo 1c1f: (queue)
///       class 1c0d:35 htb rate R ceil R  -> leaf netem 1c35: (delay + DNS delay), uplink only
///       filters: prio 1-2 DNS (UDP/TCP dport 53) -> 1c0d:35; prio 10+ match -> 1c0d:1; prio 100 rest -> 1c0d:0 (unshaped)
struct DirectionTree: Hashable {
    enum Leaf: Hashable {
        case netem(delay: Duration, jitter: Duration, loss: Percentage, limitPackets: Int)
        case fifo(limitBytes: Int)

        var handle: UInt32 {
            if case .fifo = self { return TrafficHandle.shapingFifo }
            return TrafficHandle.shapingNetem
        }
    }

    struct ShapingClass: Hashable {
        var handle: UInt32
        var rate: BitRate
        var burstBytes: Int
        var leaf: Leaf
        var leafHandle: UInt32
    }

    struct Filter: Hashable {
        var priority: UInt16
        /// ETH_P_IP, or ETH_P_ALL for the pass-through filter.
        var protocolNumber: UInt16
        var keys: [U32Key]
        var flowid: UInt32
    }

    var classes: [ShapingClass]
    var filters: [Filter]

    init?(shaping: KernelShaping, dnsDelay: Duration, match: TrafficMatch?, direction: TrafficDirection) {
        guard shaping.isImpaired || dnsDelay > .zero else { return nil }
        let rate = shaping.rate ?? TrafficHandle.unlimitedRate
        classes = []
        filters = []
        if shaping.isImpaired {
            let leaf = Self.leaf(shaping, extraDelay: .zero)
            classes.append(
                ShapingClass(
                    handle: TrafficHandle.shapingClass, rate: rate, burstBytes: shaping.effectiveBurst,
                    leaf: leaf, leafHandle: leaf.handle))
            if let match {
                for (index, keys) in match.keySets(for: direction).enumerated() {
                    filters.append(
                        Filter(
                            priority: TrafficHandle.matchPriorityBase + UInt16(index),
                            protocolNumber: EthernetProtocol.ip,
                            keys: keys, flowid: TrafficHandle.shapingClass))
                }
                filters.append(
                    Filter(
                        priority: TrafficHandle.passPriority, protocolNumber: EthernetProtocol.all,
                        keys: [U32Key(value: 0, mask: 0, offset: 0)], flowid: TrafficHandle.root))
            }
        }
        if dnsDelay > .zero {
            classes.append(
                ShapingClass(
                    handle: TrafficHandle.dnsClass, rate: rate, burstBytes: shaping.effectiveBurst,
                    leaf: Self.leaf(shaping, extraDelay: dnsDelay), leafHandle: TrafficHandle.dnsNetem))
            for (priority, ipProtocol) in zip(TrafficHandle.dnsPriorities, [UInt32(17), UInt32(6)]) {
                filters.append(
                    Filter(
                        priority: priority, protocolNumber: EthernetProtocol.ip,
                        keys: [
                            U32Key(value: ipProtocol << 16, mask: 0x00ff_0000, offset: 8),
                            U32Key(value: 53, mask: 0x0000_ffff, offset: 20),
                        ],
                        flowid: TrafficHandle.dnsClass))
            }
        }
        filters.sort { $0.priority < $1.priority }
    }

    /// The leaf for a class: netem when anything but rate is asked, else a byte fifo as deep as the queue.
    private static func leaf(_ shaping: KernelShaping, extraDelay: Duration) -> Leaf {
        let delay = shaping.delay + extraDelay
        guard delay > .zero || shaping.jitter > .zero || shaping.loss > .zero else {
            return .fifo(limitBytes: shaping.queue.bytes)
        }
        let queuePackets = (shaping.queue.bytes + TrafficHandle.frameBytes - 1) / TrafficHandle.frameBytes
        let rate = shaping.rate ?? BitRate.gbps(1)
        let delayLine = rate.bytes(in: delay + shaping.jitter) / Double(TrafficHandle.frameBytes)
        let limit = min(max(1000, queuePackets + 2 * Int(delayLine.rounded(.up))), 100_000)
        return .netem(delay: delay, jitter: shaping.jitter, loss: shaping.loss, limitPackets: limit)
    }
}

/// Ethernet protocol numbers a filter matches on (host byte order; libnl converts).
enum EthernetProtocol {
    static let ip: UInt16 = 0x0800
    static let all: UInt16 = 0x0003
}

extension Duration {
    /// Whole microseconds, as libnl's netem setters take them.
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    var milliseconds: String {
        let value = Double(microseconds) / 1000
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }
}

extension Double {
    var formattedPercent: String { self == rounded() ? String(Int(self)) : String(self) }
}

extension KernelShaping {
    /// One line in profile terms, e.g. "rate 10 Mbit/s of frames, delay 100 ms, loss 1 %, queue 256 KiB": the
    /// kernel counts frames whatever the profile's `bandwidth.counts` says, so the line says so.
    public var summary: String {
        guard isImpaired else { return "unshaped" }
        var parts = [rate.map { "rate \($0.tcText) of frames" } ?? "rate unlimited"]
        if needsNetem { parts.append(netemSummary) }
        parts.append(netemLimit.map { "netem limit \($0) packets" } ?? "queue \(queue.tcText)")
        if let burst { parts.append("burst \(burst.tcText)") }
        return parts.joined(separator: ", ")
    }
}

extension KernelConditioning {
    /// The conditioning as `linkcond tc show` prints it, one line per aspect.
    public var summaryLines: [String] {
        var lines = ["uplink:   \(uplink.summary)", "downlink: \(downlink.summary)"]
        if dnsDelay > .zero { lines.append("dns:      +\(dnsDelay.milliseconds) ms to TCP/UDP port 53 (uplink)") }
        lines.append("match:    \(match?.description ?? "all traffic")")
        return lines
    }
}

extension BitRate {
    /// The rate with the largest unit that keeps it at or above 1, as tc would write it (frame bits).
    var tcText: String {
        let units: [(Double, String)] = [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")]
        for (scale, unit) in units where bitsPerSecond >= scale {
            let value = bitsPerSecond / scale
            let text = value == value.rounded() ? String(Int(value)) : String(format: "%.3g", value)
            return "\(text) \(unit)"
        }
        return "\(Int(bitsPerSecond)) bit/s"
    }
}

extension ByteCount {
    var tcText: String {
        if bytes >= 1024, bytes % 1024 == 0 { return "\(bytes / 1024) KiB" }
        return "\(bytes) B"
    }
}
