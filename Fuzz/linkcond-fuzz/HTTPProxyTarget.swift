@testable import LinkConditioner

/// An HTTP proxy client's request, arriving in reads of any size: `HTTPProxy.parseHead` and `HTTPProxy.intent` as
/// `ProxyClientSession` calls them, then, for a request to forward, `HTTPRequestRewriter` over the whole stream as
/// the relay's uplink runs it (pipelined requests, bodies and chunked coding included).
enum HTTPProxyTarget {
    static func run(_ input: FuzzInput) {
        let credentials = input.requiresCredentials ? SOCKS5Target.credentials : nil
        var received: [UInt8] = []
        for read in input.reads {
            received += read
            switch HTTPProxy.parseHead(received[...]) {
            case .needMore:
                continue
            case .tooLarge:
                _ = HTTPProxy.response(.headersTooLarge)
                return
            case .malformed(let why):
                _ = HTTPProxy.response(.badRequest(why))
                return
            case .head(let head, let length):
                precondition(length > 0 && length <= received.count, "a head of \(length) bytes in \(received.count)")
                switch HTTPProxy.intent(of: head, credentials: credentials) {
                case .reject(let status):
                    _ = HTTPProxy.response(status)
                case .tunnel(let origin):
                    _ = origin.authority
                case .forward(let origin):
                    rewrite(input, origin: origin)
                }
                return
            }
        }
    }

    /// Runs the rewriter as the session and the relay do, checking that a malformed framing stops the stream and
    /// is blamed on the first request only while none went through whole; then the chunk-line parsers on every
    /// line of the input.
    private static func rewrite(_ input: FuzzInput, origin: HTTPOrigin) {
        let rewriter = HTTPRequestRewriter(origin: origin)
        for read in input.reads {
            let (_, ended) = rewriter.filter(Array(read))
            precondition(
                ended == rewriter.hasStopped, "the rewriter said ended \(ended) but stopped \(rewriter.hasStopped)")
            precondition(rewriter.malformation == nil || ended, "a malformed framing did not end the stream")
            if ended { break }
        }
        precondition(rewriter.firstRequestMalformation == nil || rewriter.requestsForwarded == 0)
        let stream = input.stream
        var lineStart = stream.startIndex
        for index in stream.indices where stream[index] == 10 {
            let line = stream[lineStart...index]
            lineStart = index + 1
            checkChunkLine(line)
        }
    }

    /// A chunk-size line accepted has a CRLF, no other CR or LF, and a size that its leading hex digits spell.
    private static func checkChunkLine(_ line: ArraySlice<UInt8>) {
        _ = HTTPRequestRewriter.trailerLine(line)
        guard let size = HTTPRequestRewriter.chunkSize(line) else { return }
        let content = line.dropLast(2)
        precondition(
            line.suffix(2).elementsEqual([13, 10]) && !content.contains(13) && !content.contains(10),
            "accepted \(Array(line))")
        let digits = content.prefix { $0 != UInt8(ascii: ";") && $0 != 32 && $0 != 9 }
        precondition(
            Int(String(decoding: digits, as: UTF8.self), radix: 16) == size && size >= 0,
            "size \(size) for \(Array(line))")
        precondition(
            !digits.contains(UInt8(ascii: "+")) && !digits.contains(UInt8(ascii: "-")), "a signed size accepted")
    }
}
