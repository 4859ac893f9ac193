/// What a recording keeps of a DNS answer: the question's name and type, the response code, and the addresses
/// and aliases it answered. Parses only as far as it can; a message it cannot read gives what it read so far.
struct DNSSummary {
    var name = "?"
    var type = "?"
    var responseCode = 0
    var answers: [String] = []

    init(answer bytes: [UInt8]) {
        guard bytes.count >= 12 else { return }
        responseCode = Int(bytes[3] & 0x0F)
        let questions = Int(bytes[4]) << 8 | Int(bytes[5])
        let answerCount = Int(bytes[6]) << 8 | Int(bytes[7])
        var offset = 12
        guard questions >= 1, let (qname, afterName) = Self.name(in: bytes, at: offset), afterName + 4 <= bytes.count
        else { return }
        name = qname
        type = Self.typeName(Int(bytes[afterName]) << 8 | Int(bytes[afterName + 1]))
        offset = afterName + 4
        for _ in 1..<max(questions, 1) {
            guard let (_, next) = Self.name(in: bytes, at: offset) else { return }
            offset = next + 4
        }
        for _ in 0..<min(answerCount, 64) {
            guard let (_, afterOwner) = Self.name(in: bytes, at: offset), afterOwner + 10 <= bytes.count else { return }
            let recordType = Int(bytes[afterOwner]) << 8 | Int(bytes[afterOwner + 1])
            let length = Int(bytes[afterOwner + 8]) << 8 | Int(bytes[afterOwner + 9])
            let data = afterOwner + 10
            guard data + length <= bytes.count else { return }
            switch (recordType, length) {
            case (1, 4):
                answers.append(bytes[data..<(data + 4)].map(String.init).joined(separator: "."))
            case (28, 16):
                answers.append(
                    stride(from: data, to: data + 16, by: 2)
                        .map { String(Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]), radix: 16) }.joined(separator: ":"))
            case (5, _):
                if let (alias, _) = Self.name(in: bytes, at: data) { answers.append("CNAME " + alias) }
            default:
                break
            }
            offset = data + length
        }
    }

    /// The dotted name at `offset` (following compression pointers, at most 16) and the offset after it.
    private static func name(in bytes: [UInt8], at start: Int) -> (String, Int)? {
        var labels: [String] = []
        var offset = start
        var end: Int?
        for _ in 0..<128 {
            guard offset < bytes.count else { return nil }
            let length = Int(bytes[offset])
            if length == 0 {
                return (labels.isEmpty ? "." : labels.joined(separator: "."), end ?? offset + 1)
            }
            if length & 0xC0 == 0xC0 {
                guard offset + 1 < bytes.count else { return nil }
                if end == nil { end = offset + 2 }
                offset = (length & 0x3F) << 8 | Int(bytes[offset + 1])
                continue
            }
            guard offset + 1 + length <= bytes.count else { return nil }
            labels.append(String(decoding: bytes[(offset + 1)...(offset + length)], as: UTF8.self))
            offset += 1 + length
        }
        return nil
    }

    private static func typeName(_ type: Int) -> String {
        switch type {
        case 1: "A"
        case 28: "AAAA"
        case 5: "CNAME"
        case 15: "MX"
        case 16: "TXT"
        case 33: "SRV"
        case 65: "HTTPS"
        case 12: "PTR"
        default: "TYPE\(type)"
        }
    }
}
