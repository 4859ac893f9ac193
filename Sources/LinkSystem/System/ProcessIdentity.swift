import Glibc

/// A process as the kernel knows it: its pid and when it started, in clock ticks since boot (field 22 of
/// `/proc/PID/stat`), so that a pid the kernel has since given to another process is not taken for the one recorded.
///
/// Plain value; read from any thread.
public struct ProcessIdentity: Hashable, Sendable {
    public var pid: Int32
    /// The start time in clock ticks since boot; nil where `/proc` cannot be read, and then only the pid is checked.
    public var startTicks: UInt64?

    public init(pid: Int32, startTicks: UInt64?) {
        self.pid = pid
        self.startTicks = startTicks
    }

    /// This process.
    public static var current: ProcessIdentity {
        let pid = getpid()
        return ProcessIdentity(pid: pid, startTicks: ProcessStat.read(pid)?.startTicks)
    }

    /// Whether this process still runs: its pid exists, is not a zombie waiting to be reaped, and (when both are
    /// known) started at the recorded time. A process of another user counts as running (`kill` says EPERM).
    public var isRunning: Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = ProcessStat.read(pid) else { return true }
        if stat.state == "Z" || stat.state == "X" { return false }
        guard let startTicks, let now = stat.startTicks else { return true }
        return startTicks == now
    }
}

/// The fields of `/proc/PID/stat` linkcond reads: the state letter (field 3) and the start time (field 22).
enum ProcessStat {
    static func read(_ pid: Int32) -> (state: Character, startTicks: UInt64?)? {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { _ = close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        var count = 0
        while count < buffer.count {
            let got = buffer.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count)
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        return parse(String(decoding: buffer[..<count], as: UTF8.self))
    }

    /// Parses a stat line. The command name (field 2) is in parentheses and may hold spaces and parentheses of its
    /// own, so the fields are counted from the last `)`.
    static func parse(_ line: String) -> (state: Character, startTicks: UInt64?)? {
        guard let close = line.lastIndex(of: ")") else { return nil }
        let fields = line[line.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard let state = fields.first?.first else { return nil }
        // After the name: field 3 (state) is fields[0], so field 22 (starttime) is fields[19].
        return (state, fields.count > 19 ? UInt64(fields[19]) : nil)
    }
}
