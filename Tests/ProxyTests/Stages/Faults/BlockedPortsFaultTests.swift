import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `blocked.ports` seen by curl through the HTTP proxy front end: a refused port fails at once, a blackholed one
/// never answers, and ports outside the list work.
@Suite(.serialized)
struct BlockedPortsFaultTests {
    @Test func aRefusedPortFailsCurlsTunnelAtOnceWithABadGateway() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(
            profile: Profile(parsing: "blocked.ports = \(origin.port)\nblocked.mode = refuse"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try runCurl([
                "-p", "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{http_connect}",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else {
            Issue.record("curl is not installed; the blocked port test cannot run")
            return
        }

        // Refused at once, not after a timeout: a connect that timed out is answered 504, a refused one 502.
        #expect(result.status == 56, "curl's CONNECT tunnel failed")
        #expect(result.writeOut == "502")
        #expect(origin.connections.value == 0)
    }

    @Test func aBlackholedPortLeavesCurlWaitingUntilItGivesUp() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(
            profile: Profile(parsing: "blocked.ports = 1-442, \(origin.port)\nblocked.mode = blackhole"))
        defer {
            proxy.stop()
            origin.stop()
        }

        let start = MonotonicClock().now()
        guard
            let result = try runCurl([
                "-x", "http://127.0.0.1:\(proxy.port)", "--max-time", "2",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else {
            Issue.record("curl is not installed; the blocked port test cannot run")
            return
        }
        let elapsed = secondsSince(start)

        #expect(result.status == 28, "curl's \"operation timed out\"")
        #expect(elapsed >= 2.0)
        #expect(origin.connections.value == 0)
    }

    @Test func aPortOutsideTheListStillWorks() throws {
        let origin = try TestHTTPOrigin()
        let blocked = origin.port == 25 ? "26" : "25"
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "blocked.ports = \(blocked)"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try runCurl([
                "-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else {
            Issue.record("curl is not installed; the blocked port test cannot run")
            return
        }

        expectOriginBody(result, size: 1000)
    }

    @Test func aRefusedPortResetsATCPRelaysClient() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(
            of: echo.port, profile: Profile(parsing: "blocked.ports = \(echo.port)"))
        defer {
            proxy.stop()
            echo.stop()
        }

        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let ending: String
        do {
            ending = try client.receive().isEmpty ? "end of stream" : "data"
        } catch {
            ending = "\(error)"
        }

        #expect(ending.contains("reset"), "\(ending)")
    }
}
