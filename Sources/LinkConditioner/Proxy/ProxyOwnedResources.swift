/// What a running proxy opened and must close when it stops: its loop threads, the descriptors each loop opened for
/// itself, and the splice pipe pools through which every pipe it splices through is opened and closed.
///
/// A leak check takes it while the proxy runs and looks again after `stop`, so it counts only this proxy's threads
/// and descriptors, and other tests may start and stop proxies meanwhile. The pools belong to their loops' threads:
/// `pipesOpen` is read only once those threads have ended (after `stop`).
struct ProxyOwnedResources: @unchecked Sendable {
    /// The main loop's and each splice loop's kernel thread id, main loop first.
    var threadIDs: [Int32] = []
    /// The epoll, timerfd and eventfd of each loop.
    var loopDescriptors: [Int32] = []
    /// The main loop's pool, and each splice loop's two: its splicing's and its own listeners'.
    var pipePools: [SplicePipePool] = []

    /// Pipes opened through the pools and not closed through them.
    var pipesOpen: Int { pipePools.reduce(0) { $0 + $1.pipesOpened - $1.pipesClosed } }
}

extension ConditionedProxy {
    /// The threads, loop descriptors and pipe pools of this proxy; empty once it stopped.
    func ownedResources() -> ProxyOwnedResources {
        let resources = try? attach { state in
            let loops = [state.loop] + (state.spliceLoops?.loops.map(\.loop) ?? [])
            let pools =
                [state.listenerContext?.readBuffer.pipes].compactMap { $0 }
                + (state.spliceLoops?.loops.flatMap { [$0.pipes, $0.listenerPipes] } ?? [])
            return ProxyOwnedResources(
                threadIDs: loops.map(\.kernelThreadID),
                loopDescriptors: loops.flatMap(\.ownDescriptors), pipePools: pools)
        }
        return resources ?? ProxyOwnedResources()
    }
}
