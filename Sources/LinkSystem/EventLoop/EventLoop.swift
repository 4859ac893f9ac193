import Foundation
import HeapModule
import LinkModel

/// One thread that owns every socket and timer registered with it, driven by epoll.
///
/// Deadlines use a timerfd armed with absolute nanosecond instants, so a 1 ms delay or a 100 Mbit/s pacing
/// step is not rounded to epoll_wait's milliseconds; `TimerWakeSpacing` lets deadlines microseconds apart share
/// one wake-up, and `DeliveryLead` wakes it shortly before a delivery due after a quiet spell and polls up to the
/// due time, so the timerfd's wake-up latency is not added to the delay (at most 2.5 % of a core). Other threads
/// talk to the loop only through `execute`, which queues work under a lock and writes the eventfd. Everything else
/// must be called on the loop thread.
public final class EventLoop: @unchecked Sendable {
    /// What a registered descriptor's owner is told: the epoll event bits.
    package typealias EventHandler = (UInt32) -> Void

    /// Who is told of a registered descriptor's events.
    private enum EventOwner {
        case handler(EventHandler)
        /// Held strongly until the registration is forgotten: no closure or weak reference is made per descriptor.
        case receiver(any EventReceiver)
    }

    private struct Registration {
        /// The key its events carry: a stale event (for an earlier owner of the descriptor) carries another.
        var key: UInt64
        var interest: UInt32
        var owner: EventOwner
    }

