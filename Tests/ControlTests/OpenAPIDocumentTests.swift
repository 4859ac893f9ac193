import Foundation
import Testing

@testable import LinkConditioner

/// `docs/reference/control-api.yaml` describes exactly the routes the control endpoint serves, and
/// `docs/reference/toxiproxy-api.yaml` exactly those of the Toxiproxy API: every route in the code's table is
/// documented, and every documented operation is in the table, needing a token and taking a body as the table says.
/// One reader of `paths:` serves both documents.
struct OpenAPIDocumentTests {
    static func document(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/reference/\(name)")
    }

    static let document = document("control-api.yaml")

    /// One operation of a document: its method and path, whether it needs no token (`security: []`), and whether
    /// it takes a body (`requestBody`).
    struct Operation: Equatable {
        var route: ControlRoute
        var open = false
        var body = false
    }

    /// The operations under the document's `paths:`, read line by line: a path is a key indented two spaces, an
    /// operation an HTTP method indented four beneath it, and its fields are indented six. Enough for these
    /// documents, which keep to that layout.
    static func documentedOperations(in text: String) -> [Operation] {
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        var operations: [Operation] = []
        var inPaths = false
        var inOperation = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("#") || line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            if !line.hasPrefix(" ") {
                inPaths = line.hasPrefix("paths:")
                path = nil
                inOperation = false
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /") || line.hasPrefix("  \"/"), line.hasSuffix(":") {
                var key = line.dropFirst(2).dropLast()
                if key.hasPrefix("\""), key.hasSuffix("\""), key.count >= 2 { key = key.dropFirst().dropLast() }
                path = String(key)
                inOperation = false
            } else if line.hasPrefix("    "), !line.hasPrefix("     ") {
                inOperation = false
                if let path, line.hasSuffix(":"), methods.contains(String(line.dropFirst(4).dropLast())) {
                    operations.append(
                        Operation(route: ControlRoute(String(line.dropFirst(4).dropLast()).uppercased(), path)))
                    inOperation = true
                }
            } else if inOperation, line.hasPrefix("      "), !line.hasPrefix("       ") {
                let field = line.dropFirst(6)
                if field == "security: []" { operations[operations.count - 1].open = true }
                if field.hasPrefix("requestBody:") { operations[operations.count - 1].body = true }
            }
        }
        return operations
    }

    /// The methods and paths of `documentedOperations(in:)`.
    static func documentedRoutes(in text: String) -> [ControlRoute] {
        documentedOperations(in: text).map(\.route)
    }

    /// Fails unless the operations of `document` and the route table `served` are the same, each once.
    static func expectSameRoutes(
        _ document: URL, _ served: [ControlRoute], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let documented = Self.documentedRoutes(in: try String(contentsOf: document, encoding: .utf8))
        let name = document.lastPathComponent
        #expect(
            documented.count > 10, "read too few operations from \(document.path); has its layout changed?",
            sourceLocation: sourceLocation)
        #expect(
            Set(documented).count == documented.count, "an operation is documented twice: \(documented)",
            sourceLocation: sourceLocation)
        #expect(
            Set(served).count == served.count, "a route is in the table twice: \(served)",
            sourceLocation: sourceLocation)
        let undocumented = served.filter { !documented.contains($0) }
        #expect(
            undocumented.isEmpty, "served but missing from \(name): \(undocumented)", sourceLocation: sourceLocation)
        let unserved = documented.filter { !served.contains($0) }
        #expect(unserved.isEmpty, "in \(name) but not in the route table: \(unserved)", sourceLocation: sourceLocation)
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        try Self.expectSameRoutes(Self.document, ControlServer.routes.map(\.route))
    }

    /// The document says which operations need no token and which take a body, as the table does.
    @Test func everyOperationNeedsATokenAndTakesABodyAsTheTableSays() throws {
        let documented = Self.documentedOperations(in: try String(contentsOf: Self.document, encoding: .utf8))
        for entry in ControlServer.routes {
            let operation = documented.first { $0.route == entry.route }
            let hasBody = if case .text = entry.body { true } else { false }
            #expect(operation?.open == (entry.access == .open), "\(entry.route): security")
            #expect(operation?.body == hasBody, "\(entry.route): requestBody")
        }
    }

    @Test func everyToxiproxyOperationTakesABodyAsTheTableSays() throws {
        let documented = Self.documentedOperations(
            in: try String(contentsOf: Self.document("toxiproxy-api.yaml"), encoding: .utf8))
        for entry in ToxiproxyAPI.routes {
            let operation = documented.first { $0.route == entry.route }
            #expect(operation?.body == (entry.body == .json), "\(entry.route): requestBody")
            #expect(operation?.open == false, "\(entry.route): the Toxiproxy API has no per-route security")
        }
    }

    @Test func everyToxiproxyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        try Self.expectSameRoutes(Self.document("toxiproxy-api.yaml"), ToxiproxyAPI.routes.map(\.route))
    }

    /// The Toxiproxy API's table gates its dispatch the same way: a path segment matches `{proxy}` or `{toxic}`,
    /// a method the path does not take is 405 with `Allow`, an unknown path Toxiproxy's 404.
    @Test func aToxiproxyRequestOutsideTheTableIsRefused() {
        #expect(ToxiproxyAPI.unrouted("GET", "/proxies/a%2Fb/toxics/x") == nil)
        #expect(ToxiproxyAPI.unrouted("PATCH", "/proxies/redis") == nil)
        let refused = ToxiproxyAPI.unrouted("PUT", "/proxies/redis/toxics")
        #expect(refused?.status == 405)
        #expect(refused?.extraHeaders.map { "\($0.name): \($0.value)" } == ["Allow: GET, POST"])
        #expect(refused?.contentType == "application/json")
        #expect(ToxiproxyAPI.unrouted("DELETE", "/version")?.status == 405)
        #expect(ToxiproxyAPI.unrouted("GET", "/proxies/redis/toxics/x/y")?.status == 404)
        #expect(ToxiproxyAPI.unrouted("GET", "/metrics")?.status == 404)
        #expect(ToxiproxyAPI.unrouted("GET", "/")?.status == 404)
        #expect(ToxiproxyAPI.methods(allowedOn: "/proxies/x/toxics/y") == ["GET", "POST", "PATCH", "DELETE"])
    }

    @Test func theReaderFindsOperationsAndIgnoresEverythingElse() {
        let text = """
            openapi: 3.1.0
            paths:
              /a:
                get:
                  responses:
                    "200": {description: x}
                post:
                  security: []
                  parameters:
                    - name: get
                  requestBody: {$ref: x}
              "/b":
                parameters:
                  requestBody: {$ref: y}
                delete:
            components:
              schemas:
                put:
            """
        #expect(
            Self.documentedOperations(in: text) == [
                Operation(route: ControlRoute("GET", "/a")),
                Operation(route: ControlRoute("POST", "/a"), open: true, body: true),
                Operation(route: ControlRoute("DELETE", "/b")),
            ])
    }

    /// The route table gates the API's dispatch: a method the path does not take is 405 with the `Allow` field
    /// RFC 9110 requires (schemathesis found it missing), an unknown path 404.
    @Test func aRequestOutsideTheTableIsRefused() {
        func request(_ method: String, _ path: String) -> HTTPRequest {
            HTTPRequest(method: method, path: path, query: [:], headers: [:], body: [])
        }
        let refused = ControlServer.unrouted(request("TRACE", "/profile"))
        #expect(refused.status == 405)
        #expect(refused.extraHeaders.map { "\($0.name): \($0.value)" } == ["Allow: GET, PUT, POST, PATCH"])
        #expect(ControlServer.unrouted(request("TRACE", "/dashboard.js")).status == 405)
        #expect(ControlServer.unrouted(request("GET", "/nowhere")).status == 404)
        #expect(ControlServer.unrouted(request("GET", "/nowhere")).extraHeaders.isEmpty)
        #expect(
            ControlServer.unrouted(request("GET", "/")).status == 404,
            "the dashboard is not served here (a Unix socket)")
    }
}
