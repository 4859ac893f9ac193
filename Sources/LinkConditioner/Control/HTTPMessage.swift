import Foundation

/// An HTTP/1.1 request as the control endpoint reads it: request line, headers, and a Content-Length body.
///
/// The parser is strict on purpose (RFC 9112): lines end in CRLF, a field name has no whitespace before its colon,
/// folded lines, repeated framing or Host fields and Transfer-Encoding are refused, so no two readers of the same
/// bytes can disagree about where a request ends.
struct HTTPRequest: Sendable {
    var method: String
    /// The path without the query.
    var path: String
    var query: [String: String]
    /// Field values by lowercased name; a repeated field's values are joined with ", ".
    var headers: [String: String]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    static let maximumHeaderBytes = 16 * 1024
    static let maximumBodyBytes = 1 << 20

    enum ParseOutcome {
        case incomplete
        case complete(HTTPRequest, consumed: Int)
        case invalid(status: Int, reason: String)
    }

    /// Fields that may appear once only: a second copy would let two readers frame or route the request differently.
    private static let singletonFields: Set<String> = [
        "host", "content-length", "content-type", "authorization", "origin",
    ]

    /// A parsed request head: the request line, the fields, and how many body bytes follow.
    struct Head: Sendable {
        var method: String
        var target: String
        var headers: [String: String]
        var bodyLength: Int
    }

    enum HeadOutcome {
        case head(Head)
        case invalid(status: Int, reason: String)
    }

    static let bareLineFeed = ParseOutcome.invalid(
        status: 400, reason: "request lines must end with CRLF (\\r\\n), not a bare LF")
    static let headTooLarge = ParseOutcome.invalid(status: 431, reason: "request headers larger than 16 KiB")

    /// Parses a request from the start of `bytes`, or says that more bytes are needed or the request is malformed:
    /// the one-shot reference that the `control-parse` fuzz target checks `HTTPRequestReader` against.
    static func parse(_ bytes: [UInt8]) -> ParseOutcome {
        let terminator: [UInt8] = [13, 10, 13, 10]
        let headerEnd = bytes.firstRange(of: terminator)
        let headBytes = bytes[..<(headerEnd?.lowerBound ?? min(bytes.count, maximumHeaderBytes + 1))]
        if headBytes.indices.contains(where: { headBytes[$0] == 10 && ($0 == 0 || headBytes[$0 - 1] != 13) }) {
            return bareLineFeed
        }
        guard let headerEnd else { return bytes.count > maximumHeaderBytes ? headTooLarge : .incomplete }
        switch parseHead(bytes[..<headerEnd.lowerBound]) {
        case .invalid(let status, let reason): return .invalid(status: status, reason: reason)
        case .head(let head): return request(head, in: bytes, bodyStart: headerEnd.upperBound)
        }
    }

