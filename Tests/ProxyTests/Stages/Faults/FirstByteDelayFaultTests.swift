import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `downlink.first-byte.delay`, the slow server: every response's first byte is held back, never early, and the
/// request reaches the server at once.
@Suite(.serialized)
struct FirstByteDelayFaultTests {

    @Test func curlsFirstByteArrivesNoEarlierThanTheDelay() throws {
        let origin = try TestHTTPOrigin()
        let proxy = try ConditionedProxy.frontEnd(profile: Profile(parsing: "downlink.first-byte.delay = 800 ms"))
        defer {
            proxy.stop()
            origin.stop()
        }

        guard
            let result = try runCurl([
                "-x", "http://127.0.0.1:\(proxy.port)", "-w", "%{time_pretransfer} %{time_starttransfer}",
                "http://127.0.0.1:\(origin.port)/bytes/100000",
            ])
        else {
            Issue.record("curl is not installed; the slow server test cannot run")
            return
        }
        let times = result.writeOut.split(separator: " ").compactMap { Double($0) }

        expectOriginBody(result, size: 100_000)
        #expect(times.count == 2, "\(result.writeOut)")
        let wait = times[1] - times[0]
        #expect(wait >= 0.8, "first byte after \(wait) s")
    }

    @Test func everyResponseOnAKeptAliveConnectionWaits() throws {
        let origin = try TestHTTPOrigin()
        let (proxy, client) = try connectedFrontEnd(
            profile: Profile(parsing: "downlink.first-byte.delay = 300 ms"), timeout: 10)
        defer {
            client.close()
            proxy.stop()
            origin.stop()
        }
        let responses = HTTPResponseReader(client)

        var waits: [Double] = []
        for size in [1000, 2000] {
            let start = MonotonicClock().now()
            try client.send(Array("GET http://127.0.0.1:\(origin.port)/bytes/\(size) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let response = try responses.next()
            waits.append(secondsSince(start))
            #expect(response.body.count == size)
        }

        #expect(waits.allSatisfy { $0 >= 0.3 }, "\(waits)")
        #expect(origin.connections.value == 1)
    }
}
