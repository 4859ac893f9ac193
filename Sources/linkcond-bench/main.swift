import Foundation
import LinkConditioner
import LoopbackPeers

/// linkcond's benchmark: every figure is printed next to a baseline measured in the same run on loopback.
///
/// Usage: linkcond-bench [--quick] [--working-latency]. Targets from the project's brief are printed with each
/// result; `--working-latency` runs only the queue-discipline latency comparison.
let quick = CommandLine.arguments.contains("--quick")
if CommandLine.arguments.contains("--working-latency") {
    try benchmarkWorkingLatency(quick: quick)
    exit(0)
}
let throughputSeconds = quick ? 1.0 : 3.0
let pingCount = quick ? 500 : 3000

/// Measures one-stream throughput to a sink through `port` for `seconds`, in bits per second of payload.
func throughput(port: UInt16, seconds: Double) throws -> Double {
    let client = try TestConnection.connect(port: port, timeout: 30)
    defer { client.close() }
    let block = [UInt8](repeating: 0x5A, count: 256 * 1024)
    let start = MonotonicClock().now()
    var sent = 0
    while secondsSince(start) < seconds {
        try client.send(block)
        sent += block.count
    }
    client.shutdownWrite()
    _ = try client.drain()
    return Double(sent) * 8 / secondsSince(start)
}

/// A server that reads everything and answers end-of-stream when the client is done.
func sinkServer() throws -> TestServer {
    try TestServer { connection in
        defer { connection.close() }
        _ = try? connection.drain()
        connection.shutdownWrite()
    }
}

