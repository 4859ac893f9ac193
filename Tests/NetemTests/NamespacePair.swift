import Foundation
import Testing

/// Two network namespaces joined by a veth pair, addressed from 198.18.0.0/15, for tests that need a real link.
///
/// `near` (198.18.0.1, device `lcv-near`) is the side linkcond conditions; `far` (198.18.0.2, `lcv-far`) is its peer.
/// Both namespaces, and every device in them (ifb included), go away in `remove()`.
final class NamespacePair {
    let near: String
    let far: String
    let nearDevice = "lcv-near"
    let farDevice = "lcv-far"
    let nearAddress = "198.18.0.1"
    let farAddress = "198.18.0.2"

    private static let counter = Counter()

    init() throws {
        let id = "\(getpid())-\(Self.counter.next())"
        near = "lcn-near-\(id)"
        far = "lcn-far-\(id)"
        do {
            try Shell.run("ip", "netns", "add", near)
            try Shell.run("ip", "netns", "add", far)
            try Shell.run(
                "ip", "link", "add", nearDevice, "netns", near, "type", "veth", "peer", "name", farDevice, "netns", far)
            try Shell.run("ip", "-n", near, "addr", "add", "\(nearAddress)/30", "dev", nearDevice)
            try Shell.run("ip", "-n", far, "addr", "add", "\(farAddress)/30", "dev", farDevice)
            for (namespace, device) in [(near, nearDevice), (far, farDevice)] {
                try Shell.run("ip", "-n", namespace, "link", "set", device, "up")
                try Shell.run("ip", "-n", namespace, "link", "set", "lo", "up")
            }
        } catch {
            remove()
            throw error
        }
    }

    /// Deletes both namespaces; safe to call twice.
    func remove() {
        _ = try? Shell.run("ip", "netns", "del", near)
        _ = try? Shell.run("ip", "netns", "del", far)
    }

    /// Runs a command inside `namespace`.
    @discardableResult
    func exec(_ namespace: String, _ arguments: String..., timeout: Double = 20) throws -> String {
        try Shell.run(["ip", "netns", "exec", namespace] + arguments, timeout: timeout)
    }

    /// Everything a user could see of the near device's traffic control and links, to compare before and after.
    func snapshot() throws -> String {
        let qdiscs = try exec(near, "tc", "qdisc", "show")
        let egressFilters = try exec(near, "tc", "filter", "show", "dev", nearDevice)
        // tc prints "parent ffff:" on ingress filters or not depending on the dump's tcm_parent, not on the filter.
        let ingressFilters = try exec(near, "tc", "filter", "show", "dev", nearDevice, "ingress")
            .replacingOccurrences(of: "filter parent ffff: ", with: "filter ")
        let links = try exec(near, "ip", "-o", "link", "show")
            .split(separator: "\n").map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
            .joined(separator: "\n")
        return [qdiscs, egressFilters, ingressFilters, links].joined(separator: "\n--\n")
    }

    /// Payload throughput of one TCP stream from near to far (or far to near with `reverse`), in bits per second.
    func tcpThroughput(reverse: Bool = false, port: Int = 5201, seconds: Int = 3) throws -> Double {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["ip", "netns", "exec", far, "iperf3", "-s", "-1", "-B", farAddress, "-p", "\(port)"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            // iperf3 can ignore SIGTERM while it reports to a client, so the server is killed outright.
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
            server.waitUntilExit()
        }
        var arguments = [
            "iperf3", "-c", farAddress, "-p", "\(port)", "-t", "\(seconds)", "-O", "1", "-J", "--connect-timeout",
            "2000",
        ]
        if reverse { arguments.append("-R") }
        var output = ""
        for attempt in 0..<20 {
            output =
                (try? Shell.runCapturing(["ip", "netns", "exec", near] + arguments, timeout: Double(seconds + 15))
                    .stdout) ?? ""
            if let bits = Self.receivedBits(output) { return bits }
            if attempt < 19 && output.contains("unable to connect") {
                Thread.sleep(forTimeInterval: 0.1)
            } else {
                break
            }
        }
        throw ShellError(command: "iperf3", status: 0, output: "no sum_received in \(output.prefix(400))")
    }

