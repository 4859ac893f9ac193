import LinkModel

/// Reading and writing the quantities of the profile format: durations, bit rates, byte sizes and percentages.
///
/// A value is a decimal number (digits, optionally a point and more digits), optional spaces, then a unit.
/// Units are case-sensitive because case carries meaning: `Mbit/s` and `Mbps` are megabits, `MB/s` is
/// megabytes (× 8), `ms` is milliseconds. SI prefixes are decimal (k = 1000); `KiB` and `MiB` are binary.
/// The unit's power of ten is applied to the decimal text before conversion, so `1.44 Mbit/s` is exactly
/// 1 440 000 bit/s and every rendered value parses back to the same number.
enum ProfileValue {
    /// The size of one packet, in bytes, for queues and bursts given in `packets` (an Ethernet MTU).
    static let packetSize = DirectionShape.packetSize

    /// A unit: how its number becomes the base quantity (nanoseconds, bit/s, bytes or percent).
    struct Unit {
        var symbol: String
        /// Power of ten applied to the decimal text.
        var decimalExponent: Int
        /// Exact binary multiplier applied afterwards (8 for bytes per second, 1024 for KiB, 1500 for packets).
        var multiplier: Double = 1
    }

    static let durationUnits: [Unit] = [
        Unit(symbol: "ns", decimalExponent: 0),
        Unit(symbol: "µs", decimalExponent: 3),
        Unit(symbol: "μs", decimalExponent: 3),
        Unit(symbol: "us", decimalExponent: 3),
        Unit(symbol: "ms", decimalExponent: 6),
        Unit(symbol: "s", decimalExponent: 9),
    ]

    static let rateUnits: [Unit] = [
        Unit(symbol: "bit/s", decimalExponent: 0),
        Unit(symbol: "bps", decimalExponent: 0),
        Unit(symbol: "kbit/s", decimalExponent: 3),
        Unit(symbol: "Kbit/s", decimalExponent: 3),
        Unit(symbol: "kbps", decimalExponent: 3),
        Unit(symbol: "Kbps", decimalExponent: 3),
        Unit(symbol: "Mbit/s", decimalExponent: 6),
        Unit(symbol: "Mbps", decimalExponent: 6),
        Unit(symbol: "Gbit/s", decimalExponent: 9),
        Unit(symbol: "Gbps", decimalExponent: 9),
        Unit(symbol: "B/s", decimalExponent: 0, multiplier: 8),
        Unit(symbol: "KB/s", decimalExponent: 3, multiplier: 8),
        Unit(symbol: "kB/s", decimalExponent: 3, multiplier: 8),
        Unit(symbol: "MB/s", decimalExponent: 6, multiplier: 8),
        Unit(symbol: "GB/s", decimalExponent: 9, multiplier: 8),
    ]

    static let sizeUnits: [Unit] = [
        Unit(symbol: "B", decimalExponent: 0),
        Unit(symbol: "KB", decimalExponent: 3),
        Unit(symbol: "kB", decimalExponent: 3),
        Unit(symbol: "MB", decimalExponent: 6),
        Unit(symbol: "KiB", decimalExponent: 0, multiplier: 1024),
        Unit(symbol: "MiB", decimalExponent: 0, multiplier: 1024 * 1024),
        Unit(symbol: "packets", decimalExponent: 0, multiplier: Double(packetSize)),
        Unit(symbol: "packet", decimalExponent: 0, multiplier: Double(packetSize)),
    ]

    static let percentUnits: [Unit] = [Unit(symbol: "%", decimalExponent: 0)]

    static let expectedDuration = "a duration such as \"400 ms\" (units: ns, µs, us, ms, s)"
    static let expectedRate =
        "a rate such as \"780 kbit/s\" or \"unlimited\" (units: bit/s, kbit/s, Mbit/s, Gbit/s, kbps, Mbps, Gbps, B/s, KB/s, MB/s, GB/s)"
    static let expectedSize = "a size such as \"64 KiB\" or \"100 packets\" (units: B, KB, MB, KiB, MiB, packets)"
    static let expectedBurst = "a size such as \"15 KB\" or \"auto\" (units: B, KB, MB, KiB, MiB, packets)"

