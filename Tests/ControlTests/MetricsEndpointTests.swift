import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `GET /metrics` speaks Prometheus' text exposition format, checked by Prometheus' own Python client parser.
@Suite(.serialized)
struct MetricsEndpointTests {
    /// Whether python3 with prometheus_client is installed (scripts/test installs it).
    static let parserAvailable = PythonScript.canImport("prometheus_client")

    /// Parses stdin with prometheus_client and prints each sample as JSON: name, labels, value, and family type.
    static let parser = """
        import json, math, sys
        from prometheus_client.parser import text_string_to_metric_families
        samples = []
        for family in text_string_to_metric_families(sys.stdin.read()):
            for sample in family.samples:
                samples.append({"family": family.name, "type": family.type, "name": sample.name,
                                "labels": sample.labels, "infinite": math.isinf(sample.value),
                                "value": sample.value if math.isfinite(sample.value) else 0})
        print(json.dumps(samples))
        """

    struct Sample: Decodable {
        var family: String
        var type: String
        var name: String
        var labels: [String: String]
        var value: Double
        var infinite: Bool
    }

    @Test(.enabled(if: parserAvailable, "needs python3 with prometheus_client (pip install prometheus_client)"))
    func prometheusParsesTheMetricsOfALiveTransferWithCountersPerListenerAndDirection() throws {
        let download = try SteadyDownload(profile: Profile.builtIn(named: "3g")!)
        defer { download.stop() }
        try download.waitForBytes(32 * 1024)

        let text = try download.body(of: "/metrics")
        let output = try PythonScript.run(Self.parser, input: text)
        let samples = try JSONDecoder().decode([Sample].self, from: Data(output.utf8))

        let listener = "127.0.0.1:\(download.proxy.port)"
        let delivered = samples.filter {
            $0.name == "linkcond_link_delivered_bytes_total" && $0.labels["listener"] == listener
        }
        #expect(Set(delivered.map { $0.labels["direction"] }) == ["uplink", "downlink"])
        #expect(delivered.allSatisfy { $0.type == "counter" && $0.labels["kind"] == "tcp" })
        let downlink = try #require(delivered.first { $0.labels["direction"] == "downlink" })
        #expect(downlink.value >= 32 * 1024, "\(text)")
        #expect(samples.contains { $0.name == "linkcond_connections_active" && $0.type == "gauge" && $0.value == 1 })
        #expect(
            samples.contains {
                $0.name == "linkcond_connections_excluded_total" && $0.type == "counter"
                    && $0.labels["listener"] == listener && $0.value == 0
            })
        #expect(
            samples.contains { $0.name == "linkcond_link_queue_delay_seconds" && $0.labels["direction"] == "downlink" })
        let lateness = samples.filter {
            $0.name == "linkcond_delivery_lateness_seconds" && $0.labels["direction"] == "downlink"
        }
        #expect(Set(lateness.compactMap { $0.labels["quantile"] }) == ["0.5", "0.99", "1"], "\(text)")
        #expect(lateness.allSatisfy { $0.type == "summary" && $0.value >= 0 })
        #expect(
            samples.contains {
                $0.name == "linkcond_delivery_lateness_seconds_count" && $0.labels["direction"] == "downlink"
                    && $0.value > 0
            })
        #expect(samples.allSatisfy { $0.name.hasPrefix("linkcond_") })
        #expect(samples.filter { $0.type == "counter" }.allSatisfy { $0.name.hasSuffix("_total") })
    }

    @Test(.enabled(if: parserAvailable, "needs python3 with prometheus_client (pip install prometheus_client)"))
    func anOfflineLinkWithQueuedBytesReportsAnInfiniteQueueDelayThatPrometheusReads() throws {
        let download = try SteadyDownload(profile: Profile.builtIn(named: "3g")!)
        defer { download.stop() }
        try download.waitForBytes(32 * 1024)
        download.proxy.goOffline(.blackhole)

        let text = try download.body(of: "/metrics")
        let samples = try JSONDecoder().decode(
            [Sample].self, from: Data(try PythonScript.run(Self.parser, input: text).utf8))

        #expect(samples.contains { $0.name == "linkcond_offline" && $0.value == 1 })
        let delay = try #require(
            samples.first { $0.name == "linkcond_link_queue_delay_seconds" && $0.labels["direction"] == "downlink" })
        let queued = try #require(
            samples.first { $0.name == "linkcond_link_queued_bytes" && $0.labels["direction"] == "downlink" })
        #expect(queued.value == 0 ? delay.value == 0 : delay.infinite, "\(text)")
    }
}

/// Runs short Python programs for tests that check linkcond's output with a real third-party parser or client.
enum PythonScript {
    static func canImport(_ module: String) -> Bool {
        (try? run("import \(module)", input: "")) != nil
    }

    /// Runs `source` with `input` on stdin and returns stdout; throws with stderr when it exits non-zero.
    static func run(_ source: String, input: String, arguments: [String] = [], timeout: Double = 120) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", source] + arguments
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let output = LockedBox(Data())
        let errors = LockedBox(Data())
        let done = DispatchGroup()
        for (pipe, box) in [(stdout, output), (stderr, errors)] {
            done.enter()
            Thread.detachNewThread {
                box.value = pipe.fileHandleForReading.readDataToEndOfFile()
                done.leave()
            }
        }
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw TestError("python3 did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestError(
                "python3 exited \(process.terminationStatus): \(String(decoding: errors.value, as: UTF8.self))")
        }
        return String(decoding: output.value, as: UTF8.self)
    }
}
