/// A link's capacity over time in mahimahi's format: one delivery opportunity per line, the millisecond at which
/// one 1500-byte packet may leave; repeated lines give several packets in one millisecond. The trace lasts until
/// its last timestamp and then repeats.
///
/// Parsing follows mahimahi's `LinkQueue`: an integer per line, never decreasing, no empty lines, at least one
/// line, and a last timestamp above zero. Users' mahimahi traces are accepted unchanged.
public struct DeliveryTrace: Hashable, Sendable {
    /// Bytes one delivery opportunity carries (mahimahi's `PACKET_SIZE`).
    public static let opportunityBytes = 1500
    /// The most opportunities a trace may hold (64 MiB of timestamps), so a wrong file cannot exhaust memory.
    public static let maximumOpportunities = 16 * 1024 * 1024
    /// The latest timestamp a trace may hold: 49 days, in milliseconds.
    public static let maximumTimestamp = Int64(UInt32.max)

    /// The trace as the profile names it: a built-in trace's name or a file path.
    public var name: String
    /// Opportunity times in milliseconds since the trace's start, never decreasing.
    public let milliseconds: [UInt32]

    /// The trace's period: its last timestamp, in milliseconds.
    public var periodMilliseconds: Int64 { Int64(milliseconds.last ?? 0) }

    /// The average rate the trace offers over one period, in bits per second of payload.
    public var averageRate: BitRate {
        BitRate(
            bitsPerSecond: Double(milliseconds.count * Self.opportunityBytes * 8) / (Double(periodMilliseconds) / 1000))
    }

    /// A trace of opportunity times already validated (by `parsing` or by a model).
    init(name: String, validated milliseconds: [UInt32]) {
        self.name = name
        self.milliseconds = milliseconds
    }

    /// Parses mahimahi's format.
    ///
    /// - Parameters:
    ///   - text: The file's bytes.
    ///   - name: The name the profile gave; also the file in error messages.
    /// - Throws: `TraceError` naming the file, the line and what was expected.
    public init(parsing text: [UInt8], name: String) throws(TraceError) {
        var times: [UInt32] = []
        var lineNumber = 0
        var start = 0
        while start < text.count {
            lineNumber += 1
            var end = start
            while end < text.count && text[end] != UInt8(ascii: "\n") { end += 1 }
            let line = text[start..<end]
            start = end + 1
            guard times.count < Self.maximumOpportunities else {
                throw TraceError(file: name, line: lineNumber, problem: .tooLong)
            }
            let value = try Self.timestamp(line, file: name, line: lineNumber)
            if let previous = times.last, value < previous {
                throw TraceError(
                    file: name, line: lineNumber, problem: .decreasing(previous: Int64(previous), value: Int64(value)))
            }
            times.append(value)
        }
        guard let last = times.last else { throw TraceError(file: name, line: nil, problem: .empty) }
        guard last > 0 else { throw TraceError(file: name, line: lineNumber, problem: .zeroLength) }
        self.init(name: name, validated: times)
    }

    /// One line's timestamp: decimal digits, optionally surrounded by spaces or a carriage return.
    private static func timestamp(_ line: ArraySlice<UInt8>, file: String, line number: Int) throws(TraceError)
        -> UInt32
    {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        let digits = line.drop(while: blank.contains).reversed().drop(while: blank.contains).reversed()
        guard !digits.isEmpty else { throw TraceError(file: file, line: number, problem: .emptyLine) }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                throw TraceError(
                    file: file, line: number, problem: .notAnInteger(String(decoding: line.prefix(32), as: UTF8.self)))
            }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            guard value <= maximumTimestamp else { throw TraceError(file: file, line: number, problem: .tooLate) }
        }
        return UInt32(value)
    }
}

/// A trace file that is not a valid mahimahi trace, located by file and line.
public struct TraceError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Problem: Hashable, Sendable {
        case empty
        case emptyLine
        /// The line's text (at most its first 32 bytes) is not a whole number.
        case notAnInteger(String)
        case decreasing(previous: Int64, value: Int64)
        case zeroLength
        case tooLong
        case tooLate
        case unreadable(reason: String)
        case unknownBuiltIn(known: [String])
    }

    public var file: String
    public var line: Int?
    public var problem: Problem

    public var description: String {
        let location = line.map { "\(file):\($0):" } ?? "\(file):"
        return "\(location) \(explanation)"
    }

    /// What was wrong and what was expected, without the location.
    public var explanation: String {
        switch problem {
        case .empty:
            "the trace is empty: expected one millisecond timestamp per line (mahimahi's format)"
        case .emptyLine:
            "empty line: expected a millisecond timestamp (mahimahi's format has no empty lines)"
        case .notAnInteger(let text):
            "\"\(text)\" is not a timestamp: expected a whole number of milliseconds"
        case .decreasing(let previous, let value):
            "\(value) comes after \(previous): timestamps must never decrease"
        case .zeroLength:
            "the trace lasts 0 ms: its last timestamp must be above 0"
        case .tooLong:
            "the trace has more than \(DeliveryTrace.maximumOpportunities) lines"
        case .tooLate:
            "timestamp beyond \(DeliveryTrace.maximumTimestamp) ms (49 days)"
        case .unreadable(let reason):
            "cannot read the trace: \(reason)"
        case .unknownBuiltIn(let known):
            "no built-in trace has this name: expected one of \(known.joined(separator: ", ")) or a file path (containing /)"
        }
    }
}
