import Foundation
@testable import LinkConditioner
import Testing

/// `docs/reference/control-api.yaml` describes exactly the routes the control endpoint serves, and
/// `docs/reference/toxiproxy-api.yaml` exactly those of the Toxiproxy API: every route in the code's table is
/// documented, and every documented operation is in the table. One reader of `paths:` serves both documents.
struct OpenAPIDocumentTests {
    static func document(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/reference/\(name)")
    }

    static let document = document("control-api.yaml")

    /// The operations under the document's `paths:`, read line by line: a path is a key indented two spaces, an
    /// operation an HTTP method indented four beneath it. Enough for this document, which keeps to that layout.
    static func documentedRoutes(in text: String) -> [ControlRoute] {
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        var routes: [ControlRoute] = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("#") || line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            if !line.hasPrefix(" ") {
                inPaths = line.hasPrefix("paths:")
                path = nil
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /") || line.hasPrefix("  \"/"), line.hasSuffix(":") {
                var key = line.dropFirst(2).dropLast()
                if key.hasPrefix("\""), key.hasSuffix("\""), key.count >= 2 { key = key.dropFirst().dropLast() }
                path = String(key)
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"),
                      methods.contains(String(line.dropFirst(4).dropLast())) {
                routes.append(ControlRoute(String(line.dropFirst(4).dropLast()).uppercased(), path))
            }
        }
        return routes
    }

    /// Fails unless the operations of `document` and the route table `served` are the same, each once.
    static func expectSameRoutes(_ document: URL, _ served: [ControlRoute], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let documented = Self.documentedRoutes(in: try String(contentsOf: document, encoding: .utf8))
        let name = document.lastPathComponent
        #expect(documented.count > 10, "read too few operations from \(document.path); has its layout changed?", sourceLocation: sourceLocation)
        #expect(Set(documented).count == documented.count, "an operation is documented twice: \(documented)", sourceLocation: sourceLocation)
        #expect(Set(served).count == served.count, "a route is in the table twice: \(served)", sourceLocation: sourceLocation)
        let undocumented = served.filter { !documented.contains($0) }
        #expect(undocumented.isEmpty, "served but missing from \(name): \(undocumented)", sourceLocation: sourceLocation)
        let unserved = documented.filter { !served.contains($0) }
        #expect(unserved.isEmpty, "in \(name) but not in the route table: \(unserved)", sourceLocation: sourceLocation)
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        try Self.expectSameRoutes(Self.document, ControlServer.routes)
    }

    @Test func everyToxiproxyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        try Self.expectSameRoutes(Self.document("toxiproxy-api.yaml"), ToxiproxyAPI.routes)
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
                  parameters:
                    - name: get
              "/b":
                delete:
            components:
              schemas:
                put:
            """
        #expect(Self.documentedRoutes(in: text) == [ControlRoute("GET", "/a"), ControlRoute("POST", "/a"),
                                                     ControlRoute("DELETE", "/b")])
    }

    /// The route table gates the API's dispatch: a method the path does not take is 405 with the `Allow` field
    /// RFC 9110 requires (schemathesis found it missing), an unknown path 404.
    @Test func aRequestOutsideTheTableIsRefused() {
        func request(_ method: String, _ path: String) -> HTTPRequest {
            HTTPRequest(method: method, path: path, query: [:], headers: [:], body: [])
        }
        let refused = ControlAPI.unrouted(request("TRACE", "/profile"))
        #expect(refused.status == 405)
        #expect(refused.extraHeaders.map { "\($0.name): \($0.value)" } == ["Allow: GET, PUT, POST, PATCH"])
        #expect(ControlAPI.unrouted(request("TRACE", "/dashboard.js")).status == 405)
        #expect(ControlAPI.unrouted(request("GET", "/nowhere")).status == 404)
        #expect(ControlAPI.unrouted(request("GET", "/nowhere")).extraHeaders.isEmpty)
        #expect(ControlAPI.unrouted(request("GET", "/")).status == 404, "the dashboard is not served here (a Unix socket)")
    }
}
