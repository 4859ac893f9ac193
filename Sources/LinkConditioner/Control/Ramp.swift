/// A setting that moves linearly from one value to another over a time, such as bandwidth fading as a train
/// leaves the station. Bandwidth, delay, jitter and loss can ramp, in one or both directions.
public struct Ramp: Sendable, Hashable {
    public enum Field: String, Sendable, Hashable, CaseIterable {
        case bandwidth, delay, jitter, loss
    }

    public var key: String
    public var field: Field
    public var uplink: Bool
    public var downlink: Bool
    /// Start and end values in the field's base unit: bits/s, nanoseconds or percent.
    public var from: Double
    public var to: Double
    public var over: Duration

    /// Parses `KEY from VALUE to VALUE over DURATION` (the words after `ramp`).
    init(parsing words: [String], fail: (String) -> ScenarioError) throws(ScenarioError) {
        let expected =
            "ramp KEY from VALUE to VALUE over DURATION, KEY one of bandwidth, delay, jitter, loss (optionally uplink./downlink.)"
        if let overIndex = words.firstIndex(of: "over"), overIndex < words.count - 2 {
            let written = words[(overIndex + 1)...].joined(separator: " ")
            throw fail("one word after \"over\", a duration without a space such as \"20s\" (not \"\(written)\")")
        }
        guard let fromIndex = words.firstIndex(of: "from"), let toIndex = words.firstIndex(of: "to"),
            let overIndex = words.firstIndex(of: "over"), fromIndex == 1, fromIndex < toIndex, toIndex < overIndex,
            overIndex == words.count - 2
        else { throw fail(expected) }
        key = words[0]
        let parts = key.split(separator: ".").map(String.init)
        guard let name = parts.last, let field = Field(rawValue: name), parts.count <= 2 else { throw fail(expected) }
        self.field = field
        uplink = parts.count == 1 || parts[0] == "uplink"
        downlink = parts.count == 1 || parts[0] == "downlink"
        guard uplink || downlink else { throw fail(expected) }
        guard case .time(let over) = Scenario.time(words[overIndex + 1]), over > .zero else {
            throw fail("a ramp duration such as \"20s\", longer than 0s and at most \(Scenario.longestTimeText)")
        }
        self.over = over
        let fromText = words[(fromIndex + 1)..<toIndex].joined(separator: " ")
        let toText = words[(toIndex + 1)..<overIndex].joined(separator: " ")
        from = try Self.value(of: field, key: key, fromText, fail: fail)
        to = try Self.value(of: field, key: key, toText, fail: fail)
    }

    private static func value(of field: Field, key: String, _ text: String, fail: (String) -> ScenarioError)
        throws(ScenarioError) -> Double
    {
        var scratch = Profile.none
        do {
            try scratch.set(key, to: text)
        } catch {
            throw fail("").explained(by: error)
        }
        let direction = key.hasPrefix("uplink.") ? scratch.uplink : scratch.downlink
        switch field {
        case .bandwidth:
            guard let rate = direction.bandwidth else {
                throw fail("a bandwidth such as \"1 Mbit/s\" (not unlimited) to ramp")
            }
            return rate.bitsPerSecond
        case .delay: return Double(direction.delay.nanoseconds)
        case .jitter: return Double(direction.jitter.nanoseconds)
        case .loss: return direction.loss.percent
        }
    }

    /// `profile` with the ramped field at `fraction` (0 to 1) of the way.
    func applied(to profile: Profile, fraction: Double) -> Profile {
        let value = from + (to - from) * min(max(fraction, 0), 1)
        var result = profile
        if uplink { set(&result.uplink, value) }
        if downlink { set(&result.downlink, value) }
        return result
    }

    private func set(_ direction: inout DirectionProfile, _ value: Double) {
        switch field {
        case .bandwidth: direction.bandwidth = BitRate(bitsPerSecond: value)
        case .delay: direction.delay = .nanoseconds(Int64(roundingClamped: value))
        case .jitter: direction.jitter = .nanoseconds(Int64(roundingClamped: value))
        case .loss: direction.loss = Percentage(value)
        }
    }
}
