import CLinuxShims
import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// Every process and namespace the benchmark starts, so that a normal end, an error or SIGINT/SIGTERM removes them.
final class BenchCleanup: @unchecked Sendable {
    static let shared = BenchCleanup()
    private let lock = NSLock()
    private var actions: [(id: Int, run: () -> Void)] = []
    private var nextID = 0

    /// Registers `action`; the returned id removes it again once the resource is gone.
    func add(_ action: @escaping () -> Void) -> Int {
        lock.lock()
        defer { lock.unlock() }
        nextID += 1
        actions.append((nextID, action))
        return nextID
    }

    func remove(_ id: Int) {
        lock.lock()
        defer { lock.unlock() }
        actions.removeAll { $0.id == id }
    }

    /// Runs every registered action, newest first, once.
    func runAll() {
        lock.lock()
        let pending = actions
        actions = []
        lock.unlock()
        for action in pending.reversed() { action.run() }
    }
}

/// A peer program the benchmark runs (iperf3, socat, HAProxy, sockperf, linkcond), stopped with SIGTERM and then
/// SIGKILL; its CPU time is read from /proc/PID/stat.
final class PeerProcess: @unchecked Sendable {
    let name: String
    let process = Process()
    private var cleanupID = 0

    /// Starts `path` with `arguments`, inside network namespace `namespace` when given (through `ip netns exec`).
    init(name: String, path: String, arguments: [String], namespace: String? = nil, output: Pipe? = nil) throws {
        self.name = name
        if let namespace {
            process.executableURL = URL(fileURLWithPath: Tools.ip!)
            process.arguments = ["netns", "exec", namespace, path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let process = self.process
        cleanupID = BenchCleanup.shared.add { PeerProcess.terminate(process) }
    }

    var pid: Int32 { process.processIdentifier }

    /// User plus system CPU seconds the process has used so far, every thread included.
    func cpuSeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime field 14, stime field 15 (proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Times the process's threads went to sleep (voluntary context switches), every thread included: how often a
    /// relay waited for something, so two relays' cadences can be compared.
    func sleeps() -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                let count = line.split(separator: "\t").last.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }
                )
            else { return total }
            return total + count
        }
    }

    /// Resident memory in bytes (VmRSS), every thread included.
    func residentBytes() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return nil }
        return kib * 1024
    }

    /// Open descriptors, from /proc/PID/fd.
    func descriptorCount() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// Waits until the process (or, in a namespace, any process there) listens on TCP `port`; false after `timeout`.
    func waitListening(port: UInt16, timeout: Double = 10) -> Bool {
        let start = MonotonicClock().now()
        while secondsSince(start) < timeout, process.isRunning {
            if listensOnTCP(pid: pid, port: port) { return true }
            usleep(10_000)
        }
        return false
    }

    func stop() {
        BenchCleanup.shared.remove(cleanupID)
        PeerProcess.terminate(process)
    }

    private static func terminate(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Whether a socket in `pid`'s network namespace listens on TCP `port` (read from /proc/PID/net/tcp, so no probe
/// connection disturbs a server such as iperf3 that counts its clients).
func listensOnTCP(pid: Int32, port: UInt16) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/\(pid)/net/tcp", encoding: .utf8) else { return false }
    let suffix = String(format: ":%04X", port)
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "0A" { return true }
    }
    return false
}

/// A TCP and UDP port on 127.0.0.1 that is free right now (the kernel's pick for port 0).
func freePort() -> UInt16 {
    for _ in 0..<20 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopbackAddress()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port: UInt16 = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(fd, $0, length) == 0, getsockname(fd, $0, &length) == 0 else { return 0 }
                return UInt16(bigEndian: pointer.pointee.sin_port)
            }
        }
        guard port != 0 else { continue }
        let udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(udp) }
        let udpBound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(udp, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if udpBound == 0 { return port }
    }
    return UInt16.random(in: 40000...60000)
}

