import CLinuxShims

/// The calling thread's scheduling class. Under the default class a loop thread waits its turn behind every
/// runnable process on its core, which a loaded machine turns into delivery lateness of milliseconds; in
/// SCHED_FIFO it runs as soon as its timer fires or bytes arrive.
public enum RealtimeScheduling {
    /// Puts the calling thread in SCHED_FIFO at `priority` (1 to 99). Threads and processes it starts later keep
    /// the default class (SCHED_RESET_ON_FORK), so a splice loop or a launched app never inherits it, unless
    /// `passedOn` (the bench's echo server, whose threads should all run so). Throws EPERM without CAP_SYS_NICE or
    /// an RLIMIT_RTPRIO of at least `priority`.
    public static func enterFIFO(priority: Int32, passedOn: Bool = false) throws(SystemError) {
        _ = try syscall("sched_setscheduler(SCHED_FIFO, \(priority))") {
            clinux_set_realtime_fifo(priority, passedOn ? 1 : 0)
        }
    }
}
