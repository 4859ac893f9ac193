import Foundation

/// Name lookups for a proxy front end, made with getaddrinfo on worker threads so the event loop never blocks.
///
/// `lookup` is called on the loop thread; each answer comes back on the loop thread through `EventLoop.execute`.
/// At most `workerCount` lookups run at once and at most `queueLimit` wait; beyond that a lookup fails at once.
/// Timeouts are the caller's business (a lookup stuck in getaddrinfo only occupies its worker).
final class HostResolver: @unchecked Sendable {
    typealias Answer = Result<[SocketAddress], ResolutionError>

    private struct Job {
        var endpoint: Endpoint
        var deliver: @Sendable (Answer) -> Void
    }

    private let loop: EventLoop
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var running = 0
    private var workers = 0
    private var isShutDown = false
    let workerCount: Int
    let queueLimit: Int

    init(loop: EventLoop, workerCount: Int = 4, queueLimit: Int = 128) {
        self.loop = loop
        self.workerCount = workerCount
        self.queueLimit = queueLimit
    }

    /// Looks `endpoint` up and runs `completion` on the loop thread with the addresses or the error.
    /// Returns false, without running `completion`, when too many lookups are already waiting.
    func lookup(_ endpoint: Endpoint, completion: @escaping @Sendable (Answer) -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown, jobs.count < queueLimit else { return false }
        jobs.append(Job(endpoint: endpoint, deliver: completion))
        if workers < workerCount && running + jobs.count > workers {
            workers += 1
            let thread = Thread { [self] in work() }
            thread.name = "linkcond-resolver"
            thread.start()
        }
        condition.signal()
        return true
    }

    /// Drops waiting lookups and stops delivering answers; called on the loop thread before the loop stops.
    func shutDown() {
        condition.lock()
        isShutDown = true
        jobs.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            while jobs.isEmpty && !isShutDown { condition.wait() }
            if isShutDown { break }
            let job = jobs.removeFirst()
            running += 1
            condition.unlock()
            let answer = Result { () throws(ResolutionError) in try job.endpoint.resolve() }
            condition.lock()
            running -= 1
            // Delivering under the lock orders it before `shutDown` returns, so the loop is still alive.
            if !isShutDown {
                let deliver = job.deliver
                loop.execute { deliver(answer) }
            }
        }
        workers -= 1
        condition.unlock()
    }
}
