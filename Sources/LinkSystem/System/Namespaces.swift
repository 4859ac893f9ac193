import CLinuxShims
import Glibc

/// The kernel calls `linkcond exec` needs: namespaces, TUN devices, descriptor passing, child processes.
///
/// Each call is one syscall (or one small sequence in CLinuxShims) and throws `SystemError` with its name.
public enum Namespaces {
    public struct Kinds: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let user = Kinds(rawValue: clinux_clone_newuser())
        public static let network = Kinds(rawValue: clinux_clone_newnet())
        public static let mount = Kinds(rawValue: clinux_clone_newns())
        /// Moves the caller's later children, not the caller, into a new PID namespace; the first is its init.
        public static let pid = Kinds(rawValue: clinux_clone_newpid())
    }

    /// Moves the calling process into new namespaces of `kinds` (unshare). A process with threads cannot take a
    /// new user namespace.
    public static func unshare(_ kinds: Kinds) throws(SystemError) {
        _ = try syscall("unshare") { clinux_unshare(kinds.rawValue) }
    }

    /// Opens the calling thread's network namespace, to come back to it with `enterNetwork`.
    public static func openCurrentNetwork() throws(SystemError) -> Int32 {
        try syscall("open /proc/thread-self/ns/net") { open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC) }
    }

    /// Joins the network namespace open at `descriptor` (setns).
    public static func enterNetwork(_ descriptor: Int32) throws(SystemError) {
        _ = try syscall("setns") { clinux_setns(descriptor, Kinds.network.rawValue) }
    }

    /// Opens the network namespace file at `path` (/run/netns/NAME, /proc/PID/ns/net) for `enterNetwork`.
    public static func openNetwork(at path: String) throws(SystemError) -> Int32 {
        try syscall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
    }

    /// Whether the calling thread holds capability `number` (CAP_NET_ADMIN is 12) in its effective set, from
    /// /proc/thread-self/status; nil when that cannot be read.
    public static func hasEffectiveCapability(_ number: Int) -> Bool? {
        let fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let bits = UInt64(String(line.dropFirst("CapEff:".count).filter { !$0.isWhitespace }), radix: 16)
        else { return nil }
        return bits & (1 << UInt64(number)) != 0
    }

    public static let capabilityNetworkAdministration = 12

    /// Makes every mount of the current mount namespace private and bind-mounts a file holding `text` over `target`.
    public static func bindText(_ text: String, over target: String) throws(SystemError) {
        _ = try syscall("bind mount over \(target)") { clinux_bind_text_over(text, target) }
    }

    /// Creates the TUN interface `name` in the current network namespace; the device lives while the descriptor
    /// is open (blocking, close-on-exec).
    public static func openTun(named name: String) throws(SystemError) -> Int32 {
        try syscall("open /dev/net/tun and TUNSETIFF \(name)") { clinux_tun_open(name) }
    }

    /// Writes `text` to an existing file (a /proc or /proc/sys entry), all at once.
    public static func writeFile(_ path: String, _ text: String) throws(SystemError) {
        let fd = try syscall("open \(path)") { open(path, O_WRONLY | O_CLOEXEC) }
        defer { _ = Glibc.close(fd) }
        let bytes = Array(text.utf8)
        _ = try syscall("write \(path)") { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
    }

    /// The first line of a small file (a /proc/sys entry), nil when it cannot be read.
    public static func readLine(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }

    public static var effectiveUserID: UInt32 { geteuid() }
    public static var effectiveGroupID: UInt32 { getegid() }

    /// A connected pair of close-on-exec SOCK_SEQPACKET Unix sockets.
    public static func socketPair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try syscall("socketpair") { clinux_socketpair_seqpacket(&fds) }
        return (fds[0], fds[1])
    }

    /// Sends `message` with `descriptors` attached (SCM_RIGHTS).
    public static func send(_ message: [UInt8], descriptors: [Int32], over socket: Int32) throws(SystemError) {
        _ = try syscall("sendmsg") {
            message.withUnsafeBytes { bytes in
                clinux_send_descriptors(socket, descriptors, Int32(descriptors.count), bytes.baseAddress, bytes.count)
            }
        }
    }

    /// Receives one message (at most 4 KiB) and the descriptors attached to it; an empty message is end of file.
    public static func receive(over socket: Int32) throws(SystemError) -> (message: [UInt8], descriptors: [Int32]) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fds = [Int32](repeating: -1, count: 8)
        var count: Int32 = 0
        let length = try syscall("recvmsg") {
            buffer.withUnsafeMutableBytes {
                clinux_receive_descriptors(socket, &fds, 8, &count, $0.baseAddress, $0.count)
            }
        }
        return (Array(buffer.prefix(length)), Array(fds.prefix(Int(count))))
    }

    /// Duplicates `descriptor` to a close-on-exec one.
    public static func duplicate(_ descriptor: Int32) throws(SystemError) -> Int32 {
        try syscall("dup") { clinux_dup_cloexec(descriptor) }
    }

    /// Lets `descriptor` survive exec.
    public static func inheritAcrossExec(_ descriptor: Int32) throws(SystemError) {
        _ = try syscall("fcntl F_SETFD") { clinux_clear_cloexec(descriptor) }
    }

    public static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }

    /// Whether `path` names a file the caller may execute.
    public static func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 }

    /// Whether `path` names a file the caller may read.
    public static func isReadable(_ path: String) -> Bool { access(path, R_OK) == 0 }

    /// Writes one line to standard error with a single write, for a process with no logger.
    public static func writeErrorLine(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// Ends the process at once with `status` (`_exit`): the helper and the init it forks run no exit handlers,
    /// which belong to the process they were forked from (a leak checker's cannot work inside a PID namespace).
    public static func exit(_ status: Int32) -> Never { Glibc._exit(status) }

    /// The path of the running executable, to start it again as the namespace helper.
    public static let selfExecutable = "/proc/self/exe"

    /// Starts `arguments[0]` at `path` with the caller's environment and standard descriptors; returns its pid.
    public static func spawn(_ path: String, _ arguments: [String]) throws(SystemError) -> Int32 {
        try withCStrings(arguments) { (argv) throws(SystemError) in
            try syscall("spawn \(path)") { clinux_spawn(path, argv) }
        }
    }

    /// `spawn` with pipes for standard input (`input`, its write end) and standard output and error together
    /// (`output`, its read end), both close-on-exec here.
    public static func spawnPiped(_ path: String, _ arguments: [String]) throws(SystemError) -> (
        pid: Int32, input: Int32, output: Int32
    ) {
        var (input, output): (Int32, Int32) = (-1, -1)
        let pid = try withCStrings(arguments) { (argv) throws(SystemError) in
            try syscall("spawn \(path)") { clinux_spawn_piped(path, argv, &input, &output) }
        }
        return (pid, input, output)
    }

    /// Writes all of `text` to the pipe or file `descriptor` (blocking).
    public static func write(_ text: String, to descriptor: Int32) throws(SystemError) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = try syscall("write") {
                bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// What `read(from:within:)` got: bytes, the end of the file, or nothing before the time ran out.
    public enum ReadOutcome: Equatable, Sendable {
        case bytes([UInt8])
        case end
        case timedOut
    }

    /// Reads what `descriptor` has once it is readable, waiting at most `milliseconds`.
    public static func read(from descriptor: Int32, within milliseconds: Int32) throws(SystemError) -> ReadOutcome {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes {
            clinux_read_within(descriptor, $0.baseAddress, $0.count, milliseconds)
        }
        if count == -2 { return .timedOut }
        let read = try syscall("read") { count }
        return read == 0 ? .end : .bytes(Array(buffer[..<read]))
    }

    /// Replaces the process with `arguments[0]` looked up in PATH; returns the errno only when exec failed.
    public static func execute(_ arguments: [String]) -> Errno {
        withCStrings(arguments) { argv in
            _ = clinux_exec(arguments[0], argv)
            return Errno(rawValue: clinux_errno())
        }
    }

    /// Waits for child `pid`: its exit status, 128+N for signal N; nil when `blocking` is false and it runs on.
    public static func waitForChild(_ pid: Int32, blocking: Bool = true) -> Int32? {
        let status = clinux_wait_child(pid, blocking ? 0 : 1)
        guard status >= 0 || !blocking || clinux_errno() != ECHILD else { return nil }
        return status < 0 ? nil : status
    }

    /// Sends `signal` to process `pid`.
    public static func signal(_ pid: Int32, _ signal: Int32) { _ = clinux_kill(pid, signal) }

    /// Blocks SIGCHLD (with SIGINT, SIGTERM, SIGHUP and SIGPIPE) in this thread and those it starts later.
    public static func blockChildAndTerminationSignals() {
        _ = clinux_block_signals()
        _ = clinux_block_child_signal()
    }

    /// Waits for SIGINT, SIGTERM, SIGHUP or SIGCHLD, blocked beforehand; returns the signal number and whether a terminal
    /// sent it (to the whole foreground process group, the program included).
    public static func waitForSignalOrChild() -> (signal: Int32, fromTerminal: Bool) {
        var fromTerminal: Int32 = 0
        let signal = clinux_wait_signal_or_child(&fromTerminal)
        return (signal, fromTerminal != 0)
    }

    /// Makes the kernel kill the calling process (and the program it becomes) if linkcond dies first.
    public static func dieWithParent() throws(SystemError) {
        _ = try syscall("prctl PR_SET_PDEATHSIG") { clinux_die_with_parent() }
    }

    /// Forks the calling process, which must have a single thread: 0 in the child, the child's pid in the parent.
    public static func fork() throws(SystemError) -> Int32 {
        try syscall("fork") { clinux_fork() }
    }

    /// A pipe whose ends are close-on-exec: the write end held by a parent tells a child, by closing, that the
    /// parent ended (`dieWithParent(holding:)`).
    public static func lifeline() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try syscall("pipe") { clinux_pipe_nonblocking(&fds) }
        return (fds[0], fds[1])
    }

    /// `dieWithParent` for a forked child whose parent holds the write end of `lifeline` (the child closed its
    /// copy): throws ESRCH when the parent ended before the signal was set.
    public static func dieWithParent(holding lifeline: Int32) throws(SystemError) {
        _ = try syscall("prctl PR_SET_PDEATHSIG") { clinux_die_with_parent_holding(lifeline) }
    }

    /// Mounts a proc file system for the caller's PID namespace over /proc, in the caller's own mount namespace.
    public static func mountProcessFilesystem() throws(SystemError) {
        _ = try syscall("mount proc on /proc") { clinux_mount_proc() }
    }

    /// A child that ended, with its exit status (128+N for signal N); nil while every child runs on, or none is left.
    public static func reapAnyChild() -> (pid: Int32, status: Int32)? {
        var status: Int32 = 0
        let pid = clinux_reap_any_child(&status)
        return pid > 0 ? (pid, status) : nil
    }

    public static let childSignal = SIGCHLD
    public static let familyV4 = AF_INET
    public static let familyV6 = AF_INET6

    private static func withCStrings<R, E: Error>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) throws(E) -> R
    ) throws(E) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return try pointers.withUnsafeBufferPointer { (buffer) throws(E) -> R in try body(buffer.baseAddress!) }
    }
}

