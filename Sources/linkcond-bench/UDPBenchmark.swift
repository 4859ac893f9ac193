import Foundation
import LinkConditioner
import LoopbackPeers

/// Request/response datagram rate to a UDP echo server, one datagram outstanding, for `seconds`: datagrams
/// answered per second and the p50 round trip. A lost datagram ends the run (none are expected under `none`).
private func udpRequestResponse(port: UInt16, size: Int, seconds: Double) throws -> (rate: Double, p50: Double) {
    let client = try TestDatagramSocket(timeout: 1)
    defer { client.close() }
    let datagram = [UInt8](repeating: 0x42, count: size)
    var samples: [Double] = []
    let start = MonotonicClock().now()
    while secondsSince(start) < seconds {
        let sent = MonotonicClock().now()
        try client.send(datagram, to: port)
        guard client.receive() != nil else { throw TestError("datagram to port \(port) went unanswered") }
        samples.append(secondsSince(sent))
    }
    let elapsed = secondsSince(start)
    samples.sort()
    return (Double(samples.count) / elapsed, samples[samples.count / 2])
}

/// Prints the UDP datagram rate through linkcond under `none` next to the direct rate, for small and large datagrams.
func benchmarkUDP(quick: Bool) throws {
    let seconds = quick ? 1.0 : 3.0
    print("## UDP datagram rate through linkcond under none vs direct (request/response to an echo server, one outstanding)")
    let echo = try TestDatagramServer()
    defer { echo.stop() }
    let relay = try ConditionedProxy.udpInFront(of: echo.port, profile: .none)
    defer { relay.stop() }
    for size in [64, 1200] {
        let direct = try udpRequestResponse(port: echo.port, size: size, seconds: seconds)
        let through = try udpRequestResponse(port: relay.listeners[0].address.port, size: size, seconds: seconds)
        print(String(format: "%5d B  direct %8.0f datagrams/s (p50 %4.0f µs)   linkcond %8.0f datagrams/s (p50 %4.0f µs)  %.2f × direct",
                     size, direct.rate, direct.p50 * 1e6, through.rate, through.p50 * 1e6, through.rate / direct.rate))
    }
    print("")
}
