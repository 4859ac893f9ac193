import LinkModel

/// One key of the profile format, as written left of `=`, and what it sets.
///
/// A link key without `uplink.` or `downlink.` sets both directions; a prefixed key sets one and, in a file,
/// wins over the unprefixed key whatever their order. Connection-wide keys (`connect.stall`, `blocked.*`,
/// `captive-portal`) take no prefix: a prefixed one is refused rather than half applied.
package struct ProfileKey: Hashable, Sendable {
    /// The per-direction settings.
    enum LinkSetting: String, CaseIterable, Sendable {
        case bandwidth, delay, jitter, loss, queue, burst
    }

    /// The emulated TCP senders' settings, for both directions.
    enum TCPSetting: String, CaseIterable, Sendable {
        case congestion = "tcp.congestion"
        case initialWindow = "tcp.initial-window"
        case slowStartAfterIdle = "tcp.slow-start-after-idle"
    }

    /// Which directions a link key sets.
    enum Side: String, CaseIterable, Sendable {
        case both, downlink, uplink
    }

    enum Target: Hashable, Sendable {
        case description
        case link(LinkSetting, Side)
        case tcp(TCPSetting)
        /// A key declared by a `DirectionSetting`.
        case declared(String, Side)
        case dnsDelay
        case fault
        case seed
        case exclude
    }

    var target: Target

    package var name: String {
        switch target {
        case .description: "description"
        case let .link(setting, .both): setting.rawValue
        case let .link(setting, side): "\(side.rawValue).\(setting.rawValue)"
        case let .tcp(setting): setting.rawValue
        case let .declared(key, .both): key
        case let .declared(key, side): "\(side.rawValue).\(key)"
        case .dnsDelay: "dns.delay"
        case .fault: "fault"
        case .seed: "seed"
        case .exclude: "exclude"
        }
    }

    /// Whether the key sets one direction only, so it applies after the keys that set both.
    var isDirectional: Bool {
        switch target {
        case let .link(_, side), let .declared(_, side): side != .both
        default: false
        }
    }

    static let all: [ProfileKey] = {
        let linkKeys = Side.allCases.flatMap { side in LinkSetting.allCases.map { ProfileKey(target: .link($0, side)) } }
        let declaredNames: [String] = DirectionSettings.all.filter { !$0.isConnectionWide }.flatMap { $0.keys }
        let declaredKeys = Side.allCases.flatMap { side in declaredNames.map { ProfileKey(target: .declared($0, side)) } }
        let connectionKeys = DirectionSettings.all.filter { $0.isConnectionWide }.flatMap { $0.keys }
            .map { ProfileKey(target: .declared($0, .both)) }
        let tcpKeys = TCPSetting.allCases.map { ProfileKey(target: .tcp($0)) }
        let otherKeys = [ProfileKey(target: .dnsDelay), ProfileKey(target: .fault), ProfileKey(target: .seed), ProfileKey(target: .exclude)]
        return [ProfileKey(target: .description)] + linkKeys + declaredKeys + connectionKeys + tcpKeys + otherKeys
    }()

    static let allNames = all.map(\.name)

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The key named `name`, or the unknown-key problem with a did-you-mean.
    package static func named(_ name: String) throws(ProfileError.Kind) -> ProfileKey {
        if let key = byName[name] { return key }
        for side in [Side.uplink, .downlink] where name.hasPrefix(side.rawValue + ".") {
            let unprefixed = String(name.dropFirst(side.rawValue.count + 1))
            let connectionWide = DirectionSettings.owner(of: unprefixed)?.isConnectionWide == true
                || byName[unprefixed].map { !$0.isDirectional } == true
            if connectionWide { throw .connectionWideKey(name, unprefixed: unprefixed) }
        }
        throw .unknownKey(name, suggestion: .closest(to: name, among: allNames))
    }

    /// What the key expects, for a missing value.
    var expected: String {
        switch target {
        case .description: "a short description"
        case .link(.bandwidth, _): ProfileValue.expectedRate
        case .link(.delay, _), .link(.jitter, _), .dnsDelay: ProfileValue.expectedDuration
        case .link(.loss, _): ProfileValue.expectedPercentage
        case .link(.queue, _): ProfileValue.expectedSize
        case .link(.burst, _): ProfileValue.expectedBurst
        case .tcp(.congestion): ProfileValue.expectedCongestion
        case .tcp(.initialWindow): ProfileValue.expectedInitialWindow
        case .tcp(.slowStartAfterIdle): ProfileValue.expectedSwitch
        case .fault: ProfileValue.expectedFault
        case .seed: ProfileValue.expectedSeed
        case .exclude: ProfileValue.expectedHostPatterns
        case let .declared(key, _): DirectionSettings.owner(of: key)?.expected(for: key) ?? ""
        }
    }

    /// Validates `value` and returns the change it makes, so that nothing is applied until every line is valid.
    func change(
        for value: ProfileLine.Value, context: SettingContext = SettingContext()
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        if case .description = target {
            let text = value.text
            return { $0.description = text }
        }
        if value.isQuoted { throw .invalidValue(expected: expected) }
        let text = value.text
        if text.isEmpty { throw .missingValue(expected: expected) }
        switch target {
        case .description:
            preconditionFailure("handled above")
        case let .link(setting, side):
            let directionChange = try Self.directionChange(setting, text)
            return { profile in
                if side != .uplink { directionChange(&profile.downlink) }
                if side != .downlink { directionChange(&profile.uplink) }
            }
        case .tcp(.congestion):
            let algorithm = try ProfileValue.congestion(text)
            return { $0.tcp.congestion = algorithm }
        case .tcp(.initialWindow):
            let segments = try ProfileValue.initialWindow(text)
            return { $0.tcp.initialWindow = segments }
        case .tcp(.slowStartAfterIdle):
            let on = try ProfileValue.onOff(text)
            return { $0.tcp.slowStartAfterIdle = on }
        case let .declared(key, side):
            guard let owner = DirectionSettings.owner(of: key) else { preconditionFailure("declared keys have owners") }
            let directionChange = try owner.change(for: key, value: text, context: context)
            return { profile in
                if side != .uplink { directionChange(&profile.downlink) }
                if side != .downlink { directionChange(&profile.uplink) }
            }
        case .dnsDelay:
            let delay = try ProfileValue.duration(text)
            return { $0.dnsDelay = delay }
        case .fault:
            let fault = try ProfileValue.fault(text)
            return { $0.fault = fault }
        case .seed:
            let seed = try ProfileValue.seed(text)
            return { $0.seed = seed }
        case .exclude:
            let patterns = try ProfileValue.hostPatterns(text)
            return { $0.exclude = patterns }
        }
    }

    private static func directionChange(
        _ setting: LinkSetting, _ text: String
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        switch setting {
        case .bandwidth:
            let rate = try ProfileValue.rate(text)
            return { $0.bandwidth = rate }
        case .delay:
            let delay = try ProfileValue.duration(text)
            return { $0.delay = delay }
        case .jitter:
            let jitter = try ProfileValue.duration(text)
            return { $0.jitter = jitter }
        case .loss:
            let loss = try ProfileValue.percentage(text)
            return { $0.loss = loss }
        case .queue:
            let countsPackets = text.hasSuffix("packets") || text.hasSuffix("packet")
            let packetSize = ProfileValue.packetSize
            let size: ByteCount
            do {
                size = try ProfileValue.size(text)
            } catch .outOfRange {
                throw .outOfRange(expected: ProfileValue.expectedQueue)
            }
            guard countsPackets || size.bytes >= packetSize else { throw .outOfRange(expected: ProfileValue.expectedQueue) }
            let queue = countsPackets ? ByteCount(bytes: max(size.bytes / packetSize, 1) * packetSize) : size
            return {
                $0.queue = queue
                $0.queueCountsPackets = countsPackets
            }
        case .burst:
            let burst = try ProfileValue.burst(text)
            return { $0.burst = burst }
        }
    }
}