    /// Parses the head's text (without the blank line that ends it).
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> HeadOutcome {
        guard bytes.count <= maximumHeaderBytes else {
            return .invalid(status: 431, reason: "request headers larger than 16 KiB")
        }
        guard let head = String(validating: bytes, as: UTF8.self) else {
            return .invalid(status: 400, reason: "the request head is not UTF-8 text")
        }
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard requestLine.count == 3, isToken(requestLine[0]),
            requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0",
            requestLine[1].hasPrefix("/"),
            !requestLine[1].contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 32 || $0 == 127 } ?? false })
        else {
            return .invalid(status: 400, reason: "expected a request line such as \"GET /status HTTP/1.1\"")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), isToken(String(line[..<colon])) else {
                return .invalid(
                    status: 400, reason: "malformed header line \"\(line.prefix(60))\" (expected NAME: VALUE)")
            }
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            if let earlier = headers[name] {
                guard !singletonFields.contains(name) else {
                    return .invalid(status: 400, reason: "more than one \(name) header")
                }
                headers[name] = earlier + ", " + value
            } else {
                headers[name] = value
            }
        }
        if headers["transfer-encoding"] != nil {
            return .invalid(status: 411, reason: "send the body with Content-Length, not Transfer-Encoding")
        }
        var length = 0
        if let text = headers["content-length"] {
            guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text)
            else {
                return .invalid(status: 400, reason: "Content-Length \"\(text.prefix(40))\" is not a number of bytes")
            }
            guard value <= maximumBodyBytes else {
                return .invalid(
                    status: 413,
                    reason: "the body is \(value) bytes; the control endpoint takes at most 1 MiB (1048576 bytes)")
            }
            length = value
        }
        return .head(Head(method: requestLine[0], target: requestLine[1], headers: headers, bodyLength: length))
    }

    /// The request `head` starts, once `bytes` holds its whole body from `bodyStart`.
    static func request(_ head: Head, in bytes: [UInt8], bodyStart: Int) -> ParseOutcome {
        guard bytes.count >= bodyStart + head.bodyLength else { return .incomplete }
        let pathPart = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if pathPart.count == 2 {
            for pair in pathPart[1].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(
                    decodeQueryComponent)
                query[keyValue[0]] = keyValue.count == 2 ? keyValue[1] : ""
            }
        }
        let request = HTTPRequest(
            method: head.method, path: String(pathPart[0]), query: query, headers: head.headers,
            body: Array(bytes[bodyStart..<(bodyStart + head.bodyLength)]))
        return .complete(request, consumed: bodyStart + head.bodyLength)
    }

    /// Whether `text` is an RFC 9110 token: a method or a field name.
    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }

    private static func decodeQueryComponent(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

/// Reads one request from bytes that arrive in pieces, looking at each byte of the head once: a client that trickles
/// its request a byte at a time costs linear time, where parsing everything received on every read would be quadratic.
struct HTTPRequestReader {
    private(set) var bytes: [UInt8] = []
    /// Bytes already searched for a bare LF and the blank line that ends the head.
    private var scanned = 0
    /// The parsed head and where its body starts, once the head is complete.
    private var head: (HTTPRequest.Head, bodyStart: Int)?

    /// Takes the next bytes and says whether the request is complete, malformed, or needs more.
    mutating func append(_ chunk: ArraySlice<UInt8>) -> HTTPRequest.ParseOutcome {
        bytes += chunk
        if let (head, bodyStart) = head { return HTTPRequest.request(head, in: bytes, bodyStart: bodyStart) }
        while scanned < bytes.count {
            let index = scanned
            scanned += 1
            guard bytes[index] == 10 else { continue }
            guard index > 0, bytes[index - 1] == 13 else { return HTTPRequest.bareLineFeed }
            guard index >= 3, bytes[index - 2] == 10, bytes[index - 3] == 13 else { continue }
            switch HTTPRequest.parseHead(bytes[..<(index - 3)]) {
            case .invalid(let status, let reason):
                return .invalid(status: status, reason: reason)
            case .head(let parsed):
                head = (parsed, index + 1)
                return HTTPRequest.request(parsed, in: bytes, bodyStart: index + 1)
            }
        }
        return bytes.count > HTTPRequest.maximumHeaderBytes ? HTTPRequest.headTooLarge : .incomplete
    }
}

/// An HTTP/1.1 response from the control endpoint; the connection closes after it.
struct HTTPResponse: Sendable {
    var status: Int
    var contentType = "text/plain; charset=utf-8"
    var body: String
    /// Fields beyond the ones every answer carries, such as a page's Content-Security-Policy.
    var extraHeaders: [(name: String, value: String)] = []

    static func text(_ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, body: body.hasSuffix("\n") || body.isEmpty ? body : body + "\n")
    }

    static func json(_ body: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "application/json", body: body + "\n")
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse { .text(message, status: status) }

    var bytes: [UInt8] {
        let payload = Array(body.utf8)
        let head =
            "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(payload.count)\r\n"
            + "Connection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
            + extraHeaders.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
        return Array(head.utf8) + payload
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