    private struct TimerEntry: Comparable {
        var deadline: Instant
        var id: UInt64
        /// Whether the timer delivers data at its deadline, so the loop may wake early and poll up to it.
        var delivery: Bool
        /// Whether the timerfd is armed for this deadline itself, not held back by `TimerWakeSpacing`.
        var exact: Bool
        static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
            lhs.deadline == rhs.deadline ? lhs.id < rhs.id : lhs.deadline < rhs.deadline
        }
    }

    /// A scheduled timer; pass it to `cancel` to drop it.
    public struct TimerID: Hashable, Sendable { fileprivate let value: UInt64 }

    /// A registered descriptor; the key packs a registration number with the fd so stale events are ignored.
    package struct RegistrationID: Hashable {
        fileprivate let key: UInt64
        fileprivate var descriptor: Int { Int(UInt32(truncatingIfNeeded: key)) }

        /// The key for registration `number` of `descriptor`: the number in the high 32 bits, so never one of the
        /// loop's own keys (0 and 1) while the number is at least 1.
        fileprivate static func key(number: UInt64, descriptor: Int32) -> UInt64 {
            (number << 32) | UInt64(UInt32(bitPattern: descriptor))
        }

        /// The registration number after `number`: from 2³² − 1 it wraps to 1, not 0, since a number of 0 would make
        /// the key of descriptor 0 or 1 the loop's wake-up or timer key (after 2³² registrations, about 40 hours of
        /// 15 000 short connections a second).
        static func number(after number: UInt64) -> UInt64 { number >= UInt64(UInt32.max) ? 1 : number + 1 }
    }

    public let clock = MonotonicClock()
    private let epoll: Epoll
    private let timer: DeadlineTimer
    private let wakeup: Wakeup
    /// Registrations by descriptor. The kernel hands out the lowest free descriptor, so the table stays as long
    /// as the most descriptors open at once, and an event finds its owner by indexing rather than hashing.
    private var registrations: [Registration?] = []
    private var nextRegistration: UInt64 = 2
    private var timers = Heap<TimerEntry>()
    /// The exact timers among `timers` (cancelled and fired ones dropped as they surface), so the spacing never
    /// holds one back.
    private var exactTimers = Heap<TimerEntry>()
    private var timerActions: [UInt64: () -> Void] = [:]
    /// Runs once before the handler of the next readiness event; nil when nobody waits for one.
    private var onNextEvent: (() -> Void)?
    private var nextTimer: UInt64 = 1
    private var armedDeadline: Instant?
    /// Whether the timerfd has fired and its expiration count was not consumed: it stays readable until the next
    /// arm resets the count (timerfd_settime does), which a busy loop does on its next turn anyway, so the read
    /// that would consume it is spared; a loop left with nothing to arm for reads it before it sleeps.
    private var timerFiredUnread = false
    /// How many times the loop read its timerfd's expiration count.
    private(set) var timerReads = 0
    /// Keeps timer wake-ups apart, so deadlines microseconds apart share one timerfd arm.
    private var wakeSpacing = TimerWakeSpacing.standard
    /// How early the loop wakes before a delivery after a quiet spell, to poll up to its due time.
    private let deliveryLead = DeliveryLead.standard
    /// How many times the loop armed its timerfd: each is a syscall and, on a virtual machine, a host timer reprogram.
    private(set) var timerArms = 0
    /// How many `epoll_ctl` calls (ADD, MOD, DEL) the loop made for its owners' descriptors.
    package private(set) var descriptorControls = 0
    private var running = true
    /// How many times the loop has waited for events: handlers of one batch see the same number, and a handler can
    /// tell whether its descriptor was also reported in the turn before (`TCPAcceptor`'s accept budget).
    package private(set) var turn: UInt64 = 0
    /// Set once by the loop thread before `start` returns, and read-only after that, so any thread may compare it.
    private var loopThread: ThreadIdentity?
    /// The loop thread's kernel thread id (its /proc/self/task entry), set with `loopThread`; 0 before `start`.
    package private(set) var kernelThreadID: Int32 = 0

    /// Work queued from any thread; `abandon`, when set, tells a waiting caller the work will never run.
    private struct PendingWork {
        var run: () -> Void
        var abandon: (() -> Void)?
    }

    private let pendingLock = NSLock()
    private var pendingWork: [PendingWork] = []
    private var acceptingWork = true
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    private static let wakeupKey: UInt64 = 0
    private static let timerKey: UInt64 = 1

    /// The descriptors the loop opened for itself (epoll, timerfd, eventfd), which `stopAndWait` closes.
    package var ownDescriptors: [Int32] { [epoll.descriptor, timer.descriptor, wakeup.descriptor] }

    public init() throws {
        epoll = try Epoll()
        do {
            timer = try DeadlineTimer()
            wakeup = try Wakeup()
            try epoll.add(wakeup.descriptor, events: Epoll.readable, data: Self.wakeupKey)
            try epoll.add(timer.descriptor, events: Epoll.readable, data: Self.timerKey)
        } catch {
            epoll.close()
            throw error
        }
    }

    /// Starts the loop on a new thread and returns once that thread has recorded its identity.
    ///
    /// Waiting orders the write of `loopThread` before every later `inLoopThread` in this thread and in any thread
    /// it hands the loop to; without it `submitAndWait` right after `start` read it while the loop thread wrote it.
    public func start(name: String = "linkcond-loop") {
        let identified = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            ThreadIdentity.nameCurrent(name)
            loopThread = ThreadIdentity.current
            kernelThreadID = ThreadIdentity.currentKernelID
            identified.signal()
            run()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 1 << 22
        self.thread = thread
        thread.start()
        identified.wait()
    }

    /// Runs `work` on the loop thread soon; safe from any thread. Returns false (and drops `work`) once the loop
    /// has been asked to stop.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        enqueue(PendingWork(run: work, abandon: nil))
    }

    private func enqueue(_ item: PendingWork) -> Bool {
        pendingLock.lock()
        guard acceptingWork else {
            pendingLock.unlock()
            return false
        }
        pendingWork.append(item)
        // Signalled under the lock: once stopAndWait has closed the queue, no caller still holds the eventfd.
        wakeup.signal()
        pendingLock.unlock()
        return true
    }

    /// Runs `work` on the loop thread and waits for its result; must not be called on the loop thread. Throws
    /// `EventLoopStopped` when the loop stops before running it.
    public func submitAndWait<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        precondition(!inLoopThread, "submitAndWait on the loop thread would deadlock")
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, Error>!
        let accepted = enqueue(
            PendingWork(
                run: {
                    result = Result { try work() }
                    done.signal()
                },
                abandon: {
                    result = .failure(EventLoopStopped())
                    done.signal()
                }))
        guard accepted else { throw EventLoopStopped() }
        done.wait()
        return try result.get()
    }

    /// Stops the loop after the work queued so far, waits for its thread to end, and closes its descriptors.
    /// Owners must have closed their sockets first (typically in work queued before this call).
    ///
    /// The stop is queued under the same lock that closes the queue, so no work lands behind it; work a loop that
    /// never started still holds is abandoned, which releases its waiters. Later calls do nothing.
    public func stopAndWait() {
        pendingLock.lock()
        guard acceptingWork else {
            pendingLock.unlock()
            return
        }
        acceptingWork = false
        pendingWork.append(PendingWork(run: { [self] in running = false }, abandon: nil))
        wakeup.signal()
        pendingLock.unlock()
        if thread != nil { finished.wait() }
        thread = nil
        pendingLock.lock()
        let leftovers = pendingWork
        pendingWork.removeAll()
        pendingLock.unlock()
        for item in leftovers { item.abandon?() }
        // The thread has ended, so nothing reads the table: receivers it still held are let go.
        registrations.removeAll()
        epoll.close()
        timer.close()
        wakeup.close()
    }

    package var inLoopThread: Bool { loopThread == ThreadIdentity.current }

    @inline(__always)
    func assertInLoop() {
        assert(inLoopThread, "called off the event loop thread")
    }

    /// Registers `descriptor` for `interest` events; `handler` runs on the loop thread for each event.
    package func register(_ descriptor: Int32, interest: UInt32, handler: @escaping EventHandler) throws(SystemError)
        -> RegistrationID
    {
        try register(descriptor, interest: interest, owner: .handler(handler))
    }

    /// Registers `descriptor` for `interest` events, told to `receiver` on the loop thread. The loop holds
    /// `receiver` until the registration is forgotten (`deregister`), so an owner that always deregisters before it
    /// lets go needs no weak reference to itself.
    package func register(_ descriptor: Int32, interest: UInt32, receiver: some EventReceiver) throws(SystemError)
        -> RegistrationID
    {
        try register(descriptor, interest: interest, owner: .receiver(receiver))
    }

    private func register(_ descriptor: Int32, interest: UInt32, owner: EventOwner) throws(SystemError)
        -> RegistrationID
    {
        assertInLoop()
        let key = RegistrationID.key(number: nextRegistration, descriptor: descriptor)
        nextRegistration = RegistrationID.number(after: nextRegistration)
        descriptorControls += 1
        try epoll.add(descriptor, events: interest, data: key)
        let index = Int(descriptor)
        if index >= registrations.count {
            registrations.append(
                contentsOf: repeatElement(nil, count: max(index + 1, 2 * registrations.count) - registrations.count))
        }
        registrations[index] = Registration(key: key, interest: interest, owner: owner)
        return RegistrationID(key: key)
    }

    /// The registration `key` names, or nil when it was forgotten (its descriptor may have a new owner since).
    @inline(__always)
    private func registration(forKey key: UInt64) -> Registration? {
        let index = RegistrationID(key: key).descriptor
        guard index < registrations.count, let registration = registrations[index], registration.key == key else {
            return nil
        }
        return registration
    }

    /// Gives a registered descriptor a new owner: a new key, `interest` and `handler` in one `epoll_ctl` MOD, in place
    /// of a deregister and a register. Like a fresh ADD, the MOD reports the readiness the descriptor has now, and
    /// an event still queued under the old key is ignored.
    func reregister(_ id: RegistrationID, interest: UInt32, handler: @escaping EventHandler) throws(SystemError)
        -> RegistrationID
    {
        try reregister(id, interest: interest, owner: .handler(handler))
    }

    /// `reregister` to a `receiver`, held as `register(_:interest:receiver:)` holds it.
    func reregister(_ id: RegistrationID, interest: UInt32, receiver: some EventReceiver) throws(SystemError)
        -> RegistrationID
    {
        try reregister(id, interest: interest, owner: .receiver(receiver))
    }

    private func reregister(_ id: RegistrationID, interest: UInt32, owner: EventOwner) throws(SystemError)
        -> RegistrationID
    {
        assertInLoop()
        guard registration(forKey: id.key) != nil else {
            preconditionFailure("reregister of a descriptor that is not registered")
        }
        let descriptor = Int32(id.descriptor)
        registrations[id.descriptor] = nil
        let key = RegistrationID.key(number: nextRegistration, descriptor: descriptor)
        nextRegistration = RegistrationID.number(after: nextRegistration)
        descriptorControls += 1
        do {
            try epoll.modify(descriptor, events: interest, data: key)
        } catch {
            try? epoll.remove(descriptor)
            throw error
        }
        registrations[id.descriptor] = Registration(key: key, interest: interest, owner: owner)
        return RegistrationID(key: key)
    }

    /// Gives a registered descriptor a new owner, as `reregister` does, but without a system call when `interest` is
    /// what it waits for already: the key stays (it still names the same open descriptor), so only edges after
    /// this call reach `receiver`, and readiness the earlier owner was told of and left unused must be passed on by
    /// it. With another interest, this is `reregister`, whose MOD reports the readiness again.
    package func transfer(_ id: RegistrationID, interest: UInt32, receiver: some EventReceiver) throws(SystemError)
        -> RegistrationID
    {
        assertInLoop()
        guard let registration = registration(forKey: id.key) else {
            preconditionFailure("transfer of a descriptor that is not registered")
        }
        guard registration.interest == interest else {
            return try reregister(id, interest: interest, receiver: receiver)
        }
        registrations[id.descriptor]!.owner = .receiver(receiver)
        return id
    }

    /// Changes the events a registration waits for; a no-op when they are unchanged.
    package func setInterest(_ id: RegistrationID, _ interest: UInt32) {
        assertInLoop()
        guard let registration = registration(forKey: id.key), registration.interest != interest else { return }
        registrations[id.descriptor]!.interest = interest
        descriptorControls += 1
        do {
            try epoll.modify(Int32(id.descriptor), events: interest, data: id.key)
        } catch {
            preconditionFailure("epoll_ctl MOD failed for a registered descriptor: \(error)")
        }
    }

    /// The events a registration waits for; nil once it is forgotten.
    package func interest(of id: RegistrationID) -> UInt32? {
        assertInLoop()
        return registration(forKey: id.key)?.interest
    }

    /// Forgets a registration; call before closing its descriptor.
    /// Stops watching a descriptor. A caller that closes the descriptor right after passes `closing`: the kernel
    /// drops a closed socket from the epoll set itself, so the `epoll_ctl` is saved, and any event still queued
    /// for it finds no registration and is ignored.
    package func deregister(_ id: RegistrationID, closing: Bool = false) {
        assertInLoop()
        guard registration(forKey: id.key) != nil else { return }
        registrations[id.descriptor] = nil
        if !closing {
            descriptorControls += 1
            try? epoll.remove(Int32(id.descriptor))
        }
    }

    /// Runs `action` on the loop thread at `deadline` (at once if it has passed). A `delivery` timer releases
    /// data whose lateness is delay error: the loop may wake shortly before it and poll up to it (`DeliveryLead`).
    /// An `exact` timer has spent its lateness budget already (a pump's held write): the loop wakes at its
    /// deadline even when `TimerWakeSpacing` would wake later.
    @discardableResult
    package func schedule(
        at deadline: Instant, delivery: Bool = false, exact: Bool = false, _ action: @escaping () -> Void
    ) -> TimerID {
        assertInLoop()
        let id = nextTimer
        nextTimer += 1
        let entry = TimerEntry(deadline: deadline, id: id, delivery: delivery, exact: exact)
        timers.insert(entry)
        if exact { exactTimers.insert(entry) }
        timerActions[id] = action
        return TimerID(value: id)
    }

    /// Runs `action` once, on the loop thread, just before the next readiness event of any registered descriptor
    /// is handled: how a sampler that stopped its timer while nothing moved learns that something may move again.
    /// One at a time; a later call replaces an earlier one.
    package func whenNextEvent(_ action: @escaping () -> Void) {
        assertInLoop()
        onNextEvent = action
    }

    package func cancel(_ timer: TimerID) {
        assertInLoop()
        guard timerActions.removeValue(forKey: timer.value) != nil else { return }
        compactTimersIfStale()
    }

    /// Entries in the timer heap, cancelled ones not yet dropped included.
    var timerEntries: Int { timers.count }

    /// Timers scheduled and neither run nor cancelled yet.
    package var liveTimers: Int { timerActions.count }

    /// Rebuilds the timer heaps from the live timers once cancelled entries outnumber them: a cancelled entry stays
    /// until its deadline surfaces, so a churn of connections each cancelling a 15 s connect timeout would
    /// otherwise keep hundreds of thousands of dead entries and make every insert pay for them.
    private func compactTimersIfStale() {
        guard timers.count > 2 * timerActions.count + 1_024 else { return }
        timers = Heap(timers.unordered.filter { timerActions[$0.id] != nil })
        exactTimers = Heap(exactTimers.unordered.filter { timerActions[$0.id] != nil })
    }

    private func run() {
        // Timer slack would make every due time up to 50 µs late. It belongs to the calling thread only (the kernel
        // keeps it per task), so each loop thread sets its own; a loop that cannot set it still runs, only coarser.
        try? TimerSlack.set(nanoseconds: 1)
        let capacity = 256
        let events = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity)
        let data = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        defer {
            events.deallocate()
            data.deallocate()
        }
        while running {
            let timeout = armTimer()
            turn &+= 1
            let count: Int
            do {
                count = try epoll.wait(
                    events: events, data: data, capacity: Int32(capacity), timeoutMilliseconds: timeout)
            } catch {
                preconditionFailure("epoll_wait failed: \(error)")
            }
            for index in 0..<count {
                switch data[index] {
                case Self.wakeupKey:
                    wakeup.acknowledge()
                    runPendingWork()
                case Self.timerKey:
                    timerFiredUnread = true
                    armedDeadline = nil
                default:
                    if let action = onNextEvent {
                        onNextEvent = nil
                        action()
                    }
                    switch registration(forKey: data[index])?.owner {
                    case .handler(let handler)?: handler(events[index])
                    case .receiver(let receiver)?:
                        receiver.receive(events[index], on: Int32(RegistrationID(key: data[index]).descriptor))
                    case nil: break
                    }
                }
            }
            runDueTimers()
        }
    }

    private func runPendingWork() {
        pendingLock.lock()
        let work = pendingWork
        pendingWork.removeAll(keepingCapacity: true)
        pendingLock.unlock()
        for item in work { item.run() }
    }

    private func runDueTimers() {
        guard !timers.isEmpty else { return }
        let now = clock.now()
        if let first = timers.min, first.deadline <= now { wakeSpacing.timersRan(at: now) }
        var fired = 0
        while let first = timers.min, first.deadline <= now, fired < 100_000 {
            timers.removeMin()
            fired += 1
            if let action = timerActions.removeValue(forKey: first.id) { action() }
        }
    }

    /// Re-arms the timerfd for the earliest live deadline as `wakeSpacing` and `deliveryLead` allow, dropping
    /// cancelled entries from the top of the heap, and returns epoll_wait's timeout: 0 when that deadline has
    /// already passed (a loop turn yielded with a zero-delay timer), so the loop only polls and runs it without a
    /// timerfd round trip, and 0 too while a delivery's lead runs, so the loop polls up to its due time; -1 (wait
    /// for an event) otherwise.
    private func armTimer() -> Int32 {
        while let first = timers.min, timerActions[first.id] == nil { timers.removeMin() }
        guard let first = timers.min else {
            acknowledgeFiredTimer()
            return -1
        }
        let earliest = first.deadline
        let now = clock.now()
        if earliest <= now { return 0 }
        while let exact = exactTimers.min, timerActions[exact.id] == nil { exactTimers.removeMin() }
        var wake = wakeSpacing.wake(forEarliest: earliest, exact: exactTimers.min?.deadline)
        if first.delivery {
            switch deliveryLead.step(toward: earliest, now: now, timersLastRan: wakeSpacing.lastRun) {
            case .unled: break
            case .wake(let instant): wake = instant
            case .poll: return 0
            }
        }
        if let armed = armedDeadline, armed <= wake { return -1 }
        do {
            try timer.arm(at: wake)
            timerArms += 1
            armedDeadline = wake
            timerFiredUnread = false
        } catch {
            preconditionFailure("timerfd_settime failed: \(error)")
        }
        return -1
    }

    /// Consumes a fired timerfd's expiration count before the loop sleeps without re-arming it, so a timerfd left
    /// readable does not wake it at once.
    private func acknowledgeFiredTimer() {
        guard timerFiredUnread else { return }
        timer.acknowledge()
        timerReads += 1
        timerFiredUnread = false
    }
}

/// An owner of registered descriptors told of their events by a call rather than a closure per descriptor.
///
/// Lives on the event loop thread that it registered with.
package protocol EventReceiver: AnyObject {
    /// `descriptor`, registered by this receiver, reported `events` (epoll event bits).
    func receive(_ events: UInt32, on descriptor: Int32)
}

/// The loop has stopped and takes no more work.
public struct EventLoopStopped: Error, CustomStringConvertible, Sendable {
    public var description: String { "the event loop has stopped" }
}
