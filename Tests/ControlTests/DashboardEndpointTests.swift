import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The dashboard's files are served without the token but under every other check, and the endpoint accepts
/// requests from its own origin only: another origin, even holding the token, is refused.
@Suite(.serialized)
struct DashboardEndpointTests {
    static let token = "0123456789abcdef0123456789abcdef"

    @Test(arguments: ["/", "/dashboard.js", "/dashboard.css"])
    func theDashboardFilesAreServedWithoutATokenUnderAPolicyThatForbidsFramingAndForeignScripts(_ path: String) throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.raw("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\n\r\n")

        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(300))")
        #expect(answer.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"))
        #expect(answer.contains("frame-ancestors 'none'"))
        #expect(answer.contains("X-Frame-Options: DENY"))
        #expect(!answer.contains(Self.token))
    }

    @Test func theDashboardPageLoadsNothingFromAnotherSite() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let page = try endpoint.raw("GET / HTTP/1.1\r\nHost: localhost:\(endpoint.port)\r\n\r\n")

        #expect(page.contains("<script src=\"/dashboard.js\""))
        #expect(!page.contains("http://") && !page.contains("https://") && !page.contains("//cdn"), "\(page)")
    }

    @Test(arguments: [
        "Host: evil.example:PORT", "Host: 127.0.0.1:PORT\r\nSec-Fetch-Site: cross-site",
        "Host: 127.0.0.1:PORT\r\nOrigin: http://evil.example",
    ])
    func theDashboardPageIsRefusedToARebindingNameOrAnotherSite(_ fields: String) throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.raw(
            "GET / HTTP/1.1\r\n\(fields.replacingOccurrences(of: "PORT", with: "\(endpoint.port)"))\r\n\r\n")

        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer.prefix(300))")
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func aRequestFromTheEndpointsOwnOriginWithTheTokenIsCarriedOut(_ host: String) throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.request(
            "POST", "/offline", host: "\(host):\(endpoint.port)",
            extra: ["Origin: http://\(host):\(endpoint.port)", "Sec-Fetch-Site: same-origin"])

        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == .refuse)
    }

    /// `linkcond dashboard --open` hands the browser a one-time ticket instead of the token; the page in a real
    /// chromium trades it for the token and shows the profile, and the ticket is spent.
    @Test(.enabled(if: ControlEndpointBrowserTests.chromium != nil, "needs chromium (apt-get install chromium)"))
    func thePageTradesAOneTimeTicketForTheToken() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }
        let issued = try endpoint.request("POST", "/dashboard/ticket")
        let ticket = try #require(
            issued.components(separatedBy: "\r\n\r\n").last?.trimmingCharacters(in: .whitespacesAndNewlines))

        let dom = try ControlEndpointBrowserTests.runHeadless(
            ControlEndpointBrowserTests.chromium!,
            url: "http://127.0.0.1:\(endpoint.port)/#ticket=\(ticket)")
        let again = try endpoint.raw(
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\n"
                + "Content-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)")

        #expect(issued.hasPrefix("HTTP/1.1 200 "), "\(issued)")
        #expect(dom.contains(#"<strong id="profile-name">edge</strong>"#), "\(dom.prefix(3000))")
        #expect(again.hasPrefix("HTTP/1.1 403 "), "\(again)")
    }

    @Test func aTicketIsIssuedOnlyForTheTokenAndTradedOnlyFromTheEndpointsOwnOrigin() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }
        let withoutToken = try endpoint.raw(
            "POST /dashboard/ticket HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Length: 0\r\n\r\n")
        let ticket = try #require(
            try endpoint.request("POST", "/dashboard/ticket").components(separatedBy: "\r\n\r\n").last?
                .trimmingCharacters(in: .whitespacesAndNewlines))
        let redeem = { (fields: String) in
            try endpoint.raw(
                "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\n\(fields)Content-Type: text/x-linkcond\r\n"
                    + "Content-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)")
        }

        let fromAnotherPage = try redeem("Origin: http://127.0.0.1:1\r\n")
        let wrongTicket = try endpoint.raw(
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\n"
                + "Content-Length: 64\r\n\r\n\(String(repeating: "0", count: 64))")
        let fromItsPage = try redeem("Origin: http://127.0.0.1:\(endpoint.port)\r\n")

        #expect(withoutToken.hasPrefix("HTTP/1.1 401 "), "\(withoutToken)")
        #expect(fromAnotherPage.hasPrefix("HTTP/1.1 403 "), "\(fromAnotherPage)")
        #expect(wrongTicket.hasPrefix("HTTP/1.1 403 "), "\(wrongTicket)")
        #expect(
            fromItsPage.hasPrefix("HTTP/1.1 200 ") && fromItsPage.hasSuffix("\r\n\r\n\(Self.token)\n"), "\(fromItsPage)"
        )
    }

    /// The ticket crosses a browser's command line, which every user can read: another user who races the browser
    /// to it gets no token, and the ticket is void for everyone after that.
    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv"))
    func anotherUserRacingTheBrowserToATicketGetsNoTokenAndVoidsIt() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }
        let ticket = try #require(
            try endpoint.request("POST", "/dashboard/ticket").components(separatedBy: "\r\n\r\n").last?
                .trimmingCharacters(in: .whitespacesAndNewlines))
        let redeem =
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\n"
            + "Content-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)"
        let fromNobody = try exchangeAsAnotherUser(port: endpoint.port, redeem)
        let fromOwnerAfterwards = try endpoint.raw(redeem)

        #expect(fromNobody.hasPrefix("HTTP/1.1 403 "), "\(fromNobody)")
        #expect(!fromNobody.contains(Self.token))
        #expect(fromOwnerAfterwards.hasPrefix("HTTP/1.1 403 "), "\(fromOwnerAfterwards)")
    }

    @Test func aRequestFromTheEndpointsOwnOriginWithoutTheTokenIsRefused() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.raw(
            "POST /offline HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nOrigin: http://127.0.0.1:\(endpoint.port)\r\n"
                + "Content-Length: 0\r\n\r\n")

        #expect(answer.hasPrefix("HTTP/1.1 401 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == nil)
    }

    @Test(arguments: [
        "Origin: http://evil.example",
        "Origin: null",
        "Origin: http://localhost:PORT",
        "Origin: https://127.0.0.1:PORT",
        "Origin: http://127.0.0.1:1",
        "Origin: http://127.0.0.1:PORT.evil.example",
        "Origin: http://127.0.0.1:PORT\r\nSec-Fetch-Site: cross-site",
    ])
    func anotherOriginIsRefusedEvenWithTheToken(_ fields: String) throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.request(
            "POST", "/offline", extra: [fields.replacingOccurrences(of: "PORT", with: "\(endpoint.port)")])
        let status = try endpoint.request(
            "GET", "/status", extra: [fields.replacingOccurrences(of: "PORT", with: "\(endpoint.port)")])

        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
        #expect(status.hasPrefix("HTTP/1.1 403 "), "\(status)")
        #expect(endpoint.proxy.conditions.offline == nil)
    }

    @Test func theDashboardIsNotServedOnTheUnixSocket() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        defer { proxy.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-dash-\(UUID().uuidString.prefix(8)).sock"
        ).path
        _ = try proxy.serveControl(at: .unix(path))

        let page = try ControlClient(address: .unix(path)).send("GET", "/")
        let status = try ControlClient(address: .unix(path)).send("GET", "/status")

        #expect(page.status == 404, "\(page.body)")
        #expect(status.status == 200)
    }

    @Test(arguments: ["/metrics", "/connections", "/catalog"])
    func theDashboardsDataNeedsTheToken(_ path: String) throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.raw("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\n\r\n")

        #expect(answer.hasPrefix("HTTP/1.1 401 "), "\(answer)")
    }

    @Test func theConnectionListShowsALiveTransfer() throws {
        let download = try SteadyDownload(profile: Profile.builtIn(named: "3g")!)
        defer { download.stop() }
        try download.waitForBytes(1)

        let list = try JSONDecoder().decode(ConnectionList.self, from: Data(download.body(of: "/connections").utf8))

        #expect(list.total == 1)
        #expect(list.connections.first?.upstream == "127.0.0.1:\(download.source.port)")
        #expect(list.connections.first?.state == "relaying")
    }

    @Test func theCatalogListsEveryBuiltInProfileAndScenarioWithItsText() throws {
        let endpoint = try ControlEndpointUnderTest(token: Self.token)
        defer { endpoint.stop() }

        let answer = try endpoint.request("GET", "/catalog")
        let body = try #require(answer.range(of: "\r\n\r\n").map { answer[$0.upperBound...] })
        let catalog = try #require(
            try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: [[String: String]]])

        #expect(catalog["profiles"]?.map { $0["name"] } == Profile.builtInNames)
        #expect(catalog["profiles"]?.allSatisfy { ($0["text"] ?? "").contains("=") } == true)
        #expect(catalog["scenarios"]?.map { $0["name"] } == Scenario.builtInNames)
    }
}