    /// The longest duration a profile may give: longer than any network holds a packet, far inside the clock's range.
    static let longestDuration: Double = 3600e9
    /// The slowest and fastest rates: below 1 bit/s a segment takes longer than the clock can count; above
    /// 1000 Gbit/s no loopback carries it.
    static let rateRange: ClosedRange<Double> = 1...1e12
    /// The largest queue or burst: a gibibyte.
    static let largestSize: Double = 1024 * 1024 * 1024

    /// A queue's range: below one packet a queue in bytes would drop every full-size packet, and a TCP connection
    /// across it would retransmit forever without a byte arriving.
    static let expectedQueue = ranged(
        expectedSize, "1500 B (one packet: a smaller queue drops every full-size packet) to 1024 MiB")

    /// `expected` with the accepted range put before its example, for out-of-range errors.
    private static func ranged(_ expected: String, _ range: String) -> String {
        guard let example = expected.firstRange(of: " such as ") else { return "\(expected) from \(range)" }
        return expected[..<example.lowerBound] + " from \(range)," + expected[example.lowerBound...]
    }
    static let expectedPercentage = "a percentage from 0 % to 100 %, such as \"1 %\""
    static let expectedSeed = "an unsigned integer such as \"42\", or \"random\""
    static let expectedFault = "one of \(ConnectionFault.allCases.map(\.rawValue).joined(separator: ", "))"

    /// Reads `number unit` into the unit's base quantity, or throws the problem with `expected` in its message.
    static func quantity(_ text: String, units: [Unit], expected: String) throws(ProfileError.Kind) -> Double {
        var number = Substring(text)
        var negative = false
        if number.first == "-" {
            negative = true
            number = number.dropFirst()
        }
        let digits = number.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unitText = number.dropFirst(digits.count).drop { $0 == " " || $0 == "\t" }
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard !digits.isEmpty, parts.count <= 2, parts.allSatisfy({ !$0.isEmpty }) else {
            throw .invalidValue(expected: expected)
        }
        if unitText.isEmpty { throw .missingUnit(expected: expected) }
        guard let unit = units.first(where: { $0.symbol == unitText }) else {
            let number = (negative ? "-" : "") + digits
            if let suggestion = UnitSpelling.suggestion(number: number, unitText: String(unitText), units: units) {
                throw .invalidValue(expected: "\(expected); \(suggestion.hint)")
            }
            throw .invalidValue(expected: expected)
        }
        if negative { throw .negativeValue(expected: expected) }
        guard let scaled = Double("\(digits)e\(unit.decimalExponent)"), scaled.isFinite else {
            throw .outOfRange(expected: expected)
        }
        return scaled * unit.multiplier
    }

    static func duration(_ text: String) throws(ProfileError.Kind) -> Duration {
        let nanoseconds = try quantity(text, units: durationUnits, expected: expectedDuration).rounded()
        guard nanoseconds <= longestDuration else {
            throw .outOfRange(expected: ranged(expectedDuration, "0 ms to 3600 s"))
        }
        return .nanoseconds(Int64(roundingClamped: nanoseconds))
    }

    /// A bit rate, or `nil` for `unlimited`.
    static func rate(_ text: String) throws(ProfileError.Kind) -> BitRate? {
        if text.lowercased() == "unlimited" { return nil }
        let bitsPerSecond = try quantity(text, units: rateUnits, expected: expectedRate)
        if bitsPerSecond == 0 { throw .zeroValue(expected: expectedRate) }
        guard rateRange.contains(bitsPerSecond) else {
            throw .outOfRange(expected: ranged(expectedRate, "1 bit/s to 1000 Gbit/s"))
        }
        return BitRate(bitsPerSecond: bitsPerSecond)
    }

    /// A byte size greater than zero, rounded to whole bytes.
    static func size(_ text: String, expected: String = expectedSize) throws(ProfileError.Kind) -> ByteCount {
        let bytes = try quantity(text, units: sizeUnits, expected: expected).rounded()
        if bytes == 0 { throw .zeroValue(expected: expected) }
        guard bytes <= largestSize else { throw .outOfRange(expected: ranged(expected, "1 B to 1024 MiB")) }
        return ByteCount(bytes: Int(bytes))
    }

