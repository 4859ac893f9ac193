import Foundation
import LinkConditioner
import LoopbackPeers

/// Uplink delay asked against the added round trip, from 1 ms to 10 s: p99 of (round trip − delay − linkcond's own
/// round trip under none, measured right before with the messages as far apart).
///
/// The round trip under none is measured before each run of a cell, with its spacing. With messages 10 or 20 ms
/// apart every process on the path (linkcond, the echo server, this bench) wakes from a longer sleep than 2 ms apart,
/// which on the 2-vCPU VM made the unshaped round trip 15–55 µs longer; and on a shared machine that round trip
/// drifts by more than the target within a minute (73 to 295 µs in one series). A single figure taken at the start
/// with 2 ms spacing counted both as delay error.
///
/// The cells run twice: as linkcond runs by default, and with `run --realtime` and the echo server's threads in
/// SCHED_FIFO too (when this process may use it), so a busy machine's late wake-ups of either are out of the error.
func delayGroup() throws {
    report.section("Delay precision: round trip − asked delay − round trip under none just before, as far apart")
    let echo = try TestServer.echo()
    defer { echo.stop() }
    try delayCells(echoPort: echo.port, realtime: false)
    guard let realtimeEcho = realtimeEchoServer() else {
        report.skip(
            "--realtime: 1 ms: error p99", because: "this process may not use SCHED_FIFO (needs root or CAP_SYS_NICE)")
        return
    }
    defer { realtimeEcho.stop() }
    try delayCells(echoPort: realtimeEcho.port, realtime: true)
}

/// An echo server whose threads run in SCHED_FIFO: started from a thread that entered it and passes it on; nil when
/// the kernel refuses.
private func realtimeEchoServer() -> TestServer? {
    let result = LockedBox<TestServer?>(nil)
    let started = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        defer { started.signal() }
        guard (try? RealtimeScheduling.enterFIFO(priority: 1, passedOn: true)) != nil else { return }
        result.mutate { $0 = try? TestServer.echo() }
    }
    started.wait()
    return result.value
}

/// One row per delay from 1 ms to 10 s, through linkcond (with `--realtime` when `realtime`) to the echo server.
private func delayCells(echoPort: UInt16, realtime: Bool) throws {
    let label = realtime ? "--realtime: " : ""
    // 200 samples a cell, so p99 is a p99 (two samples lie above it) rather than the single worst sample; the
    // samples are staggered and in flight together, so a 10 s cell takes 4 s of sends plus its delay.
    var cells: [(Int, Int, Double)] = [(1, 200, 0.003), (10, 200, 0.003), (100, 200, 0.003), (1000, 200, 0.01)]
    if !quick { cells.append((10_000, 200, 0.02)) }
    let none = try LinkcondPeer(profile: "", upstream: echoPort, realtime: realtime)
    defer { none.stop() }
    var baselines: [Double: [Double]] = [:]
    for (milliseconds, samples, gap) in cells {
        let asked = Double(milliseconds) / 1000
        var p99s: [Double] = []
        var p50s: [Double] = []
        var minimums: [Double] = []
        var maximums: [Double] = []
        var ownP99s: [Double] = []
        var ownMaximums: [Double] = []
        for _ in 0..<(milliseconds >= 10_000 ? 1 : runs) {
            do {
                let baseline = quantile(
                    try staggeredRoundTrips(port: none.relayPort, samples: samples, gap: gap, timeout: 5), 0.5)
                baselines[gap, default: []].append(baseline)
                let delayed = try LinkcondPeer(
                    profile: "uplink.delay = \(milliseconds) ms", upstream: echoPort, realtime: realtime)
                defer { delayed.stop() }
                let errors = try staggeredRoundTrips(
                    port: delayed.relayPort, samples: samples, gap: gap, timeout: 2 * asked + 10
                )
                .map { $0 - asked - baseline }
                p50s.append(quantile(errors, 0.5))
                p99s.append(quantile(errors, 0.99))
                if let own = delayed.deliveryLateness("uplink") {
                    ownP99s.append(own.p99)
                    ownMaximums.append(own.max)
                }
                minimums.append(errors.first ?? .nan)
                maximums.append(errors.last ?? .nan)
            } catch { print("   (a run failed: \(error))") }
        }
        let p99 = median(p99s)
        report.add(
            "\(label)\(milliseconds) ms: error p99", p99, "s", target: "≤ 0.1 ms", met: p99.map { $0 <= 1e-4 },
            note: median(p50s).map {
                "p50 " + Report.format($0, "s") + ", min " + Report.format(median(minimums) ?? .nan, "s")
                    + ", max " + Report.format(median(maximums) ?? .nan, "s")
            })
        report.add(
            "\(label)\(milliseconds) ms: linkcond's own lateness p99", median(ownP99s), "s",
            note: median(ownMaximums).map {
                "max " + Report.format($0, "s") + "; released bytes written after their release"
            })
    }
    if quick { report.skip("\(label)10000 ms: error p99", because: "left out of --quick (one cell takes about 20 s)") }
    for gap in baselines.keys.sorted() {
        report.add(
            "\(label)round trip under none p50, \(Int(gap * 1000)) ms apart", median(baselines[gap] ?? []), "s",
            note: "median of the \(baselines[gap]?.count ?? 0) figures subtracted")
    }
}

/// Downlink rate asked against payload delivered, 64 kbit/s to 1 Gbit/s, timed from the first byte.
func rateGroup() throws {
    report.section("Rate precision: payload delivered vs asked, downlink, from the first segment")
    for (label, bits) in [
        ("64 kbit/s", 64e3), ("1 Mbit/s", 1e6), ("10 Mbit/s", 10e6), ("100 Mbit/s", 100e6), ("1 Gbit/s", 1e9),
    ] {
        let seconds = quick ? (bits < 1e5 ? 3.0 : 1.5) : 5.0
        let error = medianOf {
            let size = Int(bits / 8 * seconds)
            let source = try TestServer { connection in
                defer { connection.close() }
                try? Payload(size: size, seed: 9).forEachBlock(blockSize: 65536) { try connection.send($0) }
                connection.shutdownWrite()
            }
            defer { source.stop() }
            let shaped = try LinkcondPeer(profile: "downlink.bandwidth = \(label)", upstream: source.port)
            defer { shaped.stop() }
            let client = try TestConnection.connect(port: shaped.relayPort, timeout: 60)
            defer { client.close() }
            // The clock starts at the first read, which takes the whole first segment (released at once, as on
            // a link that delivers whole packets); only the bytes after it count, or at 64 kbit/s one 1448-byte
            // segment in 24 KB would read as +6 %.
            let first = try client.receive(max: 1 << 20)
            let start = MonotonicClock().now()
            let rest = try client.drain()
            guard first.count + rest.count == size else {
                throw TestError("\(first.count + rest.count) of \(size) bytes arrived")
            }
            return (Double(rest.count) * 8 / secondsSince(start) / bits - 1) * 100
        }
        report.add("\(label): error", error, "%", target: "within ±0.5 %", met: error.map { abs($0) <= 0.5 })
    }
}
