/// A listener owned by one of the proxy's other event loops (`ProxyOptions.threads`), as the main loop drives it.
///
/// Lives on the main loop thread. The listener it stands for, with its acceptor, its link pair, its relays and their
/// timers, lives on `loop` and is reached only there: each call posts to that loop and waits for it, as
/// `submitAndWait` does, so when `apply` returns the listener's new data already sees the new profile. The main loop
/// waits on the other loops, and they never wait on it, so the two cannot deadlock.
final class LoopOwnedListener: ConditionedListener {
    /// The loop that owns the listener.
    let loop: EventLoop
    /// The owning loop's place among the proxy's loops: 0 is the main loop, so this is 1 or more.
    let loopIndex: Int
    private let listener: LoopBound<ConditionedListener>
    let bound: BoundListener
    let addresses: ListenerAddresses
    /// The figures read last, answered once the owning loop has stopped.
    private var lastStatus: ListenerStatus

    /// Takes `listener`, made on `loop` and read there for its fixed parts (`bound`, `addresses`, a first status).
    init(
        _ listener: LoopBound<ConditionedListener>, on loop: EventLoop, loopIndex: Int,
        bound: BoundListener, addresses: ListenerAddresses, status: ListenerStatus
    ) {
        self.listener = listener
        self.loop = loop
        self.loopIndex = loopIndex
        self.bound = bound
        self.addresses = addresses
        lastStatus = status
        lastStatus.loop = loopIndex
    }

    /// Runs `body` with the listener on its own loop and returns its result; nil once that loop has stopped.
    func onOwner<T: Sendable>(_ body: @escaping @Sendable (ConditionedListener) -> T) -> T? {
        let listener = self.listener
        return try? loop.submitAndWait { body(listener.value) }
    }

    func apply(_ profile: Profile) { _ = onOwner { $0.apply(profile) } }

    func resetConnections() { _ = onOwner { $0.resetConnections() } }

    func status() -> ListenerStatus {
        let loopIndex = self.loopIndex
        if let status = onOwner({ listener in
            var status = listener.status()
            status.loop = loopIndex
            return status
        }) {
            lastStatus = status
        }
        return lastStatus
    }

    func connectionEntries() -> [ConnectionEntry] { onOwner { $0.connectionEntries() } ?? [] }

    func close() { _ = onOwner { $0.close() } }

    func cameOnline() { _ = onOwner { $0.cameOnline() } }
}
