import CLinuxShims
import Glibc
import LinkModel

/// The process's soft limit on open descriptors; nil when unlimited or unreadable.
package var openDescriptorLimit: Int? {
    let limit = clinux_open_files_limit()
    return limit > 0 ? limit : nil
}

/// An epoll instance; only makes syscalls, the event loop decides what they mean.
package struct Epoll {
    let descriptor: Int32

    package static let readable = UInt32(EPOLLIN.rawValue)
    package static let writable = UInt32(EPOLLOUT.rawValue)
    package static let readHangUp = UInt32(EPOLLRDHUP.rawValue)
    /// TCP urgent data has arrived.
    package static let priority = UInt32(EPOLLPRI.rawValue)
    package static let hangUp = UInt32(EPOLLHUP.rawValue)
    package static let error = UInt32(EPOLLERR.rawValue)
    package static let edgeTriggered = UInt32(EPOLLET.rawValue)

    init() throws(SystemError) {
        descriptor = try syscall("epoll_create1") { clinux_epoll_create() }
    }

    func add(_ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        _ = try syscall("epoll_ctl ADD") { clinux_epoll_ctl(descriptor, EPOLL_CTL_ADD, fd, events, data) }
    }

    func modify(_ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        _ = try syscall("epoll_ctl MOD") { clinux_epoll_ctl(descriptor, EPOLL_CTL_MOD, fd, events, data) }
    }

    func remove(_ fd: Int32) throws(SystemError) {
        _ = try syscall("epoll_ctl DEL") { clinux_epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, 0, 0) }
    }

    /// Waits for events (forever when `timeoutMilliseconds` is -1) and fills the two buffers; returns how many.
    func wait(
        events: UnsafeMutablePointer<UInt32>, data: UnsafeMutablePointer<UInt64>, capacity: Int32,
        timeoutMilliseconds: Int32 = -1
    ) throws(SystemError) -> Int {
        Int(try syscall("epoll_wait") { clinux_epoll_wait(descriptor, events, data, capacity, timeoutMilliseconds) })
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// A CLOCK_MONOTONIC timerfd armed with absolute nanosecond deadlines (finer than epoll_wait's milliseconds).
struct DeadlineTimer {
    let descriptor: Int32

    init() throws(SystemError) {
        descriptor = try syscall("timerfd_create") { clinux_timerfd_create() }
    }

    /// Arms the timer for `deadline`; a deadline already past fires at once.
    func arm(at deadline: Instant) throws(SystemError) {
        _ = try syscall("timerfd_settime") { clinux_timerfd_set_absolute(descriptor, max(deadline.nanoseconds, 1)) }
    }

    /// Consumes the expiration count so the descriptor stops being readable.
    func acknowledge() {
        var count: UInt64 = 0
        _ = try? nonBlockingSyscall("read timerfd") { Glibc.read(descriptor, &count, 8) }
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// An eventfd that other threads write to wake the event loop.
struct Wakeup: Sendable {
    let descriptor: Int32

    init() throws(SystemError) {
        descriptor = try syscall("eventfd") { clinux_eventfd_create() }
    }

    /// Wakes the loop; safe from any thread. A full counter already means "wake up", so EAGAIN is fine.
    func signal() {
        var one: UInt64 = 1
        _ = try? nonBlockingSyscall("write eventfd") { Glibc.write(descriptor, &one, 8) }
    }

    func acknowledge() {
        var count: UInt64 = 0
        _ = try? nonBlockingSyscall("read eventfd") { Glibc.read(descriptor, &count, 8) }
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// The monotonic clock the event loop and link model run on.
public struct MonotonicClock: Sendable {
    public init() {}

    public func now() -> Instant { Instant(nanoseconds: clinux_monotonic_ns()) }
}

/// The identity of an OS thread, for checking that loop-owned state is touched on the loop thread only.
struct ThreadIdentity: Equatable, Sendable {
    private let thread: pthread_t

    static var current: ThreadIdentity { ThreadIdentity(thread: pthread_self()) }

    /// The calling thread's kernel id, as /proc/self/task lists it.
    static var currentKernelID: Int32 { clinux_gettid() }

    static func == (lhs: ThreadIdentity, rhs: ThreadIdentity) -> Bool { pthread_equal(lhs.thread, rhs.thread) != 0 }

    /// Names the calling thread as `ps` and /proc show it (its first 15 bytes: the kernel keeps no more).
    /// Foundation's `Thread.name` does not reach the kernel on Linux, so a loop thread names itself.
    static func nameCurrent(_ name: String) {
        _ = clinux_name_current_thread(name)
    }
}

/// Process-wide signal handling for a command-line front end.
public enum TerminationSignals {
    /// Blocks SIGINT, SIGTERM, SIGHUP (the terminal closed) and SIGPIPE in this thread and in threads started after
    /// it.
    public static func block() { _ = clinux_block_signals() }

    /// Waits until SIGINT, SIGTERM or SIGHUP arrives; returns its number.
    public static func wait() -> Int32 { clinux_wait_termination_signal() }
}
