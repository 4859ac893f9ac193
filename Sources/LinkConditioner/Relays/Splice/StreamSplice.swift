/// The splice path of one stream direction: while the direction has nothing to shape, its bytes move from the
/// source socket into a kernel pipe and on to the destination with `splice(2)`, never copied into user space.
///
/// Lives on the event loop thread, owned by one `StreamPump`. The pipe is taken from the loop's pool when the
/// source has bytes and given back once it is empty and the source has no more, or at close. Bytes in it were read
/// from the source before anything the copying path reads later, so leaving the path copies them out first.
final class StreamSplice {
    /// Room asked for the pipe: enough for a few windows of a fast loopback stream.
    static let pipeSize = 256 * 1024

    private let pool: SplicePipePool
    private var pipe: SplicePipe?
    /// Bytes in the pipe, read from the source and not yet written to the destination: every change is a count the
    /// kernel returned for this pipe, which nothing else reads or writes, so zero means empty and giving the pipe
    /// back needs no `FIONREAD`.
    private(set) var pipedBytes = 0
    /// Set when the kernel refuses pipes for a reason other than a shortage of descriptors: the pump copies from
    /// then on.
    private(set) var isUnavailable = false

    init(pool: SplicePipePool) {
        self.pool = pool
    }

    /// Takes a pipe if it has none yet; false when the kernel refuses one. A shortage of descriptors only makes
    /// this burst copy, so a long connection splices again once descriptors are free.
    func prepare() -> Bool {
        if pipe != nil { return true }
        guard !isUnavailable else { return false }
        do {
            pipe = try pool.take(size: Self.pipeSize)
            return true
        } catch {
            if !error.isDescriptorShortage { isUnavailable = true }
            return false
        }
    }

    /// Whether a pipe is taken.
    var holdsPipe: Bool { pipe != nil }

    /// Room left in the pipe, in bytes.
    var room: Int { max(0, (pipe?.capacity ?? 0) - pipedBytes) }

    /// Moves what the source has, up to the pipe's room, into the pipe.
    func fill(from source: Socket) throws(SystemError) -> IOResult<Int> {
        guard let pipe else { return .wouldBlock }
        let result = try pipe.fill(from: source, count: max(room, 1))
        if case .processed(let count) = result { pipedBytes += count }
        return result
    }

    /// Puts bytes read into user space into the pipe, behind what it holds; how many it took.
    func stash(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        guard let pipe, case .processed(let count) = try pipe.write(bytes) else { return 0 }
        pipedBytes += count
        return count
    }

    /// Moves what the pipe holds to `destination`, as far as it takes.
    func drain(to destination: Socket) throws(SystemError) -> IOResult<Int> {
        guard let pipe, pipedBytes > 0 else { return .processed(0) }
        let result = try pipe.drain(to: destination, count: pipedBytes)
        if case .processed(let count) = result {
            pipedBytes -= count
        }
        return result
    }

    /// Copies everything the pipe holds out of it, in order, for the copying path to carry from here on.
    func takeBack() throws(SystemError) -> [UInt8] {
        guard let pipe, pipedBytes > 0 else { return [] }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pipedBytes, alignment: 1)
        defer { buffer.deallocate() }
        var taken = 0
        while taken < buffer.count {
            guard
                case .processed(let count) = try pipe.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[taken...])),
                count > 0
            else { break }
            taken += count
        }
        pipedBytes -= taken
        return Array(UnsafeRawBufferPointer(rebasing: buffer[..<taken]))
    }

    /// Lets go of the pipe for a splice loop: it comes along when it holds bytes, and goes back to the pool empty.
    func handOver() -> (pipe: SplicePipe?, pipedBytes: Int) {
        giveBack()
        defer {
            pipe = nil
            pipedBytes = 0
        }
        return (pipe, pipedBytes)
    }

    /// Takes a pipe a splice loop handed back, holding `bytes` read from the source and not yet written.
    func adopt(_ pipe: SplicePipe, holding bytes: Int) {
        close()
        self.pipe = pipe
        pipedBytes = bytes
    }

    /// Gives the empty pipe back to the pool: the source has nothing more for now, so an idle connection holds
    /// two sockets and no pipe, and the next burst takes a pipe from the pool again.
    func giveBack() {
        guard let pipe, pipedBytes == 0 else { return }
        pool.give(pipe, knownEmpty: true)
        self.pipe = nil
    }

    /// Gives the pipe back to the pool when it is empty, and closes it when bytes are left in it.
    func close() {
        if let pipe {
            if pipedBytes == 0 { pool.give(pipe, knownEmpty: true) } else { pool.discard(pipe) }
        }
        pipe = nil
        pipedBytes = 0
    }
}