    /// A burst size, or `nil` for `auto` (the shaper chooses).
    static func burst(_ text: String) throws(ProfileError.Kind) -> ByteCount? {
        if text.lowercased() == "auto" { return nil }
        return try size(text, expected: expectedBurst)
    }

    static func percentage(_ text: String) throws(ProfileError.Kind) -> Percentage {
        let percent = try quantity(text, units: percentUnits, expected: expectedPercentage)
        guard percent <= 100 else { throw .outOfRange(expected: expectedPercentage) }
        return Percentage(percent)
    }

    /// A seed, or `nil` for `random`.
    static func seed(_ text: String) throws(ProfileError.Kind) -> UInt64? {
        if text.lowercased() == "random" { return nil }
        if text.hasPrefix("-"), UInt64(text.dropFirst()) != nil { throw .negativeValue(expected: expectedSeed) }
        guard let seed = UInt64(text) else { throw .invalidValue(expected: expectedSeed) }
        return seed
    }

    static let expectedHostPatterns =
        "a comma-separated list of host names, *.domains, IP addresses and CIDR networks such as \"10.0.0.0/8, api.internal, ::1\", or \"none\""

    /// A list of host patterns separated by commas, or the empty list for `none`.
    static func hostPatterns(_ text: String) throws(ProfileError.Kind) -> [HostPattern] {
        if text.lowercased() == "none" { return [] }
        var patterns: [HostPattern] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = String(
                item.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            guard let pattern = HostPattern(parsing: entry) else {
                throw .invalidValue(expected: "\(expectedHostPatterns) (\"\(entry)\" is none of these)")
            }
            if !patterns.contains(pattern) { patterns.append(pattern) }
        }
        return patterns
    }

    static func format(_ patterns: [HostPattern]) -> String {
        patterns.isEmpty ? "none" : patterns.map(\.description).joined(separator: ", ")
    }

    static let expectedLossModel = "one of \(LossModel.allCases.map(\.rawValue).joined(separator: ", "))"

    static func lossModel(_ text: String) throws(ProfileError.Kind) -> LossModel {
        guard let model = LossModel(rawValue: text.lowercased()) else {
            throw .invalidValue(expected: expectedLossModel)
        }
        return model
    }

    static let expectedCongestion = "one of \(CongestionAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))"

    static func congestion(_ text: String) throws(ProfileError.Kind) -> CongestionAlgorithm {
        guard let algorithm = CongestionAlgorithm(rawValue: text.lowercased()) else {
            throw .invalidValue(expected: expectedCongestion)
        }
        return algorithm
    }

    static let expectedInitialWindow =
        "a whole number of segments from 1 to \(TCPSettings.maximumInitialWindow), such as \"10\" (Linux's default)"

    static func initialWindow(_ text: String) throws(ProfileError.Kind) -> Int {
        if text.hasPrefix("-"), Int(text.dropFirst()) != nil { throw .negativeValue(expected: expectedInitialWindow) }
        guard let segments = Int(text) else { throw .invalidValue(expected: expectedInitialWindow) }
        if segments == 0 { throw .zeroValue(expected: expectedInitialWindow) }
        guard segments <= TCPSettings.maximumInitialWindow else { throw .outOfRange(expected: expectedInitialWindow) }
        return segments
    }

    static let expectedSwitch = "on or off"

    static func onOff(_ text: String) throws(ProfileError.Kind) -> Bool {
        switch text.lowercased() {
        case "on": return true
        case "off": return false
        default: throw .invalidValue(expected: expectedSwitch)
        }
    }

    static func fault(_ text: String) throws(ProfileError.Kind) -> ConnectionFault {
        guard let fault = ConnectionFault(rawValue: text.lowercased()) else {
            throw .invalidValue(expected: expectedFault)
        }
        return fault
    }

