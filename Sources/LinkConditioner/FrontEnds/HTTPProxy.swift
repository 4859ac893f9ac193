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

    static func badRequest(_ why: String) -> HTTPStatus {
        HTTPStatus(code: 400, reason: "Bad Request", explanation: why)
    }
    static let proxyAuthenticationRequired = HTTPStatus(
        code: 407, reason: "Proxy Authentication Required",
        explanation: "this linkcond proxy needs a user name and password (--proxy-user)",
        extraFields: ["Proxy-Authenticate: Basic realm=\"linkcond\""])
    static let timeout = HTTPStatus(
        code: 408, reason: "Request Timeout", explanation: "the request head did not arrive in time")
    static let headersTooLarge = HTTPStatus(
        code: 431, reason: "Request Header Fields Too Large", explanation: "the request head exceeds the proxy's limit")
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
        "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
        "upgrade",
    ]

    /// Fields that delimit or route a request: a Connection field naming one of them would make the proxy drop it
    /// and the origin read the body as another request (request smuggling), so such a request is refused.
    static let framingFields: Set<String> = ["content-length", "transfer-encoding", "host"]

    private static let headEnd: [UInt8] = Array("\r\n\r\n".utf8)

    /// Parses the head at the start of `bytes`, if it is complete and within `headLimit`.
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> HTTPHeadParse {
        if let bareLineFeed = firstBareLineFeed(in: bytes),
            bareLineFeed < (firstHeadEnd(in: bytes, from: bytes.startIndex) ?? bytes.endIndex)
        {
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
            requestLine[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-" || $0 == "_") }),
            requestLine.allSatisfy({ $0.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F } })
        else {
            return .malformed(
                "expected a request line such as \"GET http://example.com/ HTTP/1.1\", without control characters")
        }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let field = field(line[...]) else {
                return .malformed(
                    "malformed header field \"\(escaped(line.prefix(60)))\": expected NAME: VALUE, the name a token and neither holding control characters"
                )
            }
            fields.append(field)
        }
        let head = HTTPRequestHead(
            method: String(requestLine[0]), target: String(requestLine[1]),
            version: String(requestLine[2]), fields: fields)
        return .head(head, length: length)
    }

    /// A field line's name and value (trimmed), nil unless it is `token ":" value` (RFC 9110 section 5) with no
    /// control character but HTAB in the value: a name with a control character or a value with a lone CR or a NUL
    /// could be read differently by the origin (request smuggling).
    static func field(_ line: Substring) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
            line[..<colon].utf8.allSatisfy(isTokenByte),
            line[line.index(after: colon)...].utf8.allSatisfy(isFieldValueByte)
        else {
            return nil
        }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }

    /// Whether `byte` may appear in a token (RFC 9110 section 5.6.2's tchar): a letter, a digit or one of !#$%&'*+-.^_`|~.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default: tokenPunctuation.contains(byte)
        }
    }

    private static let tokenPunctuation = Set("!#$%&'*+-.^_`|~".utf8)

    /// Whether `byte` may appear in a field value: visible characters, space, HTAB, and obs-text (0x80 and up).
    static func isFieldValueByte(_ byte: UInt8) -> Bool { byte == 9 || (byte >= 0x20 && byte != 0x7F) }

    /// `text` with control characters written as escapes, for an explanation sent back or logged.
    static func escaped(_ text: Substring) -> String {
        String(
            text.unicodeScalars.flatMap {
                $0.value < 0x20 || $0.value == 0x7F ? Array($0.escaped(asASCII: true).unicodeScalars) : [$0]
            }
            .map(Character.init))
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
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                return index
            }
            index += 1
        }
        return nil
    }

    /// Decides what `head` asks the proxy for, checking version, credentials, method and target.
    static func intent(of head: HTTPRequestHead, credentials: ProxyCredentials?) -> HTTPProxyIntent {
        guard head.version == "HTTP/1.1" || head.version == "HTTP/1.0" else {
            if head.version.hasPrefix("HTTP/") {
                return .reject(
                    HTTPStatus(
                        code: 505, reason: "HTTP Version Not Supported",
                        explanation: "linkcond proxies HTTP/1.0 and HTTP/1.1"))
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
                return .reject(
                    HTTPStatus(
                        code: 501, reason: "Not Implemented",
                        explanation: "linkcond forwards http:// URLs; use CONNECT for https:// and anything else"))
            }
            return .reject(
                .badRequest("this is a proxy: send an absolute URL (GET http://host/path) or CONNECT host:port"))
        }
        if head.method == "TRACE" {
            return .reject(
                HTTPStatus(
                    code: 405, reason: "Method Not Allowed", explanation: "linkcond does not forward TRACE",
                    extraFields: ["Allow: " + forwardedMethods.sorted().joined(separator: ", ") + ", CONNECT"]))
        }
        guard forwardedMethods.contains(head.method) else {
            return .reject(
                HTTPStatus(
                    code: 501, reason: "Not Implemented",
                    explanation: "linkcond does not forward \(head.method.prefix(20)) requests"))
        }
        guard let (origin, _) = absoluteTarget(head.target) else {
            return .reject(.badRequest("malformed URL \"\(head.target.prefix(80))\""))
        }
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
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains(where: { $0.isWhitespace }) else {
            return nil
        }
        if let endpoint = Endpoint(parsing: authority), !authority.hasPrefix(":") {
            return endpoint.host.isEmpty ? nil : HTTPOrigin(host: endpoint.host, port: endpoint.port)
        }
        guard let port = defaultPort, !authority.contains(":") || (authority.hasPrefix("[") && authority.hasSuffix("]"))
        else { return nil }
        let host = authority.hasPrefix("[") ? String(authority.dropFirst().dropLast()) : authority
        return host.isEmpty ? nil : HTTPOrigin(host: host, port: port)
    }

    /// How the request's body is delimited; both Transfer-Encoding and Content-Length, or a bad value, is an error.
    static func framing(of head: HTTPRequestHead) -> Result<HTTPBodyFraming, FramingError> {
        let codings = head.tokens("Transfer-Encoding")
        let lengths = head.values("Content-Length").flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if !codings.isEmpty {
            guard lengths.isEmpty else { return .failure(FramingError("both Transfer-Encoding and Content-Length")) }
            guard codings.last == "chunked" else {
                return .failure(FramingError("a request body must end with chunked transfer coding"))
            }
            return .success(.chunked)
        }
        guard let first = lengths.first else { return .success(.none) }
        // Digits only (RFC 9110 section 8.6): Int would also read "+4" and "-0", which an origin may not.
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let length = Int(first)
        else {
            return .failure(
                FramingError("invalid Content-Length \"\(escaped(first.prefix(40)))\": expected decimal digits only"))
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
                let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
            else { continue }
            if credentials.accepts(user: Array(decoded[..<colon]), password: Array(decoded[(colon + 1)...])) {
                return true
            }
        }
        return false
    }

    /// The head to send the origin: origin-form target, Host set to the URL's authority, hop-by-hop fields removed.
    static func rewritten(_ head: HTTPRequestHead, origin: HTTPOrigin, path: String) -> [UInt8] {
        let connectionTokens = Set(head.tokens("Connection") + head.tokens("Proxy-Connection"))
        var lines = [
            "\(head.method) \(path) \(head.version)",
            "Host: " + (origin.port == 80 ? hostText(origin) : origin.authority),
        ]
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

    private static func hostText(_ origin: HTTPOrigin) -> String {
        origin.host.contains(":") ? "[\(origin.host)]" : origin.host
    }

    /// A complete response linkcond sends itself, closing the connection after it.
    static func response(_ status: HTTPStatus) -> [UInt8] {
        let body = "linkcond: \(status.explanation)\n"
        var lines = ["HTTP/1.1 \(status.code) \(status.reason)"] + status.extraFields
        lines += [
            "Content-Type: text/plain; charset=utf-8", "Content-Length: \(body.utf8.count)", "Connection: close", "",
            body,
        ]
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
/// ends the stream at a request for another origin, a CONNECT, or a malformed request or body framing. A chunk-size
/// or trailer line is forwarded only once it is whole and valid (RFC 9112 section 7.1: hex digits, extensions,
/// CRLF), and chunk data must be followed by CRLF, so the origin never reads a body's end elsewhere than linkcond
/// did. Lives on the event loop thread.
final class HTTPRequestRewriter: StreamFilter {
    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data: `awaiting` is the byte expected next.
        case chunkDataEnd(awaiting: UInt8)
        case trailer
        case stopped
    }

    let origin: HTTPOrigin
    private var state = State.head
    private var pending: [UInt8] = []
    /// Requests forwarded whole (head and body) so far.
    private(set) var requestsForwarded = 0
    /// Why the stream was stopped at malformed framing; nil while it runs or when it stopped for another reason.
    private(set) var malformation: String?
    private static let lineLimit = 8 * 1024

    init(origin: HTTPOrigin) { self.origin = origin }

    /// Whether the last request ended the stream (another origin, CONNECT, or a malformed request).
    var hasStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// Why the first request must be refused (400) rather than forwarded: its head or body framing is malformed.
    var firstRequestMalformation: String? { requestsForwarded == 0 ? malformation : nil }

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
                    if pending.count > HTTPProxy.headLimit || HTTPProxy.firstBareLineFeed(in: pending[...]) != nil {
                        stop(malformed: "a request head too large or with a bare LF")
                    }
                    continue
                }
                let rest = Array(pending[(end + 4)...])
                guard case .head(let head, _) = HTTPProxy.parseHead(pending[..<(end + 4)]) else {
                    stop(malformed: "a malformed request head")
                    continue
                }
                pending = []
                guard case .forward(let requested) = HTTPProxy.intent(of: head, credentials: nil),
                    requested.isSame(as: origin),
                    let (_, path) = HTTPProxy.absoluteTarget(head.target),
                    case .success(let framing) = HTTPProxy.framing(of: head)
                else {
                    stop()
                    continue
                }
                output += HTTPProxy.rewritten(head, origin: origin, path: path)
                switch framing {
                case .none: requestEnded()
                case .length(let length): state = .fixed(remaining: length)
                case .chunked: state = .chunkSize
                }
                bytes = rest
                index = 0
            case .fixed(let remaining), .chunkData(let remaining):
                let taken = min(remaining, bytes.count - index)
                output += bytes[index..<(index + taken)]
                index += taken
                let left = remaining - taken
                if case .fixed = state {
                    if left == 0 { requestEnded() } else { state = .fixed(remaining: left) }
                } else {
                    state = left == 0 ? .chunkDataEnd(awaiting: 13) : .chunkData(remaining: left)
                }
            case .chunkDataEnd(let awaiting):
                guard bytes[index] == awaiting else {
                    stop(malformed: "chunk data not followed by CRLF")
                    continue
                }
                output.append(awaiting)
                index += 1
                state = awaiting == 13 ? .chunkDataEnd(awaiting: 10) : .chunkSize
            case .chunkSize, .trailer:
                let byte = bytes[index]
                index += 1
                pending.append(byte)
                if pending.count > Self.lineLimit {
                    stop(malformed: "a chunk line longer than \(Self.lineLimit) bytes")
                    continue
                }
                guard byte == 10 else { continue }
                let line = pending
                pending = []
                if case .trailer = state {
                    guard let isLast = Self.trailerLine(line[...]) else {
                        stop(malformed: "a malformed trailer field")
                        continue
                    }
                    output += line
                    if isLast { requestEnded() }
                    continue
                }
                guard let size = Self.chunkSize(line[...]) else {
                    stop(
                        malformed:
                            "a malformed chunk size line \"\(HTTPProxy.escaped(String(decoding: line.prefix(40), as: UTF8.self)[...]))\": expected hex digits and CRLF"
                    )
                    continue
                }
                output += line
                state = size == 0 ? .trailer : .chunkData(remaining: size)
            }
        }
        return (output, hasStopped)
    }

    /// The size a chunk-size line announces (RFC 9112 section 7.1: `1*HEXDIG [ BWS ";" extensions ] CRLF`), nil
    /// when the line is malformed: a sign, no digit, a size too large, a bare LF, or a control character.
    static func chunkSize(_ line: ArraySlice<UInt8>) -> Int? {
        guard line.count >= 3, line[line.endIndex - 2] == 13, line[line.endIndex - 1] == 10 else { return nil }
        let content = line.dropLast(2)
        let digits = content.prefix { isHexDigit($0) }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        let extensions = content.dropFirst(digits.count).drop { $0 == 32 || $0 == 9 }
        guard extensions.isEmpty ? digits.count == content.count : extensions.first == UInt8(ascii: ";"),
            extensions.allSatisfy(HTTPProxy.isFieldValueByte)
        else { return nil }
        return Int(String(decoding: digits, as: UTF8.self), radix: 16)
    }

    /// Whether a trailer line (through its LF) ends the message (the empty line), nil when it is malformed.
    static func trailerLine(_ line: ArraySlice<UInt8>) -> Bool? {
        guard line.count >= 2, line[line.endIndex - 2] == 13 else { return nil }
        if line.count == 2 { return true }
        guard let text = String(validating: line.dropLast(2), as: UTF8.self), HTTPProxy.field(text[...]) != nil else {
            return nil
        }
        return false
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }

    private func requestEnded() {
        requestsForwarded += 1
        state = .head
    }

    /// Ends the stream; `malformed` says why when the client's framing was at fault.
    private func stop(malformed: String? = nil) {
        state = .stopped
        pending = []
        malformation = malformed
    }
}
