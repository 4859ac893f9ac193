@testable import LinkConditioner

/// A control endpoint client's request, parsed on the calling thread with no event loop: `HTTPRequestReader` as
/// `ControlConnection` feeds it each read until it decides, checked against `HTTPRequest.parse` over the same
/// bytes, then the body through the parser its route uses: profile text or a built-in name, settings, a scenario,
/// or the Toxiproxy API's JSON proxies and toxics. The `control` target answers through `ControlAPI` on a loop
/// instead, at a few hundred inputs a second; this one tries tens of times more.
enum ControlParseTarget {
    static func run(_ input: FuzzInput) {
        var reader = HTTPRequestReader()
        var outcome = HTTPRequest.ParseOutcome.incomplete
        for read in input.reads {
            outcome = reader.append(read)
            if case .incomplete = outcome { continue }
            break
        }
        let whole = HTTPRequest.parse(reader.bytes)
        switch (outcome, whole) {
        case (.incomplete, .incomplete):
            return
        case (.invalid(let status, let reason), .invalid):
            _ = HTTPResponse.error(status, reason).bytes
        case (.complete(let request, let consumed), .complete(let again, let consumedAgain)):
            precondition(
                consumed == consumedAgain && consumed <= reader.bytes.count,
                "the reader took \(consumed) bytes, the parser \(consumedAgain), of \(reader.bytes.count)")
            precondition(
                request.method == again.method && request.path == again.path && request.body == again.body,
                "the reader and the parser read different requests")
            parseBody(of: request)
        default:
            preconditionFailure(
                "the reader says \(outcome), the parser \(whole), for the same \(reader.bytes.count) bytes")
        }
    }

    /// The body through the function the route hands it to, as `ControlAPI.handle` and `ToxiproxyAPI.handle` do.
    private static func parseBody(of request: HTTPRequest) {
        let body = request.bodyText
        switch (request.method, request.path) {
        case ("PUT", "/profile"), ("POST", "/profile"):
            answer(ControlAPI.profile(from: body))
        case ("POST", "/settings"), ("PATCH", "/profile"):
            answer(ControlAPI.settings(from: body, appliedTo: .none))
        case ("PUT", "/scenario"), ("POST", "/scenario"):
            answer(ControlAPI.scenario(from: body, name: request.query["name"] ?? ""))
        default:
            parseToxiproxyBody(of: request)
        }
    }

    /// The Toxiproxy API's bodies: a proxy (created or merged), a list of proxies, a new toxic, a toxic's update.
    /// Addresses are parsed but not resolved, which would ask DNS.
    private static func parseToxiproxyBody(of request: HTTPRequest) {
        guard request.method == "POST" || request.method == "PATCH" else { return }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let newProxy = ToxiproxyAPI.ProxyRequest(name: "", listen: "", upstream: "", enabled: true)
        switch (parts.count, parts.first ?? "") {
        case (1, "proxies"), (2, "proxies"):
            answer(JSONValue.parse(request.body).flatMap { ToxiproxyAPI.proxyRequest($0, defaults: newProxy) })
        case (1, "populate"):
            answer(
                JSONValue.parse(request.body).flatMap { value -> Result<[ToxiproxyAPI.ProxyRequest], ToxiproxyError> in
                    guard case .array(let items) = value else {
                        return .failure(.badRequestBody("expected a JSON array of proxies"))
                    }
                    return Result { () throws(ToxiproxyError) in
                        try items.prefix(ToxiproxyAPI.proxyLimit).enumerated().map {
                            index, item throws(ToxiproxyError) in
                            try ToxiproxyAPI.proxyRequest(item, defaults: newProxy, position: " at proxy \(index + 1)")
                                .get()
                        }
                    }
                })
        case (3, "proxies") where parts.last == "toxics":
            answer(JSONValue.parse(request.body).flatMap(ToxicDefinition.parsing))
        case (4, "proxies"):
            let existing = ToxicDefinition(
                name: "latency_downstream", kind: .latency, stream: .downstream, toxicity: 1, attributes: [:])
            answer(JSONValue.parse(request.body).flatMap { existing.updated(with: $0) })
        default:
            return
        }
    }

    private static func answer<Value>(_ parsed: Parsed<Value>) {
        if case .refused(let response) = parsed { _ = response.bytes }
    }

    private static func answer(_ parsed: Result<[ToxiproxyAPI.ProxyRequest], ToxiproxyError>) {
        switch parsed {
        case .success(let requests):
            for request in requests { _ = (Endpoint(parsing: request.listen), Endpoint(parsing: request.upstream)) }
        case .failure(let error): _ = error.response.bytes
        }
    }

    private static func answer(_ parsed: Result<ToxiproxyAPI.ProxyRequest, ToxiproxyError>) {
        answer(parsed.map { [$0] })
    }

    private static func answer(_ parsed: Result<ToxicDefinition, ToxiproxyError>) {
        switch parsed {
        case .success(let toxic): _ = toxic.json.rendered
        case .failure(let error): _ = error.response.bytes
        }
    }
}
