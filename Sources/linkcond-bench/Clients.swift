import Foundation
import LinkConditioner
import LoopbackPeers

/// What one `iperf3 -c` run reported.
struct IperfResult {
    /// Payload bits per second the receiver counted (after the omitted warm-up).
    var receivedRate: Double
    /// Payload bytes the client sent over the whole run, warm-up included (for CPU per byte).
    var sentBytes: Double
    /// Receiver rate of each parallel stream.
    var streamRates: [Double]
    /// UDP only: datagrams the receiver expected and the ones it lost.
    var datagrams: Double = 0
    var lostDatagrams: Double = 0
    var seconds: Double = 0
}

/// An `iperf3 -s` on `port` (bound to `host`, in `namespace` when given).
func startIperfServer(port: UInt16, host: String = "127.0.0.1", namespace: String? = nil) throws -> PeerProcess {
    guard let iperf3 = Tools.iperf3 else { throw TestError("iperf3 is not installed (scripts/bench installs it)") }
    let server = try PeerProcess(
        name: "iperf3", path: iperf3, arguments: ["-s", "-B", host, "-p", String(port)], namespace: namespace)
    guard server.waitListening(port: port) else {
        server.stop()
        throw TestError("iperf3 -s did not listen on \(port)")
    }
    return server
}

/// Runs `iperf3 -c host -p port` with `extra` arguments and parses its JSON.
/// With `inExec`, iperf3 runs inside `linkcond exec` (profile none) and reaches the host's loopback at 198.18.0.2.
func runIperfClient(
    host: String = "127.0.0.1", port: UInt16, seconds: Int, omit: Int = 0, extra: [String] = [],
    namespace: String? = nil, inExec: Bool = false
) throws -> IperfResult {
    guard let iperf3 = Tools.iperf3 else { throw TestError("iperf3 is not installed (scripts/bench installs it)") }
    let output = Pipe()
    let arguments =
        ["-c", inExec ? execGateway : host, "-p", String(port), "-t", String(seconds), "-O", String(omit), "-J"] + extra
    let (path, launched) = try inExec ? insideExec(iperf3, arguments) : (iperf3, arguments)
    let client = try PeerProcess(
        name: "iperf3 -c", path: path, arguments: launched, namespace: namespace, output: output)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    client.process.waitUntilExit()
    client.stop()
    guard let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let end = json["end"] as? [String: Any]
    else { throw TestError("iperf3 \(arguments.joined(separator: " ")) printed no result") }
    if let error = json["error"] as? String { throw TestError("iperf3: \(error)") }
    let intervals = (json["intervals"] as? [[String: Any]]) ?? []
    let sent = intervals.compactMap { ($0["sum"] as? [String: Any])?["bytes"] as? Double }.reduce(0, +)
    if extra.contains("-u") {
        let sum = end["sum"] as? [String: Any] ?? [:]
        return IperfResult(
            receivedRate: sum["bits_per_second"] as? Double ?? 0, sentBytes: sent, streamRates: [],
            datagrams: sum["packets"] as? Double ?? 0, lostDatagrams: sum["lost_packets"] as? Double ?? 0,
            seconds: sum["seconds"] as? Double ?? Double(seconds))
    }
    let received = end["sum_received"] as? [String: Any] ?? [:]
    let streams = (end["streams"] as? [[String: Any]] ?? []).compactMap {
        ($0["receiver"] as? [String: Any])?["bits_per_second"] as? Double
    }
    return IperfResult(
        receivedRate: received["bits_per_second"] as? Double ?? 0, sentBytes: sent, streamRates: streams,
        seconds: received["seconds"] as? Double ?? Double(seconds))
}

/// Jain's fairness index of `rates`: (Σx)² / (n·Σx²), 1 when every stream got the same.
func jainFairness(_ rates: [Double]) -> Double {
    let sum = rates.reduce(0, +)
    let squares = rates.reduce(0) { $0 + $1 * $1 }
    return rates.isEmpty || squares == 0 ? .nan : sum * sum / (Double(rates.count) * squares)
}

/// A `sockperf sr --tcp` echo server on `port`.
func startSockperfServer(port: UInt16) throws -> PeerProcess {
    guard let sockperf = Tools.sockperf else {
        throw TestError("sockperf is not installed (scripts/bench installs it)")
    }
    let server = try PeerProcess(
        name: "sockperf sr", path: sockperf, arguments: ["sr", "--tcp", "-i", "127.0.0.1", "-p", String(port)])
    guard server.waitListening(port: port) else {
        server.stop()
        throw TestError("sockperf sr did not listen on \(port)")
    }
    return server
}