/// `count` ports from `freePort`, no two the same.
func distinctFreePorts(_ count: Int) -> [UInt16] {
    var ports: [UInt16] = []
    while ports.count < count {
        let port = freePort()
        if !ports.contains(port) { ports.append(port) }
    }
    return ports
}

/// Paths of the peer programs; nil when one is not installed (`scripts/bench` installs them).
enum Tools {
    static func find(_ name: String) -> String? {
        ["/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/local/bin/"].map { $0 + name }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
    static let iperf3 = find("iperf3")
    static let sockperf = find("sockperf")
    static let socat = find("socat")
    static let haproxy = find("haproxy")
    static let ip = find("ip")
    static let tc = find("tc")
}

/// A scratch directory for configuration files, removed at the end.
let scratch: String = {
    let path = NSTemporaryDirectory() + "linkcond-bench-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    _ = BenchCleanup.shared.add { try? FileManager.default.removeItem(atPath: path) }
    return path
}()

/// linkcond itself, run as its own process (`linkcond run`) so its CPU time is its own.
final class LinkcondPeer {
    let peer: PeerProcess
    /// The first listener's port.
    let relayPort: UInt16
    /// Every listener's port, in the order of the upstreams they relay to.
    let relayPorts: [UInt16]
    let proxyPort: UInt16?
    /// The control socket `linkcond status` reads this linkcond's counters from.
    let controlPath: String

    /// Relays TCP (and UDP when `udp`) from a fresh port to `upstream`, conditioned by the profile `profileText`;
    /// with `proxyFrontEnd` also a SOCKS5/HTTP proxy front end. Returns once linkcond printed its ready lines.
    /// With `record`, linkcond writes its event log (`run --record`) to that path.
    /// With `realtime`, its main loop runs in SCHED_FIFO (`run --realtime`).
    convenience init(
        profile profileText: String, upstream: UInt16, udp: Bool = false, proxyFrontEnd: Bool = false,
        record: String? = nil,
        realtime: Bool = false
    ) throws {
        try self.init(
            profile: profileText, upstreams: [upstream], udp: udp, proxyFrontEnd: proxyFrontEnd, record: record,
            realtime: realtime)
    }

    /// One TCP listener (each a link of its own, shaped by the same profile) for each of `upstreams`, and the rest
    /// as the initializer above; `threads` overrides the benchmark's `--threads` for this linkcond.
    init(
        profile profileText: String, upstreams: [UInt16], udp: Bool = false, proxyFrontEnd: Bool = false,
        record: String? = nil,
        realtime: Bool = false, threads: Int? = nil
    ) throws {
        guard let binary = LinkcondPeer.binary else {
            throw TestError(
                "no linkcond binary next to linkcond-bench: build it with `swift build -c release` (scripts/bench does)"
            )
        }
        let profilePath = scratch + "/bench-\(UInt32.random(in: 0...UInt32.max)).profile"
        try (profileText + "\n").write(toFile: profilePath, atomically: true, encoding: .utf8)
        let ports = distinctFreePorts(upstreams.count)
        let port = ports[0]
        controlPath = scratch + "/control-\(port).sock"
        var arguments = ["run", "--profile", profilePath, "--control", controlPath]
        for (listen, upstream) in zip(ports, upstreams) {
            arguments += ["--listen", "127.0.0.1:\(listen)", "--upstream", "127.0.0.1:\(upstream)"]
        }
        if udp { arguments += ["--udp-listen", "127.0.0.1:\(port)", "--udp-upstream", "127.0.0.1:\(upstreams[0])"] }
        let front = proxyFrontEnd ? freePort() : nil
        if let front { arguments += ["--proxy", "127.0.0.1:\(front)"] }
        if let record { arguments += ["--record", record] }
        if realtime { arguments.append("--realtime") }
        if let threads = threads ?? options.threads { arguments += ["--threads", "\(threads)"] }
        let output = Pipe()
        peer = try PeerProcess(name: "linkcond", path: binary, arguments: arguments, output: output)
        relayPort = port
        relayPorts = ports
        proxyPort = front
        let ready = DispatchSemaphore(value: 0)
        let handle = output.fileHandleForReading
        Thread.detachNewThread {
            var text = ""
            var signalled = false
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
                if !signalled, text.contains("ready control") {
                    signalled = true
                    ready.signal()
                }
            }
            if !signalled { ready.signal() }
        }
        guard ready.wait(timeout: .now() + 20) == .success, peer.process.isRunning else {
            peer.stop()
            throw TestError("linkcond did not start (arguments: \(arguments.joined(separator: " ")))")
        }
    }

