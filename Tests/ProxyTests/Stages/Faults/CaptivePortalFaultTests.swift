import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `captive-portal` seen by curl through the HTTP proxy front end: the login page instead of the origin's answer,
/// HTTPS tunnels failing, and release by a POST to the form or by `online`.
@Suite(.serialized)
struct CaptivePortalFaultTests {
    private func curl(_ arguments: [String]) throws -> CurlResult? {
        guard let result = try runCurl(arguments) else {
            Issue.record("curl is not installed; the captive portal test cannot run")
            return nil
        }
        return result
    }

    @Test func aPlainHTTPRequestGetsTheLoginFormInsteadOfTheOrigin() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = form"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl([
                "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{http_code} %{content_type}",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else { return }
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        try client.send(Array("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let page = try HTTPResponseReader(client).next()

        #expect(result.writeOut == "200 text/html; charset=utf-8")
        #expect(String(decoding: page.body, as: UTF8.self).contains("<form method=\"post\""))
        #expect(origin.connections.value == 0)
    }

    @Test func theRedirectStyleAnswers302ToThePortal() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = redirect"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl([
                "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{http_code} %{redirect_url}",
                "http://127.0.0.1:\(origin.port)/",
            ])
        else { return }

        #expect(result.writeOut == "302 http://portal.linkcond.invalid/linkcond-portal/login")
        #expect(origin.connections.value == 0)
    }

    @Test func anHTTPSTunnelFailsItsTLSHandshake() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = form"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl(["-x", "http://127.0.0.1:\(proxy.port)", "-k", "https://127.0.0.1:\(origin.port)/"])
        else { return }

        #expect(result.status == 35, "curl's SSL connect error")
        #expect(origin.connections.value == 0)
    }

    @Test func aPostToTheFormLetsTrafficThrough() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = redirect"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let login = try curl([
                "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{http_code}", "-d", "room=101",
                "http://portal.linkcond.invalid/linkcond-portal/login",
            ])
        else { return }
        guard
            let after = try curl(["-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/bytes/1000"])
        else { return }

        #expect(login.writeOut == "200")
        expectOriginBody(after, size: 1000)
    }

    @Test func goingOnlineLetsTrafficThrough() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = form"))
        defer {
            proxy.stop()
            origin.stop()
        }
        guard
            let before = try curl([
                "-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else { return }

        proxy.goOnline()
        guard
            let after = try curl(["-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/bytes/1000"])
        else { return }

        #expect(before.digest.count != 1000)
        expectOriginBody(after, size: 1000)
    }

    @Test func aSOCKS5ClientsPlainHTTPRequestToPort80GetsTheRedirect() throws {
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = redirect"))
        defer { proxy.stop() }

        guard
            let result = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "-w", "%{http_code} %{redirect_url}",
                "http://127.0.0.1/",
            ])
        else { return }

        #expect(result.status == 0)
        #expect(result.writeOut == "302 http://portal.linkcond.invalid/linkcond-portal/login")
    }

    @Test func aSOCKS5ClientsPlainHTTPRequestGetsTheLoginFormInsteadOfTheOrigin() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = form"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "-w", "%{http_code} %{content_type}",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else { return }

        #expect(result.writeOut == "200 text/html; charset=utf-8")
        #expect(result.digest.count > 0 && result.digest.count != 1000)
        #expect(origin.connections.value == 0)
    }

    @Test func aSOCKS5TLSConnectionFailsItsHandshake() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = form"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "-k", "https://127.0.0.1:\(origin.port)/",
            ])
        else { return }

        #expect(result.status == 35, "curl's SSL connect error")
        #expect(origin.connections.value == 0)
    }

    @Test func aPostToTheFormThroughSOCKS5LetsTrafficThrough() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = redirect"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let before = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "-w", "%{http_code}",
                "http://portal.linkcond.invalid/linkcond-portal/login",
            ])
        else { return }
        guard
            let login = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "-w", "%{http_code}", "-d", "room=101",
                "http://portal.linkcond.invalid/linkcond-portal/login",
            ])
        else { return }
        guard
            let after = try curl([
                "--socks5-hostname", "127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else { return }

        #expect(before.writeOut == "200", "the portal's own page is the form, not another redirect")
        #expect(login.writeOut == "200")
        expectOriginBody(after, size: 1000)
    }

    @Test func aPlainHTTPRequestInsideACONNECTTunnelGetsThePortalToo() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "captive-portal = redirect"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try curl([
                "-x", "http://127.0.0.1:\(proxy.port)", "--proxytunnel", "-w", "%{http_code} %{redirect_url}",
                "http://127.0.0.1:\(origin.port)/",
            ])
        else { return }

        #expect(result.writeOut == "302 http://portal.linkcond.invalid/linkcond-portal/login")
        #expect(origin.connections.value == 0)
    }
}
