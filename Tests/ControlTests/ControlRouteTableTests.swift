import Foundation
import Testing

@testable import LinkConditioner

/// `ControlServer.routes` is the control endpoint's one table of routes: a live endpoint dispatches every route in
/// it, answers 405 with `Allow` for every other method on a path it knows, serves the dashboard's routes only where
/// the table says, and docs/reference/control-api.md shows the table as the code renders it.
@Suite(.serialized)
struct ControlRouteTableTests {
    static let token = "0123456789abcdef0123456789abcdef"
    static let methods = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "TRACE"]

    static let reference = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reference/control-api.md")

    /// The status code of a raw HTTP answer.
    static func status(_ answer: String) -> Int {
        Int(answer.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
    }

    /// Set LINKCOND_WRITE_DOCS=1 to write the table into the file instead of comparing.
    @Test func theReferenceShowsTheRouteTable() throws {
        let text = try String(contentsOf: Self.reference, encoding: .utf8)
        let start = "<!-- table:routes -->\n"
        let end = "\n<!-- /table -->"
        let opening = try #require(text.range(of: start), "docs/reference/control-api.md has no line \(start)")
        let closing = try #require(text.range(of: end, range: opening.upperBound..<text.endIndex))
        let wanted = text[..<opening.upperBound] + ControlServer.referenceTable + text[closing.lowerBound...]
        if ProcessInfo.processInfo.environment["LINKCOND_WRITE_DOCS"] == "1" {
            try wanted.write(to: Self.reference, atomically: true, encoding: .utf8)
            return
        }
        #expect(
            wanted == text,
            """
            the routes table of docs/reference/control-api.md is stale: regenerate it from ControlServer.routes with
            LINKCOND_WRITE_DOCS=1 scripts/bounded-test --filter theReferenceShowsTheRouteTable
            """)
    }

    /// The aliases and the page's style sheet and script have no row; every other route has one, in table order.
    @Test func theReferenceTableHasARowPerDocumentedRoute() {
        let rows = ControlServer.referenceTable.split(separator: "\n").dropFirst(2)
        #expect(rows.count == ControlServer.routes.count - 6)
        #expect(
            rows.first
                == "| `GET /status` | | JSON: version, profile, offline state, scenario, listeners with per-direction counters and current rate |"
        )
        #expect(
            rows.contains(
                "| `PUT /scenario?name=N` | scenario text (its profile steps name built-in profiles) | starts it |"))
    }

    /// A request for each route in the table, with the token and no body, reaches its handler: the answer is
    /// neither a 404 nor a 405, whatever the handler makes of the empty body.
    @Test func aLiveEndpointDispatchesEveryRouteInTheTable() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        for entry in ControlServer.routes {
            let answer = try endpoint.request(entry.route.method, entry.route.path)
            #expect(![404, 405].contains(Self.status(answer)), "\(entry.route): \(answer.prefix(300))")
        }
    }

    /// Every method a known path does not take is 405, with the path's methods in `Allow` in table order.
    @Test func everyOtherMethodOnAKnownPathIsRefusedWithAllow() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        var paths: [String] = []
        for entry in ControlServer.routes where !paths.contains(entry.route.path) { paths.append(entry.route.path) }
        for path in paths {
            let allowed = ControlServer.routes.filter { $0.route.path == path }.map(\.route.method)
            for method in Self.methods where !allowed.contains(method) {
                let answer = try endpoint.request(method, path)
                #expect(Self.status(answer) == 405, "\(method) \(path): \(answer.prefix(300))")
                #expect(
                    answer.contains("\r\nAllow: \(allowed.joined(separator: ", "))\r\n"),
                    "\(method) \(path): \(answer.prefix(300))")
            }
        }
    }

    /// Without a token the dashboard's tickets are not served (404), while its files still are; a path the table
    /// does not know is 404 naming the paths served everywhere.
    @Test func theTicketRoutesNeedAnEndpointWithAToken() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let ticket = try endpoint.request("POST", "/dashboard/ticket")
        let trade = try endpoint.request("POST", "/dashboard/token", body: "x")
        let page = try endpoint.request("GET", "/")
        let unknown = try endpoint.request("GET", "/nowhere")

        #expect(Self.status(ticket) == 404, "\(ticket)")
        #expect(Self.status(trade) == 404, "\(trade)")
        #expect(Self.status(page) == 200)
        #expect(
            unknown.hasSuffix(
                "no such endpoint /nowhere; endpoints: /status, /version, /metrics, /connections, /history, /catalog, "
                    + "/profile, /settings, /offline, /online, /reset, /scenario\n"), "\(unknown)")
    }

    /// The dashboard's routes in the table are exactly its files and its two ticket routes.
    @Test func theDashboardsRoutesAreItsFilesAndTickets() {
        let pages = ControlServer.routes.filter { $0.reach == .loopbackTCP }
        #expect(Set(pages.map(\.route.path)) == Set(DashboardPage.files.keys))
        #expect(pages.allSatisfy { $0.route.method == "GET" && $0.access == .open })
        let tickets = ControlServer.routes.filter { $0.reach == .loopbackTCPWithToken }.map(\.route.description)
        #expect(tickets == ["POST /dashboard/ticket", "POST /dashboard/token"])
    }
}
