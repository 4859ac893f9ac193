/// What the listeners one of the proxy's other event loops owns share: a read buffer with its splice pipe pool, that
/// loop's share of the proxy's buffer budget, and a descriptor kept for turning clients away.
///
/// Lives on that loop's thread; made before the thread starts. Nothing in it is shared with another loop: a loop
/// reads, splices and counts held bytes on its own, with no lock on the path every byte takes.
final class LoopListenerResources {
    let readBuffer = ReadBuffer()
    /// This loop's part of `ProxyOptions.maximumBuffered` (see `ConditionedProxy.bufferShare`).
    let bufferBudget: BufferBudget
    private var reserve: DescriptorReserve?

    init(bufferShare: Int, loop: EventLoop) {
        bufferBudget = BufferBudget(limit: bufferShare, loop: loop)
    }

    /// The descriptor this loop's listeners turn clients away with when the process runs out; opened with the first
    /// listener, so a loop that owns none holds none.
    var descriptorReserve: DescriptorReserve {
        if let reserve { return reserve }
        let opened = DescriptorReserve(capacity: 1)
        reserve = opened
        return opened
    }

    /// Closes the pipes kept and the reserved descriptor, once the loop's listeners are closed.
    func close() {
        readBuffer.pipes.release()
        reserve?.close()
        reserve = nil
    }
}
