import Foundation

/// An HTTP/1.1 request as the control endpoint reads it: request line, headers, and a Content-Length body.
struct HTTPRequest: Sendable {
    var method: String
    /// The path without the query.
    var path: String
    var query: [String: String]
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

    /// Parses a request from the start of `bytes`, or says that more bytes are needed or the request is malformed.
    static func parse(_ bytes: [UInt8]) -> ParseOutcome {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let headerEnd = bytes.firstRange(of: terminator) else {
            return bytes.count > maximumHeaderBytes ? .invalid(status: 431, reason: "request headers larger than 16 KiB") : .incomplete
        }
        guard headerEnd.lowerBound <= maximumHeaderBytes else { return .invalid(status: 431, reason: "request headers larger than 16 KiB") }
        let head = String(decoding: bytes[..<headerEnd.lowerBound], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst().split(separator: " ").map(String.init)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), requestLine[1].hasPrefix("/") else {
            return .invalid(status: 400, reason: "expected a request line such as \"GET /status HTTP/1.1\"")
        }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return .invalid(status: 400, reason: "malformed header line \"\(line)\"") }
            headers[line[..<colon].lowercased().trimmingCharacters(in: .whitespaces)] =
                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        if headers["transfer-encoding"] != nil {
            return .invalid(status: 411, reason: "send the body with Content-Length, not Transfer-Encoding")
        }
        var length = 0
        if let text = headers["content-length"] {
            guard let value = Int(text), value >= 0 else { return .invalid(status: 400, reason: "Content-Length \"\(text)\" is not a number") }
            guard value <= maximumBodyBytes else { return .invalid(status: 413, reason: "body larger than 1 MiB") }
            length = value
        }
        let bodyStart = headerEnd.upperBound
        guard bytes.count >= bodyStart + length else { return .incomplete }
        let target = requestLine[1]
        let pathPart = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if pathPart.count == 2 {
            for pair in pathPart[1].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0) }
                query[keyValue[0]] = keyValue.count == 2 ? keyValue[1] : ""
            }
        }
        let request = HTTPRequest(method: requestLine[0], path: String(pathPart[0]), query: query, headers: headers,
                                  body: Array(bytes[bodyStart..<(bodyStart + length)]))
        return .complete(request, consumed: bodyStart + length)
    }
}

/// An HTTP/1.1 response from the control endpoint; the connection closes after it.
struct HTTPResponse: Sendable {
    var status: Int
    var contentType = "text/plain; charset=utf-8"
    var body: String

    static func text(_ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, body: body.hasSuffix("\n") || body.isEmpty ? body : body + "\n")
    }

    static func json(_ body: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "application/json", body: body + "\n")
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse { .text(message, status: status) }

    var bytes: [UInt8] {
        let payload = Array(body.utf8)
        let head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(payload.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + payload
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 431: "Request Header Fields Too Large"
        default: "Error"
        }
    }
}
