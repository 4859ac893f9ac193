/// The bytes all TCP connections of a proxy hold at once, against one cap (`--max-buffered`): a pump reads only
/// what the budget has left, and a pump turned away is woken once enough has been released.
///
/// Lives on the event loop thread. Waking happens on a later loop turn (a zero-delay timer), never inside the
/// write that released the bytes, so one pump's write never re-enters another pump's read. While the cap is reached
/// every reader waits, as the kernel's TCP memory pressure would make it: that is the price of a bound.
final class BufferBudget {
    /// The most bytes held at once.
    let limit: Int
    private let loop: EventLoop
    /// Bytes held now.
    private(set) var held = 0
    /// The most bytes ever held at once, for tests and status.
    private(set) var peak = 0
    private var waiting: [ObjectIdentifier: StreamPump] = [:]
    private var wake = Wake.notDue

    /// Whether waiting pumps are to be woken.
    private enum Wake {
        /// Nobody waits, or too little room has opened since they were last woken.
        case notDue
        /// A zero-delay timer wakes every waiting pump on a later loop turn.
        case scheduled
    }

    /// Room that must open before waiting pumps are woken (or the whole budget, if smaller), so a release of a few
    /// bytes does not wake every waiter for nothing.
    static let wakeThreshold = 64 * 1024

    init(limit: Int, loop: EventLoop) {
        self.limit = limit
        self.loop = loop
    }

    /// Bytes a pump may still read.
    var available: Int { max(0, limit - held) }

    /// Counts `bytes` a pump now holds.
    func take(_ bytes: Int) {
        held += bytes
        peak = max(peak, held)
    }

    /// Counts `bytes` a pump wrote or dropped; wakes waiting pumps on a later turn once enough room opened.
    func release(_ bytes: Int) {
        held -= bytes
        if !waiting.isEmpty && (available >= min(Self.wakeThreshold, limit) || held == 0) { scheduleWake() }
    }

    /// Remembers that `pump` stopped reading because the budget was spent.
    func waitForRoom(_ pump: StreamPump) {
        waiting[ObjectIdentifier(pump)] = pump
    }

    /// Forgets a closed pump.
    func forget(_ pump: StreamPump) {
        waiting.removeValue(forKey: ObjectIdentifier(pump))
    }

    private func scheduleWake() {
        guard case .notDue = wake else { return }
        wake = .scheduled
        loop.schedule(at: loop.clock.now()) { [weak self] in self?.wakeWaiting() }
    }

    /// Hands every waiting pump the room that opened, after the write that released it.
    private func wakeWaiting() {
        wake = .notDue
        let pumps = Array(waiting.values)
        waiting.removeAll()
        let now = loop.clock.now()
        for pump in pumps { pump.due(.room, at: now) }
    }
}
