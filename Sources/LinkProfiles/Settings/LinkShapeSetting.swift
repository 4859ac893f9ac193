import LinkModel

/// The link's own keys, which every profile renders for both directions: `bandwidth`, `delay`, `jitter`, `loss`,
/// `queue` and `burst`.
public enum LinkShapeSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "bandwidth", value: "rate, or `unlimited`", default: "unlimited",
            meaning: "the bottleneck rate, in payload bytes (what the app reads and writes) unless `bandwidth.counts = "
                + "frames`",
            example: "1.5 Mbit/s"),
        KeyReference(
            "delay", value: "duration", default: "0 ms",
            meaning: "one-way propagation delay added to every byte",
            example: "40 ms"),
        KeyReference(
            "jitter", value: "duration", default: "0 ms",
            meaning: "each chunk's delay varies uniformly in ±jitter; a TCP stream is never reordered",
            example: "5 ms"),
        KeyReference(
            "loss", value: "percent", default: "0 %",
            meaning: "packet loss: each datagram or TCP segment is dropped independently with this probability as "
                + "it enters the link, before `queue` and `bandwidth` (netem `loss random`); TCP repairs a lost "
                + "segment as Linux does: see the [TCP model](../design/tcp-model.md)",
            example: "2 %"),
        KeyReference(
            "queue", value: "size", default: "256 KiB",
            meaning: "the link's buffer: packets waiting behind the bandwidth cap add latency, beyond it the newcomer "
                + "is dropped; in `packets` it counts packets (segments and datagrams); in bytes at least 1500 B, one "
                + "packet",
            example: "64 KiB"),
        KeyReference(
            "burst", value: "size, or `auto`", default: "auto",
            meaning: "token-bucket depth: bytes an idle link sends at once. `auto`: none, every packet takes its "
                + "serialisation time as on a wire and under netem's `rate`; the kernel backend's htb needs a bucket "
                + "and gets one frame plus 1 ms of rate",
            example: "10 packets"),
    ]

    public static let kernelSupport = KernelSupport.programmed
    public static let referenceSection = ReferenceSection.link

    public static func expected(for key: String) -> String {
        switch key {
        case "bandwidth": ProfileValue.expectedRate
        case "loss": ProfileValue.expectedPercentage
        case "queue": ProfileValue.expectedSize
        case "burst": ProfileValue.expectedBurst
        default: ProfileValue.expectedDuration
        }
    }

    public static func change(
        for key: String, value text: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        switch key {
        case "bandwidth":
            let rate = try ProfileValue.rate(text)
            return { $0.bandwidth = rate }
        case "delay":
            let delay = try ProfileValue.duration(text)
            return { $0.delay = delay }
        case "jitter":
            let jitter = try ProfileValue.duration(text)
            return { $0.jitter = jitter }
        case "loss":
            let loss = try ProfileValue.percentage(text)
            return { $0.loss = loss }
        case "queue":
            let countsPackets = text.hasSuffix("packets") || text.hasSuffix("packet")
            let packetSize = ProfileValue.packetSize
            let size: ByteCount
            do {
                size = try ProfileValue.size(text)
            } catch .outOfRange {
                throw .outOfRange(expected: ProfileValue.expectedQueue)
            }
            guard countsPackets || size.bytes >= packetSize else {
                throw .outOfRange(expected: ProfileValue.expectedQueue)
            }
            let queue = countsPackets ? ByteCount(bytes: max(size.bytes / packetSize, 1) * packetSize) : size
            return {
                $0.queue = queue
                $0.queueCountsPackets = countsPackets
            }
        default:
            let burst = try ProfileValue.burst(text)
            return { $0.burst = burst }
        }
    }

    /// Every key, at its default too: a rendered profile always states the link.
    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        [
            ("bandwidth", ProfileValue.format(direction.bandwidth)), ("delay", ProfileValue.format(direction.delay)),
            ("jitter", ProfileValue.format(direction.jitter)), ("loss", ProfileValue.format(direction.loss)),
            ("queue", ProfileValue.format(direction.queueLimit)), ("burst", ProfileValue.format(direction.burst)),
        ]
    }

    /// Rates, delay and loss always (as `down/up` pairs when the directions differ); jitter, queue and burst only
    /// when they differ from the defaults.
    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        func pair<Value: Equatable>(_ field: KeyPath<DirectionProfile, Value>, _ format: (Value) -> String) -> String {
            let down = downlink[keyPath: field]
            let up = uplink[keyPath: field]
            return down == up ? format(down) : "\(format(down))/\(format(up))"
        }
        var parts: [String] = []
        if downlink.bandwidth == nil && uplink.bandwidth == nil {
            parts.append("unlimited bandwidth")
        } else {
            parts.append("\(ProfileValue.format(downlink.bandwidth)) down")
            parts.append("\(ProfileValue.format(uplink.bandwidth)) up")
        }
        parts.append(pair(\.delay, ProfileValue.format) + " delay")
        if downlink.jitter != .zero || uplink.jitter != .zero {
            parts.append("±" + pair(\.jitter, ProfileValue.format) + " jitter")
        }
        parts.append(pair(\.loss, ProfileValue.format) + " loss")
        if downlink.queue != DirectionProfile.defaultQueue || uplink.queue != DirectionProfile.defaultQueue {
            parts.append("queue " + pair(\.queue, ProfileValue.format))
        }
        if downlink.burst != nil || uplink.burst != nil {
            parts.append("burst " + pair(\.burst, ProfileValue.format))
        }
        return parts.joined(separator: ", ")
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { [] }
}
