import Logging

/// Empty splice pipes kept for the next connection: opening one costs a `pipe2`, an `F_SETPIPE_SZ` and two
/// closes later, a large share of a short connection's set-up (HAProxy pools its pipes for the same reason).
///
/// Lives on the event loop thread, one per loop (held by its `ReadBuffer`). A pipe comes back only when it is
/// empty, by the kernel's count or because nothing was spliced into it since it was handed out, so no byte of one
/// connection can reach another. It keeps at most `limit` pipes, two descriptors each, none made while descriptors
/// ran short, and gives them all up when an accept or a new upstream socket finds descriptors exhausted.
final class SplicePipePool {
    /// Pipes kept at most: 32 (64 descriptors, enough for a burst of short connections), or fewer, so that
    /// kept pipes never hold more than a sixteenth of the process's descriptor limit.
    let limit: Int

    /// Descriptors from this number up are the last eighth below the process's limit. Linux hands out the lowest
    /// free number, so a new descriptor this high means nearly every one is in use: pipes are not kept then.
    private let crowdedFrom: Int
    /// The number of the descriptor the loop opened last (`noteOpened`).
    private var lastOpened: Int32 = 0

    private var idle: [SplicePipe] = []

    /// Pipes this pool opened, and pipes closed through it. A pipe a splice loop's pool opened may be closed through
    /// the main loop's pool after a recall, so what a proxy still holds is the sum over all its pools.
    private(set) var pipesOpened = 0
    private(set) var pipesClosed = 0

    /// A pool of at most `most` pipes, fewer for a small descriptor limit (unlimited when nil).
    convenience init(descriptorLimit: Int? = openDescriptorLimit, keepingAtMost most: Int = 32) {
        self.init(
            limit: min(most, (descriptorLimit ?? Int.max) / 32),
            crowdedFrom: descriptorLimit.map { $0 - $0 / 8 } ?? Int.max)
    }

    init(limit: Int, crowdedFrom: Int) {
        self.limit = limit
        self.crowdedFrom = crowdedFrom
    }

    /// Pipes waiting for a connection.
    var count: Int { idle.count }

    /// A pipe of `size` bytes asked: a kept one when there is one, else a new one.
    func take(size: Int) throws(SystemError) -> SplicePipe {
        if let pipe = idle.popLast() { return pipe }
        let pipe = try SplicePipe.open(size: size)
        pipesOpened += 1
        return pipe
    }

    /// Records a descriptor the loop just opened: how crowded the descriptor table is.
    func noteOpened(_ descriptor: Int32) {
        lastOpened = descriptor
    }

    /// Keeps `pipe` for the next connection if it is empty, there is room, and descriptors are not running short;
    /// closes it otherwise. A giver whose own count of the bytes spliced in and out says the pipe is empty
    /// (`knownEmpty`, as `StreamSplice` keeps it from the kernel's return values) saves asking the kernel; any other
    /// pipe is kept only when the kernel counts no byte in it.
    func give(_ pipe: SplicePipe, knownEmpty: Bool = false) {
        guard idle.count < limit, Int(max(pipe.readEnd, pipe.writeEnd, lastOpened)) < crowdedFrom,
            knownEmpty || pipe.isEmpty
        else {
            discard(pipe)
            return
        }
        idle.append(pipe)
    }

    /// Closes `pipe`, which holds bytes no one will read or is not to be kept.
    func discard(_ pipe: SplicePipe) {
        pipe.close()
        pipesClosed += 1
    }

    /// Closes every kept pipe: the loop is stopping.
    func release() {
        for pipe in idle { discard(pipe) }
        idle.removeAll()
    }

    /// Closes every kept pipe because descriptors ran out, and logs how many; true when it closed any.
    @discardableResult
    func releaseForShortage(logger: Logger) -> Bool {
        guard !idle.isEmpty else { return false }
        let count = idle.count
        release()
        logger.notice("descriptors exhausted: closed \(count) kept splice pipes (\(2 * count) descriptors)")
        return true
    }

    /// What a listener's acceptor runs when an accept fails: descriptors are short, so the kept pipes go (true
    /// when there were any).
    func shortageHandler(logger: Logger) -> () -> Bool {
        { [self] in releaseForShortage(logger: logger) }
    }

    deinit { release() }
}