    /// A duration in the largest of s, ms, µs that shows it with at most three decimals: `1.5 s`, `100 ms`, `250 µs`.
    static func format(_ duration: Duration) -> String {
        let nanoseconds = duration.nanoseconds
        if nanoseconds == 0 { return "0 ms" }
        let magnitude = nanoseconds.magnitude
        for (symbol, scale) in [("s", UInt64(1_000_000_000)), ("ms", 1_000_000), ("µs", 1_000)] where magnitude >= scale
        {
            let step = scale / 1000
            guard magnitude % step == 0 else { continue }
            let whole = magnitude / scale
            var fraction = String(magnitude % scale / step)
            fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            let sign = nanoseconds < 0 ? "-" : ""
            return "\(sign)\(whole)\(fraction.isEmpty ? "" : "." + fraction) \(symbol)"
        }
        return "\(nanoseconds) ns"
    }

    /// A rate in the largest of Gbit/s, Mbit/s, kbit/s that is at least 1 and parses back exactly; `unlimited` for `nil`.
    static func format(_ rate: BitRate?) -> String {
        guard let bitsPerSecond = rate?.bitsPerSecond else { return "unlimited" }
        for (symbol, exponent) in [("Gbit/s", 9), ("Mbit/s", 6), ("kbit/s", 3)] {
            let scale = pow10(exponent)
            guard bitsPerSecond >= scale else { continue }
            let number = decimal(bitsPerSecond / scale)
            if Double("\(number)e\(exponent)") == bitsPerSecond { return "\(number) \(symbol)" }
        }
        return "\(decimal(bitsPerSecond)) bit/s"
    }

    /// A size in the first unit that divides it exactly: MiB, KiB, packets, MB, KB, else bytes.
    static func format(_ size: ByteCount) -> String {
        format(
            bytes: size.bytes,
            units: [("MiB", 1024 * 1024), ("KiB", 1024), ("packets", packetSize), ("MB", 1_000_000), ("KB", 1000)])
    }

    /// A queue's limit as `queue` reads it back: in packets exactly when the queue counts packets, since a size
    /// written in packets makes the bottleneck count packets.
    static func format(_ limit: QueueLimit) -> String {
        switch limit {
        case .packets(let count): "\(count) \(count == 1 ? "packet" : "packets")"
        case .bytes(let bytes):
            format(bytes: bytes, units: [("MiB", 1024 * 1024), ("KiB", 1024), ("MB", 1_000_000), ("KB", 1000)])
        }
    }

    /// `bytes` in the first of `units` that divides it exactly, else in bytes.
    private static func format(bytes: Int, units: [(symbol: String, scale: Int)]) -> String {
        for (symbol, scale) in units where bytes != 0 && bytes % scale == 0 {
            let count = bytes / scale
            return "\(count) \(symbol == "packets" && count == 1 ? "packet" : symbol)"
        }
        return "\(bytes) B"
    }

    static func format(_ burst: ByteCount?) -> String {
        burst.map { format($0) } ?? "auto"
    }

    static func format(_ percentage: Percentage) -> String {
        "\(decimal(percentage.percent)) %"
    }

    static func format(seed: UInt64?) -> String {
        seed.map { String($0) } ?? "random"
    }

    private static func pow10(_ exponent: Int) -> Double {
        (0..<exponent).reduce(1.0) { result, _ in result * 10 }
    }

    /// The shortest decimal text that reads back as `value`, without an exponent and without a trailing `.0`.
    static func decimal(_ value: Double) -> String {
        let text = "\(value)"
        let pieces = text.split(separator: "e", maxSplits: 1)
        var mantissa = String(pieces[0])
        let exponent = pieces.count == 2 ? Int(pieces[1]) ?? 0 : 0
        var sign = ""
        if mantissa.hasPrefix("-") {
            sign = "-"
            mantissa.removeFirst()
        }
        let pointIndex =
            mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        var digits = mantissa.filter { $0 != "." }
        var point = pointIndex + exponent
        if point <= 0 {
            digits = String(repeating: "0", count: 1 - point) + digits
            point = 1
        }
        if point > digits.count {
            digits += String(repeating: "0", count: point - digits.count)
        }
        var whole = String(digits.prefix(point))
        var fraction = String(digits.dropFirst(point))
        while fraction.hasSuffix("0") { fraction.removeLast() }
        while whole.count > 1 && whole.hasPrefix("0") { whole.removeFirst() }
        return sign + whole + (fraction.isEmpty ? "" : "." + fraction)
    }
}