/// 64-byte TCP ping-pong with `sockperf pp --full-rtt` paced at `rate` messages per second: round trip p50 and p99.
/// With `inExec`, the client runs inside `linkcond exec` (profile none).
func sockperfPingPong(port: UInt16, seconds: Int, rate: Int, inExec: Bool = false) throws -> (p50: Double, p99: Double)
{
    guard let sockperf = Tools.sockperf else {
        throw TestError("sockperf is not installed (scripts/bench installs it)")
    }
    let output = Pipe()
    let arguments = [
        "pp", "--tcp", "-i", inExec ? execGateway : "127.0.0.1", "-p", String(port), "-m", "64", "-t", String(seconds),
        "--mps=\(rate)", "--full-rtt",
    ]
    let (path, launched) = try inExec ? insideExec(sockperf, arguments) : (sockperf, arguments)
    let client = try PeerProcess(name: "sockperf pp", path: path, arguments: launched, output: output)
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    client.process.waitUntilExit()
    client.stop()
    func percentile(_ label: String) -> Double? {
        guard let line = text.split(separator: "\n").first(where: { $0.contains("percentile \(label) =") }),
            let value = line.split(separator: "=").last.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) })
        else { return nil }
        return value * 1e-6
    }
    guard let p50 = percentile("50.000"), let p99 = percentile("99.000") else {
        throw TestError("sockperf pp printed no percentiles")
    }
    return (p50, p99)
}

/// The host's loopback as a program inside `linkcond exec` reaches it.
let execGateway = "198.18.0.2"

/// The command line that runs `path arguments…` inside `linkcond exec` under the none profile.
func insideExec(_ path: String, _ arguments: [String]) throws -> (String, [String]) {
    guard let binary = LinkcondPeer.binary else {
        throw TestError(
            "no linkcond binary next to linkcond-bench: build it with `swift build -c release` (scripts/bench does)")
    }
    return (
        binary,
        ["exec", "--control", scratch + "/exec-\(UInt32.random(in: 0...UInt32.max)).sock", "--", path] + arguments
    )
}

/// What linkcond delivered on the uplink of each TCP listener between two status reads in the steady part of a
/// run, and the CPU it used between them: a rate timed to a fraction of a millisecond and free of how iperf3 times
/// its own start and end, which moves a 2 s figure by tenths of a percent.
struct SteadyDelivery {
    /// Bytes delivered in the window, by listener port.
    var bytes: [UInt16: Double]
    var seconds: Double
    var cpuSeconds: Double

    /// Payload bits per second through the listener on `port`.
    func rate(_ port: UInt16) -> Double? { bytes[port].map { $0 * 8 / seconds } }
    var totalRate: Double { bytes.values.reduce(0, +) * 8 / seconds }
    var cpuPerGigabyte: Double { cpuSeconds / (bytes.values.reduce(0, +) / 1e9) }
}

/// Runs each of `clients` (an iperf3 client of `seconds` after a 1 s omitted warm-up) on a thread of its own while
/// reading `linkcond`'s delivered bytes and CPU every 50 ms. The window starts 1 s after the bytes began to flow (the
/// clients' warm-up, however long their connections took to open) and ends 0.3 s before the clients' end. Returns
/// the clients' results, in order, and that window.
func steadyDelivery(
    of linkcond: LinkcondPeer, seconds: Int, clients: [@Sendable () throws -> IperfResult]
) throws -> (results: [IperfResult], window: SteadyDelivery) {
    let results = LockedBox<[Int: Result<IperfResult, any Error>]>([:])
    let finished = DispatchGroup()
    for (index, client) in clients.enumerated() {
        finished.enter()
        Thread.detachNewThread {
            let result = Result { try client() }
            results.mutate { $0[index] = result }
            finished.leave()
        }
    }
    var samples: [(bytes: [UInt16: Double], at: Instant, cpu: Double)] = []
    repeat {
        let cpu = linkcond.peer.cpuSeconds()
        if let read = linkcond.tcpBytesDelivered("uplink") { samples.append((read.bytes, read.at, cpu)) }
    } while finished.wait(timeout: .now() + .milliseconds(50)) == .timedOut
    let outcomes = try (0..<clients.count).map { index in
        try (results.value[index] ?? .failure(TestError("client \(index + 1) gave no result"))).get()
    }
    // The clients' control connections carry a few hundred bytes; a megabyte means their streams are flowing.
    guard let flowing = samples.first(where: { $0.bytes.values.reduce(0, +) > 1e6 }),
        let first = samples.first(where: { ($0.at - flowing.at).seconds >= 1 }),
        let last = samples.last(where: { ($0.at - flowing.at).seconds <= 1 + Double(seconds) - 0.3 }),
        last.at > first.at
    else { throw TestError("linkcond's status gave no steady window (\(samples.count) reads)") }
    let bytes = last.bytes.reduce(into: [UInt16: Double]()) { window, entry in
        window[entry.key] = entry.value - (first.bytes[entry.key] ?? 0)
    }
    let window = SteadyDelivery(bytes: bytes, seconds: (last.at - first.at).seconds, cpuSeconds: last.cpu - first.cpu)
    return (outcomes, window)
}
