import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `connect.stall` seen by curl through the HTTP proxy front end: a tunnel opens late, never early, and a client
/// with a shorter connect timeout gives up with curl's timeout error. How late is the machine's, not the fault's
/// decision, and is bounded only by curl's own limits (`runCurl`'s 60 s).
@Suite(.serialized)
struct ConnectStallFaultTests {

    @Test func curlsTunnelOpensNoEarlierThanTheStall() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "connect.stall = 1 s"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try runCurl([
                "-p", "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{time_appconnect} %{time_total}",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else {
            Issue.record("curl is not installed; the connect stall test cannot run")
            return
        }
        let times = result.writeOut.split(separator: " ").compactMap { Double($0) }

        expectOriginBody(result, size: 1000)
        #expect(times.count == 2 && times[1] >= 1.0, "\(result.writeOut)")
    }

    @Test func curlWithAShorterConnectTimeoutGivesUpWithItsTimeoutError() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "connect.stall = 30 s"))
        defer {
            proxy.stop()
            origin.stop()
        }

        let start = MonotonicClock().now()
        guard
            let result = try runCurl([
                "-p", "-x", "http://127.0.0.1:\(proxy.port)", "--connect-timeout", "1",
                "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
        else {
            Issue.record("curl is not installed; the connect stall test cannot run")
            return
        }
        let elapsed = secondsSince(start)

        // curl's own timeout, not the 30 s stall's end, ended it: the stall would have let the tunnel open.
        #expect(result.status == 28, "curl's \"operation timed out\"")
        #expect(elapsed >= 1.0, "\(elapsed)")
    }
}
