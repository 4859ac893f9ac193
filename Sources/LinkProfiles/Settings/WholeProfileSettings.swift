import LinkModel

/// `description`: free text shown by `linkcond profiles`.
public enum DescriptionSetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "description", value: "text (quote it to use `#`)", default: "empty",
            meaning: "shown by `linkcond profiles`",
            example: "Edge, typical")
    ]
    public static let kernelSupport = KernelSupport.ignored
    public static let acceptsQuotedText = true

    public static func expected(for key: String) -> String { "a short description" }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        { $0.description = value }
    }

    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        [("description", ProfileLine.quotedIfNeeded(profile.description))]
    }

    public static func summary(_ profile: Profile) -> String? { nil }
}

/// The `tcp.*` keys: how the emulated TCP senders on the link behave.
public enum TCPSenderSetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "tcp.congestion", value: "`cubic`, `reno`", default: "cubic",
            meaning: "congestion control of the emulated TCP senders",
            example: "reno"),
        KeyReference(
            "tcp.initial-window", value: "segments, 1 to 1000", default: "10",
            meaning: "their initial window (Linux's)",
            example: "4"),
        KeyReference(
            "tcp.slow-start-after-idle", value: "`on`, `off`", default: "on",
            meaning: "whether an idle connection restarts from the initial window",
            example: "off"),
        KeyReference(
            "tcp.segmentation-offload", value: "`on`, `off`", default: "on",
            meaning: "whether senders send new data in units of several segments, as Linux does (TSO/GSO)",
            example: "off"),
    ]
    public static let kernelSupport = KernelSupport.ignored

    public static func expected(for key: String) -> String {
        switch key {
        case "tcp.congestion": ProfileValue.expectedCongestion
        case "tcp.initial-window": ProfileValue.expectedInitialWindow
        default: ProfileValue.expectedSwitch
        }
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        switch key {
        case "tcp.congestion":
            let algorithm = try ProfileValue.congestion(value)
            return { $0.tcp.congestion = algorithm }
        case "tcp.initial-window":
            let segments = try ProfileValue.initialWindow(value)
            return { $0.tcp.initialWindow = segments }
        case "tcp.segmentation-offload":
            let on = try ProfileValue.onOff(value)
            return { $0.tcp.segmentationOffload = on }
        default:
            let on = try ProfileValue.onOff(value)
            return { $0.tcp.slowStartAfterIdle = on }
        }
    }

    /// The keys whose values differ from Linux's defaults.
    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        let tcp = profile.tcp
        let defaults = TCPSettings()
        var settings: [(key: String, value: String)] = []
        if tcp.congestion != defaults.congestion { settings.append(("tcp.congestion", tcp.congestion.rawValue)) }
        if tcp.initialWindow != defaults.initialWindow {
            settings.append(("tcp.initial-window", String(tcp.initialWindow)))
        }
        if tcp.slowStartAfterIdle != defaults.slowStartAfterIdle {
            settings.append(("tcp.slow-start-after-idle", tcp.slowStartAfterIdle ? "on" : "off"))
        }
        if tcp.segmentationOffload != defaults.segmentationOffload {
            settings.append(("tcp.segmentation-offload", tcp.segmentationOffload ? "on" : "off"))
        }
        return settings
    }

    public static func summary(_ profile: Profile) -> String? {
        let settings = rendered(profile)
        guard !settings.isEmpty else { return nil }
        return "TCP " + settings.map { "\($0.key.dropFirst(4)) \($0.value)" }.joined(separator: " ")
    }
}

/// `dns.delay`: latency added to DNS lookups made by, or relayed through, linkcond.
public enum DNSDelaySetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "dns.delay", value: "duration", default: "0 ms",
            meaning: "added to every DNS lookup linkcond makes or relays",
            example: "3 s")
    ]
    public static let kernelSupport = KernelSupport.programmed

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        let delay = try ProfileValue.duration(value)
        return { $0.dnsDelay = delay }
    }

    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        [("dns.delay", ProfileValue.format(profile.dnsDelay))]
    }

    public static func summary(_ profile: Profile) -> String? {
        profile.dnsDelay == .zero ? nil : ProfileValue.format(profile.dnsDelay) + " DNS delay"
    }
}

/// `fault`: what happens to every connection regardless of rate and delay (`ConnectionFault`).
public enum ConnectionFaultSetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "fault", value: "`none`, `blackhole`, `refuse`", default: "none",
            meaning: "blackhole: accept, forward nothing; refuse: reset new connections",
            example: "blackhole")
    ]
    public static let kernelSupport = KernelSupport.refused

    public static func expected(for key: String) -> String { ProfileValue.expectedFault }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        let fault = try ProfileValue.fault(value)
        return { $0.fault = fault }
    }

    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        [("fault", profile.fault.rawValue)]
    }

    public static func summary(_ profile: Profile) -> String? {
        profile.fault == .none ? nil : "fault \(profile.fault.rawValue)"
    }
}

/// `seed`: the seed of every random draw, so a run repeats exactly.
public enum SeedSetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "seed", value: "unsigned integer, or `random`", default: "random",
            meaning: "seed of every random draw (jitter, loss): the same seed repeats a run exactly",
            example: "42")
    ]
    public static let kernelSupport = KernelSupport.ignored

    public static func expected(for key: String) -> String { ProfileValue.expectedSeed }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        let seed = try ProfileValue.seed(value)
        return { $0.seed = seed }
    }

    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        [("seed", ProfileValue.format(seed: profile.seed))]
    }

    public static func summary(_ profile: Profile) -> String? { profile.seed.map { "seed \($0)" } }
}

/// `exclude`: destinations a proxy front end relays untouched.
public enum ExcludeSetting: WholeProfileSetting {
    public static let reference = [
        KeyReference(
            "exclude", value: "list, or `none`", default: "none",
            meaning: "destinations relayed untouched, see "
                + "[exclude](../guides/proxy.md#relaying-some-destinations-untouched-exclude)",
            example: "*.example.com")
    ]
    public static let kernelSupport = KernelSupport.ignored

    public static func expected(for key: String) -> String { ProfileValue.expectedHostPatterns }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        let patterns = try ProfileValue.hostPatterns(value)
        return { $0.exclude = patterns }
    }

    public static func rendered(_ profile: Profile) -> [(key: String, value: String)] {
        [("exclude", ProfileValue.format(profile.exclude))]
    }

    public static func summary(_ profile: Profile) -> String? {
        profile.exclude.isEmpty ? nil : "excluding " + ProfileValue.format(profile.exclude)
    }
}
