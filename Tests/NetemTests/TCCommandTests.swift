import Foundation
import Testing

/// `linkcond tc` run as a user would, against a device in a namespace the test creates.
@Suite(
    "linkcond tc on the command line", .serialized,
    .enabled(if: NamespacePair.isSupported, "needs root, network namespaces, ip, tc and iperf3"),
    .enabled(if: TCBinary.url != nil, "the linkcond binary is not built next to the tests")
)
struct TCCommandTests {
    @Test func withoutCapNetAdminTheErrorSaysSoAndNothingChanges() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()

        let result = try Shell.runCapturing([
            "ip", "netns", "exec", pair.near, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", TCBinary.url!.path, "tc", "apply", pair.nearDevice, "DSL",
        ])

        #expect(result.status == 1)
        #expect(result.stderr.contains("needs CAP_NET_ADMIN"), "stderr: \(result.stderr)")
        #expect(try pair.snapshot() == before)
    }

    /// With --netns, the namespace is entered first (setns needs CAP_SYS_ADMIN): the error names that capability,
    /// the one needed next, and the namespace.
    @Test func withoutCapabilitiesNetnsSaysWhichCapabilityIsMissingInWhichNamespace() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()

        let result = try Shell.runCapturing([
            "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
            TCBinary.url!.path, "tc", "apply", pair.nearDevice, "DSL", "--rate-only", "--netns", pair.near,
        ])

        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                "cannot enter network namespace \"\(pair.near)\": permission denied: linkcond needs CAP_SYS_ADMIN to enter it, then CAP_NET_ADMIN in it"
            ), "stderr: \(result.stderr)")
        #expect(try pair.snapshot() == before)
    }

    /// Root without CAP_NET_ADMIN enters the namespace, and the refused change names the namespace it was refused in.
    @Test func withoutCapNetAdminNetnsNamesTheNamespace() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()

        let result = try Shell.runCapturing([
            "setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin", TCBinary.url!.path, "tc", "apply",
            pair.nearDevice, "DSL", "--rate-only", "--netns", pair.near,
        ])

        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                "permission denied: linkcond needs CAP_NET_ADMIN in network namespace \"\(pair.near)\""),
            "stderr: \(result.stderr)")
        #expect(try pair.snapshot() == before)
    }

    @Test func showPrintsTheProfileTermsReadBackFromTheKernel() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let applied = try Shell.run([
            TCBinary.url!.path, "tc", "apply", pair.nearDevice, "DSL", "--rate-only", "--netns", pair.near,
        ])

        let shown = try Shell.run([TCBinary.url!.path, "tc", "show", pair.nearDevice, "--netns", pair.near])

        #expect(applied.contains("applied dsl on lcv-near (downlink via lc-ifb-2)"))
        #expect(
            shown.hasPrefix(
                """
                lcv-near: conditioned by linkcond
                  uplink:   rate 256 kbit/s of frames, queue 256 KiB
                  downlink: rate 2 Mbit/s of frames, queue 256 KiB
                  match:    all traffic
                  uplink counters: 
                """))
    }

    @Test func runAppliesUntilSIGTERMThenClears() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()
        let process = Process()
        process.executableURL = TCBinary.url
        process.arguments = [
            "tc", "run", pair.nearDevice, "DSL", "--rate-only", "--port", "8443", "--netns", pair.near,
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        var seen = ""
        let reader = out.fileHandleForReading
        while !seen.contains("until SIGINT or SIGTERM") {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        let during = try pair.exec(pair.near, "tc", "qdisc", "show", "dev", pair.nearDevice)
        process.terminate()
        process.waitUntilExit()

        #expect(during.contains("htb 1c0d:"))
        #expect(process.terminationStatus == 0)
        #expect(try pair.snapshot() == before)
    }

    @Test func datagramImpairmentsTheBackendCannotProgramAreRefusedAndNothingChanges() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "bursty-\(UUID().uuidString.prefix(6)).profile")
        try "bandwidth = 10 Mbit/s\ndownlink.duplicate = 1 %\nloss.model = gilbert-elliott\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try Shell.runCapturing([
            TCBinary.url!.path, "tc", "apply", pair.nearDevice, file.path, "--rate-only", "--netns", pair.near,
        ])

        #expect(result.status == 2)
        #expect(
            result.stderr.contains(
                "uplink.loss.model = gilbert-elliott, downlink.loss.model = gilbert-elliott, downlink.duplicate"),
            "stderr: \(result.stderr)")
        #expect(try pair.snapshot() == before)
    }

    @Test func queueDisciplinesAndTracesTheBackendCannotProgramAreRefusedAndNothingChanges() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let before = try pair.snapshot()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "aqm-\(UUID().uuidString.prefix(6)).profile")
        try "bandwidth = 10 Mbit/s\nuplink.queue.discipline = fq_codel\ndownlink.trace = subway.down\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try Shell.runCapturing([
            TCBinary.url!.path, "tc", "apply", pair.nearDevice, file.path, "--rate-only", "--netns", pair.near,
        ])

        #expect(result.status == 2)
        #expect(
            result.stderr.contains("uplink.queue.discipline = fq_codel, downlink.trace"), "stderr: \(result.stderr)")
        #expect(try pair.snapshot() == before)
    }

    @Test func anUnknownDeviceIsNamed() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }

        let result = try Shell.runCapturing([TCBinary.url!.path, "tc", "clear", "lc-nosuch0", "--netns", pair.near])

        #expect(result.status == 1)
        #expect(result.stderr == "linkcond: no network device named \"lc-nosuch0\" (see `ip link show`)\n")
    }
}

/// The built `linkcond` executable in the build folder the tests run from.
enum TCBinary {
    static let url: URL? = {
        var directory = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("linkcond")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }()
}
