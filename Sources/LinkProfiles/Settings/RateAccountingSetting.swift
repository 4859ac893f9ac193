import LinkModel

/// The `bandwidth.counts` key: whether the direction's rate counts payload bytes or Ethernet frames, as tc does.
public enum RateAccountingSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "bandwidth.counts", value: "`payload`, `frames`", default: "payload",
            meaning: "what `bandwidth`, a `queue` in bytes and `burst` count: payload bytes, or Ethernet frames as "
                + "netem, tbf and htb count them (a TCP segment 66 bytes more, 1514 for a full one; a UDP datagram "
                + "42 more), see [what a rate counts](#what-a-rate-counts)",
            example: "frames")
    ]
    public static let kernelSupport = KernelSupport.partly("counts frames whatever it says")
    public static let referenceSection = ReferenceSection.link

    public static func expected(for key: String) -> String {
        "one of " + RateAccounting.allCases.map(\.rawValue).joined(separator: ", ")
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        guard let accounting = RateAccounting(rawValue: value.lowercased()) else {
            throw .invalidValue(expected: expected(for: key))
        }
        return { $0.accounting = accounting }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.accounting == .payload ? [] : [("bandwidth.counts", direction.accounting.rawValue)]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) {
            $0.accounting == .payload ? nil : "rate counts \($0.accounting.rawValue)"
        }
    }

    /// The kernel counts frames either way; under `payload` it moves 1448/1514 of the payload the proxy moves,
    /// which the kernel backend's guide says rather than refusing every profile that leaves the key at its default.
    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { [] }
}
