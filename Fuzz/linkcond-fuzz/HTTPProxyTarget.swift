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

    private static func rewrite(_ input: FuzzInput, origin: HTTPOrigin) {
        let rewriter = HTTPRequestRewriter(origin: origin)
        for read in input.reads {
            let (_, ended) = rewriter.filter(Array(read))
            if ended { return }
        }
    }
}
