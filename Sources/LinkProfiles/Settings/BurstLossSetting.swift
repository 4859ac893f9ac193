import LinkModel

/// The datagram loss model keys: `loss.model` and the Gilbert-Elliott parameters `ge.p`, `ge.r`, `ge.loss-bad`,
/// `ge.loss-good` (see `GilbertElliottLoss`).
public enum BurstLossSetting: DirectionSetting {
    private static var parameters: [(key: String, field: KeyPath<GilbertElliottParameters, Percentage>)] {
        [("ge.p", \.goodToBad), ("ge.r", \.badToGood), ("ge.loss-bad", \.lossInBad), ("ge.loss-good", \.lossInGood)]
    }

    public static let reference = [
        KeyReference(
            "loss.model", value: "`random`, `gilbert-elliott`", default: "random",
            meaning: "`random` uses `loss`; `gilbert-elliott` drops datagrams and TCP segments in bursts with the "
                + "`ge.*` keys instead",
            example: "gilbert-elliott"),
        KeyReference(
            "ge.p", value: "percent", default: "1 %",
            meaning: "probability of moving from the good to the bad state after a datagram (netem's *p*)",
            example: "2 %"),
        KeyReference(
            "ge.r", value: "percent", default: "25 %",
            meaning: "probability of moving from the bad back to the good state (netem's *r*); the mean burst is 1/r "
                + "datagrams",
            example: "50 %"),
        KeyReference(
            "ge.loss-bad", value: "percent", default: "100 %",
            meaning: "loss probability in the bad state (netem's *1-h*)",
            example: "90 %"),
        KeyReference(
            "ge.loss-good", value: "percent", default: "0 %",
            meaning: "loss probability in the good state (netem's *1-k*)",
            example: "1 %"),
    ]
    public static let kernelSupport = KernelSupport.partly("`random` only")
    public static let referenceSection = ReferenceSection.datagram

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
        for (key, field) in parameters
        where direction.gilbertElliott[keyPath: field] != defaults.gilbertElliott[keyPath: field] {
            lines.append((key, ProfileValue.format(direction.gilbertElliott[keyPath: field])))
        }
        return lines
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        guard downlink.lossModel == .gilbertElliott || uplink.lossModel == .gilbertElliott else { return nil }
        let down = downlink.burstLossSummary
        let up = uplink.burstLossSummary
        return "bursty datagram loss " + (down == up ? down : "\(down)/\(up)")
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.lossModel == .gilbertElliott ? ["loss.model = gilbert-elliott"] : []
    }
}
