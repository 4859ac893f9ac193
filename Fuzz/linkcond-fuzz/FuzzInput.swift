/// The bytes libFuzzer gives a target. Text targets read all of them; stream targets read the first byte as the
/// choices a peer or the network makes and the rest as what the peer sent.
///
/// Bits 0–5 of the first byte pick the size of the reads the stream arrives in (1 to 64 bytes: TCP may split it
/// anywhere); bit 7 asks for a proxy that requires credentials.
struct FuzzInput {
    let bytes: [UInt8]

    init(_ data: UnsafePointer<UInt8>?, _ count: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    }

    /// Every byte as text, the way a file or a request body is decoded.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    var readSize: Int { Int((bytes.first ?? 0) & 0x3F) + 1 }

    var requiresCredentials: Bool { (bytes.first ?? 0) & 0x80 != 0 }

    /// What the peer sent: every byte after the first.
    var stream: ArraySlice<UInt8> { bytes.dropFirst() }

    /// The stream cut into reads of `readSize` bytes, the last one shorter.
    var reads: [ArraySlice<UInt8>] {
        let stream = stream
        return stride(from: stream.startIndex, to: stream.endIndex, by: readSize).map {
            stream[$0..<min($0 + readSize, stream.endIndex)]
        }
    }
}
