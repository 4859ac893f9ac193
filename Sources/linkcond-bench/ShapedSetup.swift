import Foundation
import LinkConditioner
import LoopbackPeers

/// Connection set-up through a shaped link (issue 36 item 4): the time linkcond adds to connect-until-one-byte-echoed
/// under the built-in `lte`, with the emulated delays not counted, against HAProxy's set-up p50 from the same run.
///
/// The target row runs `lte` with its delays set to zero: its rates, queues and the model's handshake stay, and
/// nothing emulated is left to subtract, so the row is linkcond's own time with no timer's error in it. A second row
/// runs `lte` itself and subtracts the two round trips its handshake and first exchange take (the SYN, the SYN-ACK,
/// the byte and its echo); it checks the first, but carries the error of three timed waits, so it has no target.
func shapedSetupRows(echoPort: UInt16, samples: Int, direct: Double?, haproxy: Double?) throws {
    guard let lte = Profile.builtIn(named: "lte") else { throw TestError("no built-in profile lte") }
    let undelayed = try lte.setting("delay", to: "0 ms")
    let zeroDelay = try LinkcondPeer(profile: undelayed.rendered, upstream: echoPort)
    defer { zeroDelay.stop() }
    let p50 = medianOf { quantile(try setupTimes(port: zeroDelay.relayPort, samples: samples), 0.5) }
    report.add(
        "linkcond lte, delays 0", p50, "s", versus: [("direct", direct), ("haproxy", haproxy)],
        target: "≤ haproxy", met: p50.flatMap { value in haproxy.map { value <= $0 } },
        note: "lte's rates, queues and handshake; nothing emulated to subtract")

    // Two round trips of emulated delay: the SYN up, the SYN-ACK down, then the byte up and its echo down. One byte
    // serialises in under a microsecond at lte's rates, which is left in.
    let emulated = (lte.roundTrip * 2).seconds
    let delayed = try LinkcondPeer(profile: lte.rendered, upstream: echoPort)
    defer { delayed.stop() }
    let lteSamples = quick ? 10 : 40
    let delayedP50 = medianOf {
        quantile(try setupTimes(port: delayed.relayPort, samples: lteSamples, warmUp: 2), 0.5) - emulated
    }
    report.add(
        "linkcond lte, less its 2 RTTs", delayedP50, "s", versus: [("direct", direct), ("haproxy", haproxy)],
        note: String(
            format: "%d connections, %.0f ms of emulated delay subtracted; includes timer error", lteSamples,
            emulated * 1e3))
}
