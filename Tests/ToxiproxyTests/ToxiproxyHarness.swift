import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// A linkcond proxy with no listeners of its own and the Toxiproxy API on 127.0.0.1, spoken to in raw HTTP the way
/// Toxiproxy's client libraries speak it.
final class ToxiproxyUnderTest: Sendable {
    let proxy: ConditionedProxy
    let port: UInt16

    /// A client library's request headers: Go's net/http, Node's axios, Java's HttpURLConnection.
    enum Client: String, CaseIterable, Sendable {
        case go = "Go-http-client/1.1"
        case node = "axios/1.7.2"
        case java = "Java/17.0.2"
        /// What every browser sends; Toxiproxy refuses it, and so does linkcond.
        case browser = "Mozilla/5.0 (X11; Linux x86_64)"
    }

    /// `remoteListeners` lets the API's proxies listen beyond loopback, as `--allow-remote` does.
    init(profile: Profile = .none, options: ProxyOptions = ProxyOptions(), remoteListeners: Bool = false) throws {
        proxy = try ConditionedProxy(listeners: [], profile: profile, options: options)
        do {
            let served = try proxy.serveToxiproxy(
                at: Endpoint(host: "127.0.0.1", port: 0), remoteListeners: remoteListeners)
            port = try #require(served.split(separator: ":").last.flatMap { UInt16($0) })
        } catch {
            proxy.stop()
            throw error
        }
    }

    /// Sends one request and returns the status and the parsed JSON body (nil when empty).
    @discardableResult
    func send(
        _ method: String, _ path: String, _ body: String? = nil, as client: Client = .go,
        headers: [String] = []
    ) throws -> (status: Int, json: Any?) {
        let payload = body ?? ""
        var lines = [
            "\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "User-Agent: \(client.rawValue)",
            "Content-Length: \(payload.utf8.count)",
        ]
        if body != nil { lines.append("Content-Type: application/json") }
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(20))
        defer { stream.close() }
        try stream.write(Array(((lines + headers).joined(separator: "\r\n") + "\r\n\r\n" + payload).utf8))
        let answer = String(decoding: try stream.readToEnd(), as: UTF8.self)
        let status = Int(answer.split(separator: " ", maxSplits: 2)[1]) ?? 0
        let text = answer.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        let json =
            text.isEmpty ? nil : try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        return (status, json)
    }

    /// Creates a proxy to `upstreamPort` on a free loopback port and returns the address it bound.
    func createProxy(_ name: String, upstreamPort: UInt16) throws -> UInt16 {
        let (status, json) = try send(
            "POST", "/proxies", #"{"name":"\#(name)","listen":"127.0.0.1:0","upstream":"127.0.0.1:\#(upstreamPort)"}"#)
        #expect(status == 201)
        let listen = try #require((json as? [String: Any])?["listen"] as? String)
        return try #require(listen.split(separator: ":").last.flatMap { UInt16($0) })
    }

    func stop() { proxy.stop() }
}

/// A Toxiproxy error body, `{"error","status"}`.
struct ErrorShape: Equatable {
    var error: String?
    var status: Int?
}

func errorShape(_ json: Any?) -> ErrorShape? {
    guard let object = json as? [String: Any] else { return nil }
    return ErrorShape(error: object["error"] as? String, status: object["status"] as? Int)
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
}
