@testable import LinkConditioner

/// A DNS-over-TCP stream, arriving in reads of any size: `DNSFrameReader` with the limits `DNSTCPConnection` gives
/// a client's queries (bit 7 clear) or the upstream's answers (bit 7 set).
enum DNSFramingTarget {
    static func run(_ input: FuzzInput) {
        let limit = input.requiresCredentials ? Int(UInt16.max) : DNSMessage.maximumQuerySize
        var reader = DNSFrameReader(limit: limit)
        var framedBytes = 0
        for read in input.reads {
            Array(read).withUnsafeBytes { reader.append($0) }
            while let frame = reader.next() {
                switch frame {
                case .message(let message):
                    precondition(
                        message.count >= DNSMessage.headerSize && message.count <= limit,
                        "a frame of \(message.count) bytes")
                    framedBytes += 2 + message.count
                    precondition(
                        DNSFrameReader.framed(message).count == 2 + message.count,
                        "framing a message changed its length")
                case .malformed:
                    continue
                case .oversized:
                    return
                }
            }
        }
        precondition(framedBytes <= input.stream.count, "the frames hold more bytes than the stream")
        _ = reader.hasPartialFrame
    }
}
