import Foundation
import LoopbackPeers
import Testing

/// The built `linkcond` binary run as a user would run it, with its output captured.
struct LinkcondProcess {
    /// The `linkcond` executable next to the test bundle in the build folder.
    static var executable: URL {
        var directory = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("linkcond")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/linkcond")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `linkcond arguments…` (or another `executable`) to completion (at most `timeout` seconds).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30,
        executable: URL = LinkcondProcess.executable
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = LockedData()
        let errData = LockedData()
        let group = DispatchGroup()
        for (pipe, box) in [(out, outData), (err, errData)] {
            group.enter()
            Thread.detachNewThread {
                box.data = pipe.fileHandleForReading.readDataToEndOfFile()
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw CLITestError("linkcond \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData.data, as: UTF8.self),
            stderr: String(decoding: errData.data, as: UTF8.self))
    }
}

/// A `linkcond run` process in the background, with its stdout read line by line.
final class RunningLinkcond: @unchecked Sendable {
    let process = Process()
    private let stdout = Pipe()
    private let stderr = Pipe()
    private var buffer = Data()
    private let stderrData = LockedData()
    private let stderrDone = DispatchSemaphore(value: 0)

    init(_ arguments: [String], environment: [String: String] = [:], executable: URL = LinkcondProcess.executable)
        throws
    {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let fd = stderr.fileHandleForReading.fileDescriptor
        let box = stderrData
        let done = stderrDone
        // read(2) rather than FileHandle.availableData, which traps on EINTR: a SIGCHLD can interrupt the read
        // when a process the program left behind keeps the pipe open after linkcond exited.
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                box.append(Data(chunk[0..<count]))
            }
            done.signal()
        }
    }

    /// The next line on stdout, waiting at most `timeout` seconds.
    func readLine(timeout: Double = 20) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = stdout.fileHandleForReading.fileDescriptor
        while Date() < deadline {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { break }
            if poller.revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { break }
                buffer.append(contentsOf: chunk[0..<n])
            }
        }
        throw CLITestError("no line on stdout within \(timeout) s; stderr: \(stderrText)")
    }

    /// Reads the `ready KIND HOST:PORT …` line a listener prints and returns its port.
    func readReadyPort() throws -> UInt16 {
        let ready = try readLine()
        guard
            let port = ready.split(separator: " ").dropFirst(2).first?.split(separator: ":").last.flatMap({ UInt16($0) }
            )
        else {
            throw CLITestError("not a ready line: \(ready)")
        }
        return port
    }

    /// Sends `signal` and waits for the exit status (at most `timeout` seconds).
    func stop(signal: Int32 = SIGTERM, timeout: Double = 10) throws -> Int32 {
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            throw CLITestError("linkcond did not exit within \(timeout) s of signal \(signal)")
        }
        _ = stderrDone.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    /// Waits for the process to exit by itself and returns its status; kills it and returns nil after `timeout`.
    func waitForExit(timeout: Double = 30) -> Int32? {
        guard waitUntil(seconds: timeout, { !process.isRunning }) else {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        _ = stderrDone.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    /// What is left on stdout after the lines already read (call after the process exited).
    func remainingStdout() -> String {
        let rest = stdout.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: buffer + rest, as: UTF8.self)
    }

    /// What the process wrote to stderr so far (all of it once it exited).
    var stderrText: String { String(decoding: stderrData.data, as: UTF8.self) }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = Data()
    var data: Data {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }

    func append(_ more: Data) {
        lock.lock()
        stored.append(more)
        lock.unlock()
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
