import Logging

/// The proxy's splice loops as its main loop sees them: which relay each carries, handing over, taking back.
///
/// Lives on the main event loop thread. A splice loop tells it that a connection ended by posting to the main loop,
/// so the listener's connection list, counters and descriptors are settled there.
final class SpliceLoops {
    private let mainLoop: EventLoop
    let loops: [SpliceLoop]
    /// Relays on a splice loop now, by ticket, with the index of the loop carrying them.
    private var carried: [UInt64: (relay: TCPRelay, loop: Int)] = [:]
    /// Connections each loop carries, to hand the next one to the least loaded.
    private var loads: [Int]
    private var nextTicket: UInt64 = 1
    /// Connections handed over since the start, each time one left the main loop.
    private(set) var handOvers = 0

    /// Starts `count` splice loop threads, whose listeners may each hold `bufferShare` bytes; none is left running
    /// when it throws.
    init(count: Int, mainLoop: EventLoop, bufferShare: Int, logger: Logger) throws {
        var started: [SpliceLoop] = []
        do {
            for _ in 0..<max(count, 0) { started.append(try SpliceLoop(logger: logger, bufferShare: bufferShare)) }
        } catch {
            for loop in started { loop.stop() }
            throw error
        }
        self.mainLoop = mainLoop
        loops = started
        loads = Array(repeating: 0, count: started.count)
    }

    /// Splice loop threads running.
    var threads: Int { loops.count }

    /// Connections on splice loops now.
    var connections: Int { carried.count }

    /// Whether a connection can be handed over: there is a splice loop to take it.
    var canHandOver: Bool { !loops.isEmpty }

    /// Hands `relay`'s connection, as `package` makes it for its ticket, to the least loaded splice loop. Only
    /// when `canHandOver`; returns the ticket the connection goes by until it comes back.
    func handOver(_ relay: TCPRelay, _ package: (UInt64) -> HandedOverConnection) -> UInt64 {
        guard let index = loads.indices.min(by: { loads[$0] < loads[$1] }) else {
            preconditionFailure("a connection handed over with no splice loop to take it")
        }
        let ticket = nextTicket
        nextTicket += 1
        handOvers += 1
        carried[ticket] = (relay, index)
        loads[index] += 1
        let mainLoop = self.mainLoop
        let owner = LoopBound(self)
        loops[index].adopt(package(ticket)) { how in
            mainLoop.execute { owner.value.ended(ticket, how) }
        }
        return ticket
    }

    /// Takes every connection back from the splice loops and resumes its relay on the main loop, before the
    /// conditions change. A connection that ended meanwhile stays listed until its end arrives.
    func recallAll() {
        guard !carried.isEmpty else { return }
        for (index, loop) in loops.enumerated() where loads[index] > 0 {
            for connection in loop.recallAll() {
                guard let entry = carried.removeValue(forKey: connection.ticket) else { continue }
                loads[index] -= 1
                entry.relay.resume(from: connection)
            }
        }
    }

    /// Takes the connection handed over as `ticket` back from its splice loop, so the main loop may close its
    /// sockets: resumed on the main loop, or, when it ended there meanwhile, with its last bytes counted (its
    /// `ended` is then ignored).
    func recall(_ ticket: UInt64) {
        guard let entry = carried.removeValue(forKey: ticket) else { return }
        loads[entry.loop] -= 1
        if let connection = loops[entry.loop].recall(ticket) {
            entry.relay.resume(from: connection)
        } else {
            entry.relay.settleSplicedBytes()
        }
    }

    /// A splice loop let go of a connection: it ended there, or it needs the main loop.
    private func ended(_ ticket: UInt64, _ how: SpliceEnd) {
        guard let entry = carried.removeValue(forKey: ticket) else { return }
        loads[entry.loop] -= 1
        switch how {
        case .closed:
            entry.relay.endedOnSpliceLoop(reset: false)
        case .reset:
            entry.relay.endedOnSpliceLoop(reset: true)
        case .needsMainLoop:
            // Nil only when the loop has stopped; the relay is then closed with its listener.
            if let connection = loops[entry.loop].recall(ticket) { entry.relay.resume(from: connection) }
        }
    }

    /// Ends every splice loop thread; connections must have been recalled (`recallAll`) first.
    func stop() {
        for loop in loops { loop.stop() }
    }
}
