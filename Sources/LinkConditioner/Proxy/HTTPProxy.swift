import Foundation

/// An HTTP/1.x request head: request line and header fields, as a proxy reads them.
struct HTTPRequestHead {
    var method: String
    var target: String
    var version: String
    var fields: [(name: String, value: String)]

    /// The values of every field named `name` (case-insensitive), in order.
    func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// The comma-separated tokens of every field named `name`, lowercased.
    func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}

/// What a client's bytes so far hold: not yet a whole head, a head too large, a malformed head, or a head.
enum HTTPHeadParse {
    case needMore
    case tooLarge
    case malformed(String)
    /// A complete head of `length` bytes (through the blank line).
    case head(HTTPRequestHead, length: Int)
}

/// How a request's body is delimited (RFC 9112 section 6).
enum HTTPBodyFraming: Equatable {
    case none
    case length(Int)
    case chunked
}

/// A destination named by an HTTP proxy request: the `host:port` of a CONNECT or the authority of an `http://` URL.
struct HTTPOrigin: Equatable {
    var host: String
    var port: UInt16

    /// `host:port`, with IPv6 hosts in brackets, as a Host field writes it.
    var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    func isSame(as other: HTTPOrigin) -> Bool { host.lowercased() == other.host.lowercased() && port == other.port }
}

/// What a proxy does with a request.
enum HTTPProxyIntent {
    /// `CONNECT host:port`: open a tunnel.
    case tunnel(HTTPOrigin)
    /// `METHOD http://host:port/path`: forward it, rewritten to origin-form.
    case forward(HTTPOrigin)
    /// Answer with this status and close.
    case reject(HTTPStatus)
}

/// A status linkcond answers itself, with a short explanation for the body.
struct HTTPStatus: Equatable {
    var code: Int
    var reason: String
    var explanation: String
    var extraFields: [String] = []

    static func badRequest(_ why: String) -> HTTPStatus { HTTPStatus(code: 400, reason: "Bad Request", explanation: why) }
    static let proxyAuthenticationRequired = HTTPStatus(
        code: 407, reason: "Proxy Authentication Required", explanation: "this linkcond proxy needs a user name and password (--proxy-user)",
        extraFields: ["Proxy-Authenticate: Basic realm=\"linkcond\""])
    static let timeout = HTTPStatus(code: 408, reason: "Request Timeout", explanation: "the request head did not arrive in time")
    static let headersTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large", explanation: "the request head exceeds the proxy's limit")
}

/// HTTP proxying (RFC 9110 and 9112) as bytes in and bytes out: parsing heads, deciding what a request asks for,
/// rewriting absolute-form requests, and the proxy's own answers.
enum HTTPProxy {
    /// The largest request head accepted, request line and fields together.
    static let headLimit = 32 * 1024

    /// Methods forwarded in absolute form; TRACE is refused (405), anything else is not implemented (501).
    static let forwardedMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"]

    /// Fields that describe one connection and must not be forwarded (RFC 9110 section 7.6.1), plus the proxy's own.
    static let hopByHopFields: Set<String> = [
        "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer", "upgrade",
    ]

    /// Fields that delimit or route a request: a Connection field naming one of them would make the proxy drop it
    /// and the origin read the body as another request (request smuggling), so such a request is refused.
    static let framingFields: Set<String> = ["content-length", "transfer-encoding", "host"]

    private static let headEnd: [UInt8] = Array("\r\n\r\n".utf8)

