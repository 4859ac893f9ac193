import Foundation

/// A JSON document as the Toxiproxy API reads and writes it: types kept apart (a boolean is never a number), and
/// rendered without Foundation's bridging, so `true` and `1` come out as written.
enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            let object = try container.decode([String: JSONValue].self)
            self = .object(object.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }
    }

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.rendered == rhs.rendered }

    /// Parses `bytes`, or says why they are not JSON in the words Toxiproxy's errors use.
    static func parse(_ bytes: [UInt8]) -> Result<JSONValue, ToxiproxyError> {
        guard !bytes.isEmpty else { return .failure(.badRequestBody("EOF")) }
        do {
            return .success(try JSONDecoder().decode(JSONValue.self, from: Data(bytes)))
        } catch {
            return .failure(.badRequestBody("the body is not valid JSON"))
        }
    }

    /// The member `key` of an object, nil when absent or not an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var rendered: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return value.isFinite ? "\(value)" : "null"
        case .string(let value): return Self.quoted(value)
        case .array(let values): return "[" + values.map(\.rendered).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { Self.quoted($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        }
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<", ">", "&": out += unicodeEscape(scalar)
            default:
                if scalar.value < 0x20 { out += unicodeEscape(scalar) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// `\uXXXX` in lower-case hex, for a scalar below U+10000; without `String(format:)`, which costs a
    /// Foundation formatter per character in a listing of escaped names.
    private static func unicodeEscape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// A Toxiproxy API error: `{"error": MESSAGE, "status": CODE}` with Toxiproxy's messages and status codes.
struct ToxiproxyError: Error, Sendable {
    var message: String
    var status: Int

    static func badRequestBody(_ reason: String) -> ToxiproxyError {
        ToxiproxyError(message: "bad request body: \(reason)", status: 400)
    }
    static func missingField(_ field: String) -> ToxiproxyError {
        ToxiproxyError(message: "missing required field: \(field)", status: 400)
    }
    static let proxyNotFound = ToxiproxyError(message: "proxy not found", status: 404)
    static let proxyExists = ToxiproxyError(message: "proxy already exists", status: 409)
    static let invalidStream = ToxiproxyError(
        message: "stream was invalid, can be either upstream or downstream", status: 400)
    static let invalidToxicType = ToxiproxyError(message: "invalid toxic type", status: 400)
    static let toxicExists = ToxiproxyError(message: "toxic already exists", status: 409)
    static let toxicNotFound = ToxiproxyError(message: "toxic not found", status: 404)

    /// A proxy asked to listen at `address` (what `listen` resolved to) while the API lets proxies listen on
    /// loopback only. A 400, as for any listen value Toxiproxy cannot use, not a 403: toxiproxy-python raises
    /// only on 400, 404 and 409, and on a 403 would fail building a proxy from the error and lose its message.
    static func listenBeyondLoopback(proxy: String, listen: String, address: SocketAddress) -> ToxiproxyError {
        let given = listen.prefix(80)
        let resolved = address.description == given ? "" : " (\(address))"
        let loopback = Endpoint(parsing: String(given)).map { "127.0.0.1:\($0.port)" } ?? "127.0.0.1:PORT"
        return ToxiproxyError(
            message:
                "proxy \"\(proxy.prefix(80))\": listen \"\(given)\"\(resolved) is not a loopback address, and this Toxiproxy API "
                + "lets proxies listen on loopback only, so that other hosts cannot reach the upstream through them; "
                + "listen on \(loopback) (or localhost), or start linkcond with --allow-remote (toxiproxy-server: "
                + "-allow-remote) to let proxies listen beyond loopback",
            status: 400)
    }

    var json: JSONValue { .object([("error", .string(message)), ("status", .number(Double(status)))]) }

    var response: HTTPResponse { .toxiproxyJSON(json, status: status) }
}

extension HTTPResponse {
    /// A JSON answer of the Toxiproxy API.
    static func toxiproxyJSON(_ value: JSONValue, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: value.rendered + "\n")
    }
}
