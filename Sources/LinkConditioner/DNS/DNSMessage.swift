import DequeModule

/// The few facts about a DNS message the forwarder needs (RFC 1035 §4.1.1): its 12-byte header and the query ID
/// in its first two bytes. The forwarder never parses names or records.
enum DNSMessage {
    /// Bytes in the fixed header; anything shorter is not DNS.
    static let headerSize = 12
    /// The largest query the forwarder relays: EDNS's usual 4096-byte payload. Real queries are far smaller.
    static let maximumQuerySize = 4096

    /// Why a message was refused.
    enum Problem: Equatable {
        case shorterThanHeader
        case oversized
    }

    /// Checks a query's size; nil when it may be relayed.
    static func problem(withQuery bytes: [UInt8]) -> Problem? {
        if bytes.count < headerSize { return .shorterThanHeader }
        if bytes.count > maximumQuerySize { return .oversized }
        return nil
    }

    /// Checks an answer from the upstream resolver; nil when it may be matched to its query. Answers may be larger
    /// than queries: up to a datagram's 65 535 bytes.
    static func problem(withAnswer bytes: [UInt8]) -> Problem? {
        bytes.count < headerSize ? .shorterThanHeader : nil
    }

    /// The query ID; `bytes` must hold at least a header.
    static func id(of bytes: [UInt8]) -> UInt16 {
        UInt16(bytes[0]) << 8 | UInt16(bytes[1])
    }

    /// `bytes` with its query ID replaced by `id`; `bytes` must hold at least a header.
    static func replacingID(of bytes: [UInt8], with id: UInt16) -> [UInt8] {
        var copy = bytes
        copy[0] = UInt8(id >> 8)
        copy[1] = UInt8(id & 0xFF)
        return copy
    }
}

/// Splits a DNS-over-TCP byte stream into messages, each preceded by its length in two bytes (RFC 1035 §4.2.2).
struct DNSFrameReader {
    enum Frame: Equatable {
        case message([UInt8])
        /// A frame that is not a DNS message (zero-length or shorter than the header); the stream stays in step.
        case malformed
        /// A length beyond `limit`: the stream cannot be trusted any more.
        case oversized
    }

    private var buffer = Deque<UInt8>()
    let limit: Int

    init(limit: Int) { self.limit = limit }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or nil until more bytes arrive.
    mutating func next() -> Frame? {
        guard buffer.count >= 2 else { return nil }
        let length = Int(buffer[buffer.startIndex]) << 8 | Int(buffer[buffer.startIndex + 1])
        if length > limit { return .oversized }
        guard buffer.count >= 2 + length else { return nil }
        buffer.removeFirst(2)
        let message = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return message.count < DNSMessage.headerSize ? .malformed : .message(message)
    }

    /// Whether bytes of an unfinished frame are waiting: at end of stream, a truncated message.
    var hasPartialFrame: Bool { !buffer.isEmpty }

    /// Bytes held until their frame completes.
    var bufferedBytes: Int { buffer.count }

    /// `message` with its two-byte length in front, for writing to a TCP stream.
    static func framed(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }
}
