import LinkModel

/// The datagram loss model keys: `loss.model` and the Gilbert-Elliott parameters `ge.p`, `ge.r`, `ge.loss-bad`,
/// `ge.loss-good` (see `GilbertElliottLoss`).
public enum BurstLossSetting: DirectionSetting {
    private static var parameters: [(key: String, field: KeyPath<GilbertElliottParameters, Percentage>)] {
        [("ge.p", \.goodToBad), ("ge.r", \.badToGood), ("ge.loss-bad", \.lossInBad), ("ge.loss-good", \.lossInGood)]
    }

    public static let keys = ["loss.model", "ge.p", "ge.r", "ge.loss-bad", "ge.loss-good"]

    public static func expected(for key: String) -> String {
        key == "loss.model" ? ProfileValue.expectedLossModel : ProfileValue.expectedPercentage
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        if key == "loss.model" {
            let model = try ProfileValue.lossModel(value)
            return { $0.lossModel = model }
        }
        let probability = try ProfileValue.percentage(value)
        switch key {
        case "ge.p": return { $0.gilbertElliott.goodToBad = probability }
        case "ge.r": return { $0.gilbertElliott.badToGood = probability }
        case "ge.loss-bad": return { $0.gilbertElliott.lossInBad = probability }
        default: return { $0.gilbertElliott.lossInGood = probability }
        }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        let defaults = DirectionProfile()
        var lines: [(key: String, value: String)] = []
        if direction.lossModel != defaults.lossModel { lines.append(("loss.model", direction.lossModel.rawValue)) }
        for (key, field) in parameters where direction.gilbertElliott[keyPath: field] != defaults.gilbertElliott[keyPath: field] {
            lines.append((key, ProfileValue.format(direction.gilbertElliott[keyPath: field])))
        }
        return lines
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        guard downlink.lossModel == .gilbertElliott || uplink.lossModel == .gilbertElliott else { return nil }
        let down = downlink.burstLossSummary, up = uplink.burstLossSummary
        return "bursty datagram loss " + (down == up ? down : "\(down)/\(up)")
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.lossModel == .gilbertElliott ? ["loss.model = gilbert-elliott"] : []
    }
}
