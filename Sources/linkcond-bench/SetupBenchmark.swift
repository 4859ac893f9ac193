import Foundation
import LinkConditioner
import LoopbackPeers

/// Connection set-up through the proxy front end under `none`, against a direct TCP connect in the same run.
///
/// Set-up is measured as an app sees it: from starting the TCP connect until the tunnel is usable (for SOCKS5 the
/// success reply has arrived, for HTTP the `200 Connection established`). The front end adds a loop turn or two and
/// one extra loopback connection; under a real profile the round trip it emulates dwarfs both.
func runSetupBenchmark(quick: Bool) throws {
    let samples = quick ? 200 : 1000
    let echo = try TestServer.echo()
    defer { echo.stop() }
    let proxy = try ConditionedProxy(listeners: [ListenerSpec(listen: Endpoint(host: "127.0.0.1", port: 0), kind: .proxy(ProxyFrontEndSettings()))],
                                     profile: .none)
    defer { proxy.stop() }
    let proxyPort = proxy.listeners[0].address.port
    let socksRequest: [UInt8] = [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(echo.port >> 8), UInt8(echo.port & 0xFF)]
    let connectRequest = Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n".utf8)
    let connectReplyLength = "HTTP/1.1 200 Connection established\r\n\r\n".utf8.count

    func measure(_ body: () throws -> Void) throws -> [Double] {
        var times: [Double] = []
        for index in 0..<(samples + 20) {
            let start = MonotonicClock().now()
            try body()
            if index >= 20 { times.append(secondsSince(start)) }
        }
        return times.sorted()
    }
    let direct = try measure {
        let connection = try TestConnection.connect(port: echo.port, timeout: 5)
        connection.close()
    }
    let socks = try measure {
        let connection = try TestConnection.connect(port: proxyPort, timeout: 5)
        defer { connection.close() }
        try connection.send(socksRequest)
        _ = try connection.receive(exactly: 2 + 10)
    }
    let httpConnect = try measure {
        let connection = try TestConnection.connect(port: proxyPort, timeout: 5)
        defer { connection.close() }
        try connection.send(connectRequest)
        _ = try connection.receive(exactly: connectReplyLength)
    }

    func quantile(_ sorted: [Double], _ p: Double) -> String {
        String(format: "%7.1f µs", sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))] * 1e6)
    }
    print("## Connection set-up through the proxy front end under none (\(samples) connections each)")
    for (name, times) in [("direct TCP connect", direct), ("SOCKS5 CONNECT", socks), ("HTTP CONNECT", httpConnect)] {
        print("\(name.padding(toLength: 20, withPad: " ", startingAt: 0)) p50 \(quantile(times, 0.5))  p99 \(quantile(times, 0.99))")
    }
    print("")
}