    func stop() { peer.stop() }

    /// The listeners of `GET /status` (what `linkcond status --json` prints), as decoded JSON objects, asked over
    /// the control socket from this process: a sub-millisecond exchange, so a status can time a window.
    private func statusListeners() -> [[String: Any]]? {
        guard let response = try? ControlClient(address: .unix(controlPath)).send("GET", "/status"),
            response.status == 200,
            let json = try? JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any]
        else { return nil }
        return json["listeners"] as? [[String: Any]]
    }

    /// linkcond's own delivery lateness on the TCP listener's `direction` (p50, p99 and max, seconds): how long
    /// after the model released them it wrote released bytes.
    func deliveryLateness(_ direction: String) -> (p50: Double, p99: Double, max: Double)? {
        guard let listener = statusListeners()?.first(where: { $0["kind"] as? String == "tcp" }),
            let lateness = (listener[direction] as? [String: Any])?["deliveryLateness"] as? [String: Any],
            let p50 = lateness["p50Seconds"] as? Double, let p99 = lateness["p99Seconds"] as? Double,
            let max = lateness["maxSeconds"] as? Double
        else { return nil }
        return (p50, p99, max)
    }

    /// Bytes linkcond has delivered on `direction` of each TCP listener, by its port (`bytesDelivered` in
    /// `linkcond status --json`), with the moment they were read: the middle of the request; nil when the status
    /// could not be read.
    func tcpBytesDelivered(_ direction: String) -> (bytes: [UInt16: Double], at: Instant)? {
        let asked = MonotonicClock().now()
        guard let listeners = statusListeners() else { return nil }
        let answered = MonotonicClock().now()
        var bytes: [UInt16: Double] = [:]
        for listener in listeners where listener["kind"] as? String == "tcp" {
            guard let address = listener["address"] as? String,
                let port = address.split(separator: ":").last.flatMap({ UInt16($0) })
            else { continue }
            bytes[port] = (listener[direction] as? [String: Any])?["bytesDelivered"] as? Double ?? 0
        }
        return (bytes, asked + (answered - asked) / 2)
    }

    /// Datagrams the kernel dropped at, or refused from, this linkcond's UDP sockets, both ways (`kernelDrops` in
    /// `linkcond status --json`); nil when the status could not be read.
    func udpKernelDrops() -> Double? {
        guard let listeners = statusListeners() else { return nil }
        return listeners.filter { $0["kind"] as? String == "udp" }.reduce(0.0) { total, listener in
            let drops = ["uplink", "downlink"].compactMap {
                (listener[$0] as? [String: Any])?["kernelDrops"] as? Double
            }
            return total + drops.reduce(0, +)
        }
    }

    static let binary: String? = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let candidates = [ProcessInfo.processInfo.environment["LINKCOND"], directory + "/linkcond"].compactMap { $0 }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}