/// A TUN device's descriptor, non-blocking: one IP packet per read or write. Whoever holds it closes it.
public struct TunDevice: Sendable {
    public let descriptor: Int32

    /// Adopts `descriptor` and makes it non-blocking.
    public init(adopting descriptor: Int32) throws(SystemError) {
        self.descriptor = descriptor
        let flags = try syscall("fcntl F_GETFL") { clinux_fcntl_getfl(descriptor) }
        _ = try syscall("fcntl F_SETFL") { clinux_fcntl_setfl(descriptor, flags | O_NONBLOCK) }
    }

    /// Reads one packet into `buffer`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("read tun") { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
    }

    /// Writes one packet; `.wouldBlock` when the device's queue is full.
    package func write(_ packet: [UInt8]) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("write tun") {
            packet.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    public func close() { _ = Glibc.close(descriptor) }
}

extension Socket {
    /// Adopts a listening socket received from elsewhere (the exec namespace's gateway listener).
    package static func adopting(_ descriptor: Int32) -> Socket { Socket(descriptor: descriptor) }

    /// The address a redirected connection was sent to before nftables rewrote it.
    package func originalDestination(family: Int32) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try syscall("getsockopt SO_ORIGINAL_DST") {
            clinux_original_destination(descriptor, family, &storage, &length)
        }
        return SocketAddress(storage: storage, length: length)
    }
}
