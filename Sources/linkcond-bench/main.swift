import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// linkcond's benchmark (issue 13): linkcond beside direct loopback, socat, HAProxy (with and without splice) and
/// the kernel's tbf, every peer run by the benchmark itself in the same run; each figure is the median of N runs.
let usage = """
    usage: linkcond-bench [--quick] [--runs N] [--json FILE] [--only GROUP[,GROUP…]] [--threads N]
      --quick        a run of 2-3 min: 1 run per figure, short cells, the 10 s delay cell left out
      --runs N       runs per figure, the median is printed (default 3, 1 with --quick)
      --json FILE    also write the table as JSON for tracking ("-" for standard output)
      --working-latency  only the queue-discipline working-latency comparison (fifo, codel, fq_codel)
      --model [GB]   only the TCP model's CPU per GB over a simulated clock, no sockets (default 2 GB a profile)
      --model-grid [--runs N] [--cells R/RTT/LOSS,…] [--frames] [--lines 'KEY = VALUE; …']
                     only the accuracy grid's transfers through the TCP model in virtual time, as raw.csv rows
      --only GROUPS  only these groups: throughput, shaped, streams, links, latency, setup, scale, udp, delay, rate,
                     record
      --threads N    run every linkcond with `run --threads N` (default: linkcond's own, one per core)
    The peers come from Debian (scripts/bench installs them); linkcond runs as its own process from the same directory.
    """
if let index = CommandLine.arguments.firstIndex(of: "--model") {
    let amount = CommandLine.arguments.dropFirst(index + 1).first.flatMap(Double.init) ?? 2
    guard amount > 0, amount <= 1000 else {
        FileHandle.standardError.write(Data("linkcond-bench: --model: expected gigabytes from 0 to 1000\n".utf8))
        exit(2)
    }
    benchmarkModelCost(gigabytes: amount)
    exit(0)
}
if let index = CommandLine.arguments.firstIndex(of: "--model-grid") {
    do { try ModelGrid(Array(CommandLine.arguments.dropFirst(index + 1))).run() } catch {
        FileHandle.standardError.write(Data("linkcond-bench: \(error)\n".utf8))
        exit(2)
    }
    exit(0)
}
if CommandLine.arguments.contains("--working-latency") {
    try benchmarkWorkingLatency(quick: CommandLine.arguments.contains("--quick"))
    exit(0)
}

struct BenchOptions {
    var quick = false
    var runs = 3
    var json: String?
    /// `run --threads` for every linkcond started; nil leaves linkcond's default.
    var threads: Int?
    var groups: Set<String> = [
        "throughput", "shaped", "streams", "links", "latency", "setup", "scale", "udp", "delay", "rate", "record",
    ]

    init(_ arguments: [String]) throws {
        var runsGiven = false
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--runs":
                guard let text = iterator.next(), let value = Int(text), (1...50).contains(value) else {
                    throw TestError("--runs: expected a whole number from 1 to 50")
                }
                runs = value
                runsGiven = true
            case "--json":
                guard let path = iterator.next() else { throw TestError("--json: expected a file name or -") }
                json = path
            case "--only":
                let names = Set((iterator.next() ?? "").split(separator: ",").map(String.init))
                guard !names.isEmpty, names.isSubset(of: groups) else {
                    throw TestError("--only: expected groups from \(groups.sorted().joined(separator: ", "))")
                }
                groups = names
            case "--threads":
                guard let text = iterator.next(), let value = Int(text), (1...256).contains(value) else {
                    throw TestError("--threads: expected a whole number from 1 to 256")
                }
                threads = value
            case "--help", "-h":
                print(usage)
                exit(0)
            default: throw TestError("unknown option \(argument)\n\(usage)")
            }
        }
        if quick && !runsGiven { runs = 1 }
    }
}

let options: BenchOptions
do { options = try BenchOptions(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("linkcond-bench: \(error)\n".utf8))
    exit(2)
}

signal(SIGPIPE, SIG_IGN)
let signalQueue = DispatchQueue(label: "signals")
let signalSources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
    source.setEventHandler {
        BenchCleanup.shared.runAll()
        FileHandle.standardError.write(Data("linkcond-bench: interrupted; peers stopped, namespaces removed\n".utf8))
        exit(130)
    }
    source.resume()
    return source
}

nonisolated(unsafe) let report = Report()
let runs = options.runs
let quick = options.quick
let loadAtStart = loadAverage()
let startedAt = MonotonicClock().now()
print(
    "linkcond-bench: \(quick ? "quick" : "full") run, median of \(runs) run\(runs == 1 ? "" : "s"), loopback, "
        + "\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadAtStart)")
print(quick ? "expected length: 2-3 min" : "expected length: about \(7 + runs * 4) min")

/// The median over `runs` runs of `body`; a run that throws is left out and its error noted.
func medianOf(_ body: () throws -> Double) -> Double? {
    median(
        (0..<runs).compactMap { _ in
            do { return try body() } catch {
                print("   (a run failed: \(error))")
                return nil
            }
        })
}

/// Runs `body`, turning a failure into a skipped row so one missing peer does not stop the benchmark.
func measuring(_ name: String, _ body: () throws -> Void) {
    do { try body() } catch { report.skip(name, because: "\(error)") }
}

do {
    if options.groups.contains("throughput") { try throughputGroup() }
    if options.groups.contains("record") { try recordingGroup() }
    if options.groups.contains("shaped") { try shapedGroup() }
    if options.groups.contains("streams") { try streamsGroup() }
    if options.groups.contains("links") { try parallelLinksGroup() }
    if options.groups.contains("latency") { try latencyGroup() }
    if options.groups.contains("setup") { try setupGroup() }
    if options.groups.contains("scale") { try scaleGroup() }
    if options.groups.contains("udp") { try udpGroup() }
    if options.groups.contains("delay") { try delayGroup() }
    if options.groups.contains("rate") { try rateGroup() }
} catch {
    print("linkcond-bench: \(error)")
    BenchCleanup.shared.runAll()
    exit(1)
}
BenchCleanup.shared.runAll()

let length = secondsSince(startedAt)
print(String(format: "\nlength %.0f s; load average at start %@, at end %@", length, loadAtStart, loadAverage()))
if let path = options.json {
    let header: [String: Any] = [
        "mode": quick ? "quick" : "full", "runs": runs, "seconds": length,
        "load_start": loadAtStart, "load_end": loadAverage(),
        "cores": ProcessInfo.processInfo.activeProcessorCount,
        "date": ISO8601DateFormatter().string(from: Date()),
    ]
    let data = report.json(header: header)
    if path == "-" {
        FileHandle.standardOutput.write(data)
    } else {
        _ = FileManager.default.createFile(atPath: path, contents: data)
    }
}
_ = signalSources
