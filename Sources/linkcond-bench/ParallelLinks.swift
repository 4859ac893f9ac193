import Foundation
import LinkConditioner
import LoopbackPeers

/// Four shaped links of 1 Gbit/s in one linkcond (four `--listen` pairs, each listener a link of its own), one
/// unpaced iperf3 stream through each at once, with `--threads 1` and `--threads 2` (issue 36 item 2): the
/// aggregate, the worst link's rate error, and how much the second thread adds.
///
/// The clients are unpaced, so each link is held to its rate by linkcond alone and a shortfall is linkcond's.
/// Rates and CPU come from linkcond's own counters over the steady part of the run.
func parallelLinksGroup() throws {
    report.section("4 shaped links of 1 Gbit/s at once (one linkcond, 4 listeners, iperf3 unpaced through each)")
    let linkCount = 4
    let rate = 1e9
    let upstreams = distinctFreePorts(linkCount)
    var servers: [PeerProcess] = []
    defer { for server in servers { server.stop() } }
    for port in upstreams { servers.append(try startIperfServer(port: port)) }
    let seconds = quick ? 2 : 6

    /// Each link's delivered rate over the steady part of one run, the clients started together, and the cores
    /// linkcond kept busy meanwhile; read from linkcond's own counters (see `steadyDelivery`).
    func oneRun(threads: Int) throws -> (rates: [Double], cores: Double) {
        let linkcond = try LinkcondPeer(profile: "bandwidth = 1 Gbit/s", upstreams: upstreams, threads: threads)
        defer { linkcond.stop() }
        let clients = linkcond.relayPorts.map { port -> @Sendable () throws -> IperfResult in
            { try runIperfClient(port: port, seconds: seconds, omit: 1) }
        }
        let window = try steadyDelivery(of: linkcond, seconds: seconds, clients: clients).window
        let rates = try linkcond.relayPorts.map { port in
            guard let rate = window.rate(port) else { throw TestError("no status for the listener on \(port)") }
            return rate
        }
        return (rates, window.cpuSeconds / window.seconds)
    }

    /// The median aggregate, the median of each run's worst link error (signed, in %), and the median cores.
    func measure(threads: Int) -> (aggregate: Double?, worstError: Double?, cores: Double?) {
        var aggregates: [Double] = []
        var worst: [Double] = []
        var cores: [Double] = []
        for _ in 0..<runs {
            do {
                let run = try oneRun(threads: threads)
                aggregates.append(run.rates.reduce(0, +))
                let errors = run.rates.map { ($0 / rate - 1) * 100 }
                worst.append(errors.max { abs($0) < abs($1) } ?? .nan)
                cores.append(run.cores)
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(aggregates), median(worst), median(cores))
    }

    let one = measure(threads: 1)
    let two = measure(threads: 2)
    let wanted = rate * Double(linkCount)
    for (threads, figures) in [(1, one), (2, two)] {
        // The targets are for every core in use: on this 2-core machine, two threads.
        let judged = threads == 2
        report.add(
            "--threads \(threads): aggregate", figures.aggregate, "bit/s",
            target: judged ? "within 1 % of 4 Gbit/s" : nil,
            met: judged ? figures.aggregate.map { abs($0 / wanted - 1) <= 0.01 } : nil,
            note: figures.cores.map { String(format: "linkcond kept %.2f cores busy", $0) })
        report.add(
            "--threads \(threads): worst link's error", figures.worstError, "%",
            target: judged ? "within ±0.1 % each" : nil, met: judged ? figures.worstError.map { abs($0) <= 0.1 } : nil)
    }
    let scaling = two.aggregate.flatMap { value in one.aggregate.map { value / $0 } }
    // Once one loop carries all four links, a second one has nothing to add: the ratio then says so, not a defect.
    let oneThreadSuffices = one.aggregate.map { $0 >= 0.99 * wanted } ?? false
    report.add(
        "2 threads against 1: aggregate", scaling, "×", target: "≥ 1.8×", met: scaling.map { $0 >= 1.8 },
        note: oneThreadSuffices ? "one thread already delivers 4 Gbit/s: the links, not the loop, are the limit" : nil)
}