/// Round-trip times of `count` 64-byte messages through `port` to an echo server, in seconds, sorted.
func roundTrips(port: UInt16, count: Int) throws -> [Double] {
    let client = try TestConnection.connect(port: port)
    defer { client.close() }
    let message = [UInt8](repeating: 0x42, count: 64)
    var samples: [Double] = []
    for index in 0..<(count + 20) {
        let start = MonotonicClock().now()
        try client.send(message)
        _ = try client.receive(exactly: 64)
        if index >= 20 { samples.append(secondsSince(start)) }
    }
    return samples.sorted()
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

/// Starts socat as a pass-through relay in front of `port`, if socat is installed (three tries at a free port).
func startSocat(upstream port: UInt16) -> (Process, UInt16)? {
    guard let path = ["/usr/bin/socat", "/bin/socat"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    for _ in 0..<3 {
        let listenPort = UInt16.random(in: 40000...60000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["TCP-LISTEN:\(listenPort),bind=127.0.0.1,reuseaddr,fork", "TCP:127.0.0.1:\(port)"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        for _ in 0..<100 where process.isRunning {
            if let probe = try? TestConnection.connect(port: listenPort, timeout: 1) {
                probe.close()
                return (process, listenPort)
            }
            usleep(20_000)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
    return nil
}

func gbps(_ bits: Double) -> String { String(format: "%.2f Gbit/s", bits / 1e9) }
func micros(_ seconds: Double) -> String { String(format: "%.0f µs", seconds * 1e6) }
func millis(_ seconds: Double) -> String { String(format: "%.3f ms", seconds * 1e3) }
func verdict(_ met: Bool) -> String { met ? "met" : "NOT met" }

func proxy(in front: UInt16, _ profile: Profile) throws -> ConditionedProxy {
    try ConditionedProxy.inFront(of: front, profile: profile)
}

print("linkcond benchmark (\(quick ? "quick" : "full") run, loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores)")
print("")

// Pass-through throughput: iperf3 when installed (it out-runs this process's own sender), else a built-in stream.
let iperf3 = ["/usr/bin/iperf3", "/bin/iperf3"].first { FileManager.default.isExecutableFile(atPath: $0) }
var direct = 0.0, through = 0.0
var socatThroughput: Double?
var throughputTool = "built-in sender"
if let iperf3 {
    throughputTool = "iperf3"
    let server = IperfServer(path: iperf3)
    direct = server.measure(port: server.port, seconds: throughputSeconds)
    let passThrough = try ConditionedProxy.inFront(of: server.port, profile: .none)
    through = server.measure(port: passThrough.port, seconds: throughputSeconds)
    passThrough.stop()
    if let (process, port) = startSocat(upstream: server.port) {
        socatThroughput = server.measure(port: port, seconds: throughputSeconds)
        process.terminate()
        process.waitUntilExit()
    }
    server.stop()
} else {
    let sink = try sinkServer()
    direct = try throughput(port: sink.port, seconds: throughputSeconds)
    let passThrough = try proxy(in: sink.port, .none)
    through = try throughput(port: passThrough.port, seconds: throughputSeconds)
    passThrough.stop()
    if let (process, port) = startSocat(upstream: sink.port) {
        socatThroughput = try? throughput(port: port, seconds: throughputSeconds)
        process.terminate()
        process.waitUntilExit()
    }
    sink.stop()
}
print("## Pass-through throughput, one TCP stream, profile none (\(throughputTool))")
print("direct            \(gbps(direct))")
print("linkcond          \(gbps(through))  (\(String(format: "%.2f", through / direct)) × direct)")
if let socatThroughput {
    print("socat             \(gbps(socatThroughput))  (linkcond/socat = \(String(format: "%.2f", through / socatThroughput)); target ≥ 1: \(verdict(through >= socatThroughput)))")
} else {
    print("socat             not installed (apt-get install socat to compare)")
}
print("")

// Added latency: the three paths are sampled in interleaved rounds so that CPU frequency and scheduling drift
// affect them alike.
let echo = try TestServer.echo()
let latencyProxy = try proxy(in: echo.port, .none)
let socat = startSocat(upstream: echo.port)
var directRTT: [Double] = [], proxyRTT: [Double] = [], socatRTT: [Double] = []
let rounds = 10
for _ in 0..<rounds {
    directRTT += try roundTrips(port: echo.port, count: pingCount / rounds)
    proxyRTT += try roundTrips(port: latencyProxy.port, count: pingCount / rounds)
    if let (_, port) = socat { socatRTT += (try? roundTrips(port: port, count: pingCount / rounds)) ?? [] }
}
directRTT.sort()
proxyRTT.sort()
socatRTT.sort()
latencyProxy.stop()
if let (process, _) = socat {
    process.terminate()
    process.waitUntilExit()
}
print("## 64-byte round trip, \(pingCount) samples each in \(rounds) interleaved rounds, profile none (p50 / p99)")
print("direct            \(micros(percentile(directRTT, 0.5))) / \(micros(percentile(directRTT, 0.99)))")
let addedP50 = percentile(proxyRTT, 0.5) - percentile(directRTT, 0.5)
print("linkcond          \(micros(percentile(proxyRTT, 0.5))) / \(micros(percentile(proxyRTT, 0.99)))  (added p50 \(micros(addedP50)); target < 50 µs: \(verdict(addedP50 < 50e-6)))")
if !socatRTT.isEmpty {
    let socatAdded = percentile(socatRTT, 0.5) - percentile(directRTT, 0.5)
    print("socat             \(micros(percentile(socatRTT, 0.5))) / \(micros(percentile(socatRTT, 0.99)))  (added p50 \(micros(socatAdded)))")
}
print("")

// Rate accuracy.
print("## Rate accuracy, downlink, payload bytes (target ±2 %)")
for megabits in [1.0, 10.0, 100.0] {
    let rate = BitRate.mbps(megabits)
    let seconds = quick ? 1.5 : 4.0
    let size = Int(rate.bitsPerSecond / 8 * seconds)
    let source = try TestServer { connection in
        defer { connection.close() }
        try? Payload(size: size, seed: 9).forEachBlock { try connection.send($0) }
        connection.shutdownWrite()
    }
    var profile = Profile.none
    profile.downlink.bandwidth = rate
    let shaped = try proxy(in: source.port, profile)
    let client = try TestConnection.connect(port: shaped.port, timeout: 60)
    _ = try client.receive(exactly: 1)
    let start = MonotonicClock().now()
    let rest = try client.drain()
    let achieved = Double(rest.count) * 8 / secondsSince(start)
    client.close()
    shaped.stop()
    source.stop()
    let error = (achieved / rate.bitsPerSecond - 1) * 100
    print(String(format: "%6.0f Mbit/s asked  %9.3f Mbit/s delivered  error %+.2f %%  ", megabits, achieved / 1e6, error) + verdict(abs(error) <= 2))
}
print("")

// Delay accuracy.
print("## Delay accuracy: uplink delay asked vs added round trip (target: error p99 < 1 ms)")
for (milliseconds, samples) in [(10, quick ? 50 : 200), (100, quick ? 20 : 50), (1000, quick ? 4 : 10)] {
    var profile = Profile.none
    profile.uplink.delay = .milliseconds(milliseconds)
    let delayed = try proxy(in: echo.port, profile)
    let rtts = try roundTrips(port: delayed.port, count: samples)
    delayed.stop()
    let baseline = percentile(directRTT, 0.5)
    let errors = rtts.map { $0 - baseline - Double(milliseconds) / 1000 }.sorted()
    let p99 = percentile(errors.map(abs).sorted(), 0.99)
    print("\(String(format: "%5d", milliseconds)) ms asked  error p50 \(millis(percentile(errors, 0.5)))  p99 \(millis(p99))  min \(millis(errors.first!))  \(verdict(p99 < 0.001))")
}
echo.stop()
try runSetupBenchmark(quick: quick)
try benchmarkUDP(quick: quick)
try benchmarkWorkingLatency(quick: quick)
