import CLinuxShims

/// The calling thread's timer slack: by default the kernel may fire a thread's timers up to 50 µs late to batch
/// wake-ups, which shows directly as delay error. An event loop thread sets it to 1 ns when it starts.
enum TimerSlack {
    /// Sets the calling thread's slack to `nanoseconds` (prctl PR_SET_TIMERSLACK); 1 is the finest the kernel takes.
    static func set(nanoseconds: UInt) throws(SystemError) {
        _ = try syscall("prctl(PR_SET_TIMERSLACK)") { clinux_set_timer_slack(nanoseconds) }
    }
}