    /// The receiver's bits per second from iperf3's JSON, or `nil` when it reports none (e.g. the server was not up yet).
    private static func receivedBits(_ json: String) -> Double? {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let end = object?["end"] as? [String: Any]
        let received = end?["sum_received"] as? [String: Any]
        guard let bits = received?["bits_per_second"] as? Double else { return nil }
        return bits
    }

    /// Whether this machine lets tests make namespaces: root, `ip`, `tc` and `iperf3`.
    static let isSupported: Bool = {
        guard geteuid() == 0 else { return false }
        for tool in ["/usr/sbin/ip", "/usr/sbin/tc", "/usr/bin/iperf3"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return false
        }
        removeLeftovers()
        let probe = "lcn-probe-\(getpid())"
        guard (try? Shell.run("ip", "netns", "add", probe)) != nil else { return false }
        _ = try? Shell.run("ip", "netns", "del", probe)
        return true
    }()

    /// Deletes the namespaces of earlier test processes that died before `remove()` ran (a crash, a kill at a
    /// timeout), so they do not pile up across runs; a namespace whose process still runs is left alone.
    private static func removeLeftovers() {
        let listing = (try? Shell.run("ip", "netns", "list")) ?? ""
        for name in leftoverNamespaces(in: listing, isRunning: { kill($0, 0) == 0 || errno != ESRCH }) {
            _ = try? Shell.run("ip", "netns", "del", name)
        }
    }

    /// The names in an `ip netns list` listing that this type made (`lcn-near-PID-N`, `lcn-far-PID-N`,
    /// `lcn-probe-PID`) for a process that is no longer running.
    static func leftoverNamespaces(in listing: String, isRunning: (pid_t) -> Bool) -> [String] {
        listing.split(separator: "\n").compactMap { line in
            guard let name = line.split(separator: " ").first else { return nil }
            let parts = name.split(separator: "-")
            guard parts.count >= 3, parts[0] == "lcn", ["near", "far", "probe"].contains(parts[1]),
                let pid = pid_t(parts[2]), pid > 0, !isRunning(pid)
            else { return nil }
            return String(name)
        }
    }
}

/// TCP throughput as tc counts it: a full-size segment carries 1448 payload bytes in a 1514-byte frame.
func frameRate(ofPayloadRate payload: Double) -> Double { payload * 1514 / 1448 }

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

struct ShellError: Error, CustomStringConvertible {
    var command: String
    var status: Int32
    var output: String
    var description: String { "\(command) exited \(status): \(output)" }
}

/// Runs commands as a user would at a shell, with a timeout.
enum Shell {
    @discardableResult
    static func run(_ arguments: String...) throws -> String { try run(arguments) }

    /// Runs `arguments` (the first found on PATH), returning stdout; a non-zero exit throws with stderr.
    @discardableResult
    static func run(_ arguments: [String], timeout: Double = 20, environment: [String: String]? = nil) throws -> String
    {
        let result = try runCapturing(arguments, timeout: timeout)
        guard result.status == 0 else {
            throw ShellError(command: arguments.joined(separator: " "), status: result.status, output: result.stderr)
        }
        return result.stdout
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func runCapturing(_ arguments: [String], timeout: Double = 20) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        let outData = Collected()
        let errData = Collected()
        let group = DispatchGroup()
        for (pipe, box) in [(out, outData), (err, errData)] {
            group.enter()
            Thread.detachNewThread {
                box.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw ShellError(
                command: arguments.joined(separator: " "), status: -1, output: "timed out after \(timeout) s")
        }
        process.waitUntilExit()
        group.wait()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData.get(), as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) {
        lock.lock()
        data = value
        lock.unlock()
    }
    func get() -> Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}
