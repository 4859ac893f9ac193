import Foundation
@testable import LinkConditioner
import Testing

/// `docs/reference/control-api.yaml` describes exactly the routes the control endpoint serves: every route in the
/// code's table is documented, and every documented operation is in the table.
struct OpenAPIDocumentTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reference/control-api.yaml")

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

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        let documented = Self.documentedRoutes(in: try String(contentsOf: Self.document, encoding: .utf8))
        let served = ControlServer.routes
        #expect(documented.count > 10, "read too few operations from \(Self.document.path); has its layout changed?")
        #expect(Set(documented).count == documented.count, "an operation is documented twice: \(documented)")
        #expect(Set(served).count == served.count, "a route is in the table twice: \(served)")
        let undocumented = served.filter { !documented.contains($0) }
        #expect(undocumented.isEmpty, "served but missing from control-api.yaml: \(undocumented)")
        let unserved = documented.filter { !served.contains($0) }
        #expect(unserved.isEmpty, "in control-api.yaml but not in the route table: \(unserved)")
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