    /// Parses the head at the start of `bytes`, if it is complete and within `headLimit`.
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> HTTPHeadParse {
        if let bareLineFeed = firstBareLineFeed(in: bytes), bareLineFeed < (firstHeadEnd(in: bytes, from: bytes.startIndex) ?? bytes.endIndex) {
            return .malformed("request lines must end with CRLF (\\r\\n), not a bare LF")
        }
        guard let end = firstHeadEnd(in: bytes, from: bytes.startIndex) else {
            return bytes.count > headLimit ? .tooLarge : .needMore
        }
        let length = end + headEnd.count - bytes.startIndex
        guard length <= headLimit else { return .tooLarge }
        guard let text = String(validating: bytes[bytes.startIndex..<end], as: UTF8.self) else {
            return .malformed("the request head is not UTF-8 text")
        }
        let lines = text.components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, !requestLine[1].isEmpty,
              requestLine[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-" || $0 == "_") }) else {
            return .malformed("expected a request line such as \"GET http://example.com/ HTTP/1.1\"")
        }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line.hasPrefix(" "), !line.hasPrefix("\t"),
                  line[..<colon].allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                return .malformed("malformed header field \"\(line.prefix(60))\"")
            }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let head = HTTPRequestHead(method: String(requestLine[0]), target: String(requestLine[1]),
                                   version: String(requestLine[2]), fields: fields)
        return .head(head, length: length)
    }

    /// The index of the first LF not preceded by CR, which RFC 9112 lets a server refuse; linkcond does, at once,
    /// rather than wait for a CRLF that never comes.
    static func firstBareLineFeed(in bytes: ArraySlice<UInt8>) -> Int? {
        bytes.indices.first { bytes[$0] == 10 && ($0 == bytes.startIndex || bytes[$0 - 1] != 13) }
    }

    /// The index of the first `\r\n\r\n` at or after `start`.
    static func firstHeadEnd(in bytes: ArraySlice<UInt8>, from start: Int) -> Int? {
        var index = max(start, bytes.startIndex)
        while index + 3 < bytes.endIndex {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// Decides what `head` asks the proxy for, checking version, credentials, method and target.
    static func intent(of head: HTTPRequestHead, credentials: ProxyCredentials?) -> HTTPProxyIntent {
        guard head.version == "HTTP/1.1" || head.version == "HTTP/1.0" else {
            if head.version.hasPrefix("HTTP/") {
                return .reject(HTTPStatus(code: 505, reason: "HTTP Version Not Supported", explanation: "linkcond proxies HTTP/1.0 and HTTP/1.1"))
            }
            return .reject(.badRequest("unknown protocol version \"\(head.version.prefix(20))\""))
        }
        if let credentials, !authorized(head, credentials) { return .reject(.proxyAuthenticationRequired) }
        if head.method == "CONNECT" {
            guard let origin = origin(authority: head.target, defaultPort: nil) else {
                return .reject(.badRequest("CONNECT needs HOST:PORT, such as \"CONNECT example.com:443\""))
            }
            return .tunnel(origin)
        }
        let target = head.target.lowercased()
        if !target.hasPrefix("http://") {
            if target.contains("://") {
                return .reject(HTTPStatus(code: 501, reason: "Not Implemented",
                                          explanation: "linkcond forwards http:// URLs; use CONNECT for https:// and anything else"))
            }
            return .reject(.badRequest("this is a proxy: send an absolute URL (GET http://host/path) or CONNECT host:port"))
        }
        if head.method == "TRACE" {
            return .reject(HTTPStatus(code: 405, reason: "Method Not Allowed", explanation: "linkcond does not forward TRACE",
                                      extraFields: ["Allow: " + forwardedMethods.sorted().joined(separator: ", ") + ", CONNECT"]))
        }
        guard forwardedMethods.contains(head.method) else {
            return .reject(HTTPStatus(code: 501, reason: "Not Implemented", explanation: "linkcond does not forward \(head.method.prefix(20)) requests"))
        }
        guard let (origin, _) = absoluteTarget(head.target) else { return .reject(.badRequest("malformed URL \"\(head.target.prefix(80))\"")) }
        if case .failure(let why) = framing(of: head) { return .reject(.badRequest(why.description)) }
        let protected = Set(head.tokens("Connection") + head.tokens("Proxy-Connection")).intersection(framingFields)
        if let field = protected.sorted().first {
            return .reject(.badRequest("Connection names \(field), which delimits the request; it cannot be dropped"))
        }
        return .forward(origin)
    }

    /// Splits `http://authority/path?query` into its origin and its origin-form target (`/path?query`).
    static func absoluteTarget(_ target: String) -> (HTTPOrigin, String)? {
        let rest = target.dropFirst("http://".count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let origin = origin(authority: String(rest[..<authorityEnd]), defaultPort: 80) else { return nil }
        var path = String(rest[authorityEnd...].prefix { $0 != "#" })
        if !path.hasPrefix("/") { path = "/" + path }
        return (origin, path)
    }

    /// Reads `host[:port]` or `[v6][:port]`; nil for user info, an empty host or a bad port.
    static func origin(authority: String, defaultPort: UInt16?) -> HTTPOrigin? {
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains(where: { $0.isWhitespace }) else { return nil }
        if let endpoint = Endpoint(parsing: authority), !authority.hasPrefix(":") {
            return endpoint.host.isEmpty ? nil : HTTPOrigin(host: endpoint.host, port: endpoint.port)
        }
        guard let port = defaultPort, !authority.contains(":") || (authority.hasPrefix("[") && authority.hasSuffix("]")) else { return nil }
        let host = authority.hasPrefix("[") ? String(authority.dropFirst().dropLast()) : authority
        return host.isEmpty ? nil : HTTPOrigin(host: host, port: port)
    }

    /// How the request's body is delimited; both Transfer-Encoding and Content-Length, or a bad value, is an error.
    static func framing(of head: HTTPRequestHead) -> Result<HTTPBodyFraming, FramingError> {
        let codings = head.tokens("Transfer-Encoding")
        let lengths = head.values("Content-Length").flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        if !codings.isEmpty {
            guard lengths.isEmpty else { return .failure(FramingError("both Transfer-Encoding and Content-Length")) }
            guard codings.last == "chunked" else { return .failure(FramingError("a request body must end with chunked transfer coding")) }
            return .success(.chunked)
        }
        guard let first = lengths.first else { return .success(.none) }
        guard lengths.allSatisfy({ $0 == first }), first.allSatisfy(\.isASCII), let length = Int(first), length >= 0 else {
            return .failure(FramingError("invalid Content-Length"))
        }
        return .success(length == 0 ? .none : .length(length))
    }

    struct FramingError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private static func authorized(_ head: HTTPRequestHead, _ credentials: ProxyCredentials) -> Bool {
        for value in head.values("Proxy-Authorization") {
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "basic",
                  let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                  let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { continue }
            if credentials.accepts(user: Array(decoded[..<colon]), password: Array(decoded[(colon + 1)...])) { return true }
        }
        return false
    }

    /// The head to send the origin: origin-form target, Host set to the URL's authority, hop-by-hop fields removed.
    static func rewritten(_ head: HTTPRequestHead, origin: HTTPOrigin, path: String) -> [UInt8] {
        let connectionTokens = Set(head.tokens("Connection") + head.tokens("Proxy-Connection"))
        var lines = ["\(head.method) \(path) \(head.version)", "Host: " + (origin.port == 80 ? hostText(origin) : origin.authority)]
        for (name, value) in head.fields {
            let lowered = name.lowercased()
            if lowered == "host" || hopByHopFields.contains(lowered) || connectionTokens.contains(lowered) { continue }
            lines.append("\(name): \(value)")
        }
        if connectionTokens.contains("close") {
            lines.append("Connection: close")
        } else if head.version == "HTTP/1.0" && connectionTokens.contains("keep-alive") {
            lines.append("Connection: keep-alive")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    private static func hostText(_ origin: HTTPOrigin) -> String { origin.host.contains(":") ? "[\(origin.host)]" : origin.host }

    /// A complete response linkcond sends itself, closing the connection after it.
    static func response(_ status: HTTPStatus) -> [UInt8] {
        let body = "linkcond: \(status.explanation)\n"
        var lines = ["HTTP/1.1 \(status.code) \(status.reason)"] + status.extraFields
        lines += ["Content-Type: text/plain; charset=utf-8", "Content-Length: \(body.utf8.count)", "Connection: close", "", body]
        return Array(lines.joined(separator: "\r\n").utf8)
    }

    static let connectionEstablished: [UInt8] = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// The status for an upstream that could not be reached: 504 for a timeout, 502 otherwise.
    static func status(connectError error: Errno, origin: String) -> HTTPStatus {
        if error == .timedOut {
            return HTTPStatus(code: 504, reason: "Gateway Timeout", explanation: "connecting to \(origin) timed out")
        }
        return HTTPStatus(code: 502, reason: "Bad Gateway", explanation: "cannot connect to \(origin): \(error)")
    }
}

/// Rewrites each request a client sends on a forwarding connection to origin-form, passing bodies through unchanged;
/// ends the stream at a request for another origin, a CONNECT, or a malformed request. Lives on the event loop thread.
final class HTTPRequestRewriter: StreamFilter {
    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd(remaining: Int)
        case trailer
        case stopped
    }

    let origin: HTTPOrigin
    private var state = State.head
    private var pending: [UInt8] = []
    private static let lineLimit = 8 * 1024

    init(origin: HTTPOrigin) { self.origin = origin }

    /// Whether the last request ended the stream (another origin, CONNECT, or a malformed request).
    var hasStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    func filter(_ input: [UInt8]) -> (bytes: [UInt8], ended: Bool) {
        var bytes = input
        var index = 0
        var output: [UInt8] = []
        while index < bytes.count {
            switch state {
            case .stopped:
                return (output, true)
            case .head:
                let searchFrom = max(0, pending.count - 3)
                pending.append(contentsOf: bytes[index...])
                index = bytes.count
                guard let end = HTTPProxy.firstHeadEnd(in: pending[...], from: searchFrom) else {
                    if pending.count > HTTPProxy.headLimit || HTTPProxy.firstBareLineFeed(in: pending[...]) != nil { stop() }
                    continue
                }
                let rest = Array(pending[(end + 4)...])
                guard case .head(let head, _) = HTTPProxy.parseHead(pending[..<(end + 4)]) else {
                    stop()
                    continue
                }
                pending = []
                guard case .forward(let requested) = HTTPProxy.intent(of: head, credentials: nil), requested.isSame(as: origin),
                      let (_, path) = HTTPProxy.absoluteTarget(head.target),
                      case .success(let framing) = HTTPProxy.framing(of: head) else {
                    stop()
                    continue
                }
                output += HTTPProxy.rewritten(head, origin: origin, path: path)
                switch framing {
                case .none: state = .head
                case .length(let length): state = .fixed(remaining: length)
                case .chunked: state = .chunkSize
                }
                bytes = rest
                index = 0
            case .fixed(let remaining), .chunkData(let remaining), .chunkDataEnd(let remaining):
                let taken = min(remaining, bytes.count - index)
                output += bytes[index..<(index + taken)]
                index += taken
                let left = remaining - taken
                switch state {
                case .fixed: state = left == 0 ? .head : .fixed(remaining: left)
                case .chunkData: state = left == 0 ? .chunkDataEnd(remaining: 2) : .chunkData(remaining: left)
                default: state = left == 0 ? .chunkSize : .chunkDataEnd(remaining: left)
                }
            case .chunkSize, .trailer:
                let byte = bytes[index]
                index += 1
                output.append(byte)
                pending.append(byte)
                if pending.count > Self.lineLimit { stop(); continue }
                guard byte == 10 else { continue }
                let line = String(decoding: pending, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                pending = []
                if case .trailer = state {
                    if line.isEmpty { state = .head }
                    continue
                }
                guard let size = Int(line.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    stop()
                    continue
                }
                state = size == 0 ? .trailer : .chunkData(remaining: size)
            }
        }
        return (output, hasStopped)
    }

    private func stop() {
        state = .stopped
        pending = []
    }
}