/// Raises this process's descriptor limit, which the peers it starts inherit, so that it holds at least `wanted`
/// descriptors: the soft limit up to the hard one, and the hard one too where the process may (root). Returns the
/// soft limit now in force.
func raiseDescriptorLimit(toAtLeast wanted: Int) -> Int {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    let target = rlim_t(wanted)
    if limit.rlim_cur >= target { return Int(limit.rlim_cur) }
    var raised = rlimit(rlim_cur: target, rlim_max: max(limit.rlim_max, target))
    if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) != 0 {
        raised = rlimit(rlim_cur: min(target, limit.rlim_max), rlim_max: limit.rlim_max)
        if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) != 0 { return Int(limit.rlim_cur) }
    }
    return Int(raised.rlim_cur)
}

/// How HAProxy moves a connection's bytes in TCP mode.
enum HAProxySplice {
    /// Through its buffers, no splicing.
    case off
    /// `option splice-auto`: HAProxy decides per transfer whether to splice.
    case auto
    /// `option splice-request` and `option splice-response`: both directions always spliced, the configuration a
    /// user picks for bulk throughput (14–16 Gbit/s on one stream on a quiet machine here, about 10 with
    /// `splice-auto`).
    case always

    /// The configuration's lines for this mode.
    var options: String {
        switch self {
        case .off: "no option splice-auto"
        case .auto: "option splice-auto"
        case .always: "option splice-request\n    option splice-response"
        }
    }

    /// The row label's name for HAProxy in this mode.
    var label: String {
        switch self {
        case .off: "haproxy"
        case .auto: "haproxy splice-auto"
        case .always: "haproxy splice-req/resp"
        }
    }
}

/// HAProxy 2.x in TCP mode in front of `upstream`, splicing as `splice` says, on one thread per core (its default)
/// or on `threads` threads, taking up to `maxConnections` at once. HAProxy reserves descriptors for a quarter as
/// many pipes unless `maxPipes` says otherwise, and refuses to start when the descriptor limit cannot hold them all.
func startHAProxy(
    upstream: UInt16, splice: HAProxySplice, threads: Int? = nil, maxConnections: Int = 4000,
    maxPipes: Int? = nil
) throws -> (PeerProcess, UInt16) {
    guard let haproxy = Tools.haproxy else { throw TestError("haproxy is not installed (scripts/bench installs it)") }
    let port = freePort()
    let config = """
        global
            maxconn \(maxConnections)
            \(maxPipes.map { "maxpipes \($0)" } ?? "")
            \(threads.map { "nbthread \($0)" } ?? "")
        defaults
            mode tcp
            timeout connect 5s
            timeout client 60s
            timeout server 60s
            \(splice.options)
        frontend bench
            bind 127.0.0.1:\(port)
            default_backend upstream
        backend upstream
            server one 127.0.0.1:\(upstream)

        """
    let path = scratch + "/haproxy-\(port).cfg"
    try config.write(toFile: path, atomically: true, encoding: .utf8)
    let peer = try PeerProcess(
        name: splice.label, path: haproxy, arguments: ["-db", "-f", path])
    guard peer.waitListening(port: port) else {
        peer.stop()
        throw TestError("haproxy did not listen on \(port)")
    }
    return (peer, port)
}

/// socat's transfer buffer for bulk throughput (`-b`): one stream here moves 2–3× as fast with 1 MiB as with its
/// default 8 KiB, and no faster with 4 MiB.
let socatBulkBuffer = 1 << 20

/// socat relaying TCP from a fresh port to `upstream`, one forked child per connection, with `buffer` bytes per
/// read and write (`-b`; socat's default 8 KiB when nil).
func startSocat(upstream: UInt16, buffer: Int? = nil) throws -> (PeerProcess, UInt16) {
    guard let socat = Tools.socat else { throw TestError("socat is not installed (scripts/bench installs it)") }
    let port = freePort()
    let peer = try PeerProcess(
        name: "socat", path: socat,
        arguments: (buffer.map { ["-b", String($0)] } ?? []) + [
            "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork,backlog=4096", "TCP:127.0.0.1:\(upstream)",
        ])
    guard peer.waitListening(port: port) else {
        peer.stop()
        throw TestError("socat did not listen on \(port)")
    }
    return (peer, port)
}
