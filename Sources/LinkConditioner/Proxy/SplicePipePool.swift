/// Empty splice pipes kept for the next connection: opening one costs a `pipe2`, an `F_SETPIPE_SZ` and two
/// closes later, a large share of a short connection's set-up (HAProxy pools its pipes for the same reason).
///
/// Lives on the event loop thread, one per loop (held by its `ReadBuffer`). A pipe comes back only when the
/// kernel says it is empty, so no byte of one connection can reach another. It keeps at most `limit` pipes, two
/// descriptors each, and gives them all up when an accept finds descriptors exhausted.
final class SplicePipePool {
    /// Pipes kept at most: 32 (64 descriptors, enough for a burst of short connections), or fewer, so that
    /// kept pipes never hold more than a sixteenth of the process's descriptor limit.
    let limit: Int

    private var idle: [SplicePipe] = []

    init(descriptorLimit: Int? = openDescriptorLimit) {
        limit = min(32, (descriptorLimit ?? Int.max) / 32)
    }

    /// Pipes waiting for a connection.
    var count: Int { idle.count }

    /// A pipe of `size` bytes asked: a kept one when there is one, else a new one.
    func take(size: Int) throws(SystemError) -> SplicePipe {
        if let pipe = idle.popLast() { return pipe }
        return try SplicePipe.open(size: size)
    }

    /// Keeps `pipe` for the next connection if it is empty and there is room, and closes it otherwise.
    func give(_ pipe: SplicePipe) {
        guard idle.count < limit, pipe.isEmpty else {
            pipe.close()
            return
        }
        idle.append(pipe)
    }

    /// Closes every kept pipe: descriptors are short, or the loop is stopping.
    func release() {
        for pipe in idle { pipe.close() }
        idle.removeAll()
    }

    deinit { release() }
}
