import Foundation
import LinkConditioner
import Testing

/// `run --realtime`: the main loop in SCHED_FIFO, every other thread in the normal class, and a clear refusal
/// without the privilege.
@Suite(.serialized)
struct RealtimeOptionTests {
    @Test(.enabled(if: RealtimeOptionTests.mayUseRealtime, "needs CAP_SYS_NICE"))
    func onlyTheMainLoopRunsInFIFOAndStatusSaysSo() throws {
        let instance = try ControlCommandTests.Instance(options: ["--realtime", "--threads", "2"])
        defer { instance.stop() }

        let status = try instance.linkcond(["status"])
        let json = try instance.linkcond(["status", "--json"])
        let policies = Self.threadPolicies(ofProcess: instance.process.process.processIdentifier)

        #expect(
            status.stdout.contains("threads   main loop at real-time priority 1 (SCHED_FIFO) + 1 splice loop"),
            "\(status.stdout)")
        #expect(try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).mainLoopRealtimePriority == 1)
        #expect(policies["linkcond-loop"] == [Self.fifo], "\(policies)")
        #expect(policies["linkcond-splice"] == [Self.normal], "\(policies)")
        #expect(
            policies.filter { !$0.key.hasPrefix("linkcond-") }.values.allSatisfy {
                $0.allSatisfy { $0 == Self.normal }
            },
            "\(policies)")
    }

    @Test func withoutTheOptionEveryThreadKeepsTheNormalClass() throws {
        let instance = try ControlCommandTests.Instance(options: ["--threads", "2"])
        defer { instance.stop() }

        let json = try instance.linkcond(["status", "--json"])
        let policies = Self.threadPolicies(ofProcess: instance.process.process.processIdentifier)

        #expect(
            try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).mainLoopRealtimePriority == nil)
        #expect(policies["linkcond-loop"] == [Self.normal], "\(policies)")
        #expect(policies.values.allSatisfy { $0 == [Self.normal] }, "\(policies)")
    }

    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs root, setpriv and prlimit"))
    func withoutThePrivilegeRunExitsOneNamingTheOptionAndWhatItNeeds() throws {
        // Root without CAP_SYS_NICE and with an RLIMIT_RTPRIO of 0: the kernel refuses SCHED_FIFO.
        let result = try LinkcondProcess.run(
            [
                "--rtprio=0", "--", "/usr/bin/setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--",
                LinkcondProcess.executable.path, "run", "--realtime", "--listen", "127.0.0.1:0", "--upstream",
                "127.0.0.1:9",
                "--control", "127.0.0.1:0",
            ],
            executable: URL(fileURLWithPath: "/usr/bin/prlimit"))

        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(
            result.stderr.contains("--realtime: the kernel refused real-time priority 1 (SCHED_FIFO)"),
            "\(result.stderr)")
        #expect(result.stderr.contains("CAP_SYS_NICE"), "\(result.stderr)")
        #expect(!result.stdout.contains("ready"), "\(result.stdout)")
    }

    static let normal = 0
    static let fifo = 1

    /// True when this process holds CAP_SYS_NICE (bit 23 of CapEff in /proc/self/status), which SCHED_FIFO needs.
    static var mayUseRealtime: Bool {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << 23) != 0
    }

    /// Each thread name of process `pid` with the scheduling policies of the threads so named (field 41 of
    /// /proc/PID/task/TID/stat: 0 normal, 1 SCHED_FIFO).
    static func threadPolicies(ofProcess pid: Int32) -> [String: Set<Int>] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var policies: [String: Set<Int>] = [:]
        for task in tasks {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let name = String(stat[stat.index(after: open)..<close])
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 38, let policy = Int(fields[38]) else { continue }
            policies[name, default: []].insert(policy)
        }
        return policies
    }
}
