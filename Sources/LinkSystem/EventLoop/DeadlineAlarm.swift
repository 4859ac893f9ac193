import LinkModel

/// A one-shot loop timer that keeps only the earliest deadline asked of it: the wake-up of a link's serialiser
/// or of a pump's next delivery.
///
/// Lives on the event loop thread. Arming for a later instant than the one pending is a no-op; the action runs
/// once at the pending deadline and the alarm is then free to be armed again.
package final class DeadlineAlarm {
    private let loop: EventLoop
    private let action: (Instant) -> Void
    /// Whether the action delivers data, so the loop may wake shortly before it (`EventLoop.schedule(at:delivery:)`).
    private let delivery: Bool
    /// Whether the loop wakes at the deadline itself, unspaced (`EventLoop.schedule(at:delivery:exact:)`).
    private let exact: Bool
    private var timer: EventLoop.TimerID?
    private(set) var deadline: Instant?

    /// `action` receives the loop's clock reading when the alarm fires; capture its owner weakly. A `delivery`
    /// alarm releases data whose lateness is delay error; an `exact` one is never held back by the loop's spacing.
    package init(loop: EventLoop, delivery: Bool = false, exact: Bool = false, action: @escaping (Instant) -> Void) {
        self.loop = loop
        self.delivery = delivery
        self.exact = exact
        self.action = action
    }

    /// Makes the alarm fire at `instant`, unless it already fires no later.
    package func arm(at instant: Instant) {
        if let deadline, deadline <= instant { return }
        if let timer { loop.cancel(timer) }
        deadline = instant
        timer = loop.schedule(at: instant, delivery: delivery, exact: exact) { [weak self] in self?.fire() }
    }

    /// Makes the alarm fire at `instant` if there is one.
    package func arm(at instant: Instant?) {
        if let instant { arm(at: instant) }
    }

    private func fire() {
        timer = nil
        deadline = nil
        action(loop.clock.now())
    }

    package func cancel() {
        if let timer { loop.cancel(timer) }
        timer = nil
        deadline = nil
    }
}
