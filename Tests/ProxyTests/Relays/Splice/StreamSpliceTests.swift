import Glibc
import Testing

@testable import LinkConditioner

/// A direction's splice path hands its pipe back to the loop's pool whenever the pipe is empty, and only then.
struct StreamSpliceTests {
    /// A connected pair of non-blocking stream sockets; the caller closes both.
    private func socketPair() throws -> (Socket, Socket) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        return (Socket(descriptor: fds[0]), Socket(descriptor: fds[1]))
    }

    @Test func aPipeThatFoundTheSourceEmptyGoesBackToThePool() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: .max)
        defer { pool.release() }
        let (source, peer) = try socketPair()
        defer {
            source.close()
            peer.close()
        }
        let splice = StreamSplice(pool: pool)
        try #require(splice.prepare())

        let filled = try splice.fill(from: source)
        splice.giveBack()

        guard case .wouldBlock = filled else {
            Issue.record("an empty source filled \(filled)")
            return
        }
        #expect(pool.count == 1)
    }

    /// A byte written into the pipe behind the splice's back tells whether the kernel was asked: it would count it
    /// and the pool would close the pipe. Nothing was spliced in, so the splice's word is enough and no `FIONREAD`
    /// is spent.
    @Test func aPipeNothingWasSplicedIntoGoesBackWithoutAskingTheKernel() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: .max)
        defer { pool.release() }
        let (source, peer) = try socketPair()
        defer {
            source.close()
            peer.close()
        }
        let pipe = try pool.take(size: StreamSplice.pipeSize)
        pool.give(pipe)
        let splice = StreamSplice(pool: pool)
        try #require(splice.prepare())
        var stray: UInt8 = 0x42
        #expect(write(pipe.writeEnd, &stray, 1) == 1)

        _ = try splice.fill(from: source)
        splice.giveBack()

        #expect(pool.count == 1)
    }

    @Test func aPipeFilledAndDrainedGoesBackToThePool() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: .max)
        defer { pool.release() }
        let (source, sender) = try socketPair()
        let (destination, receiver) = try socketPair()
        defer {
            source.close()
            sender.close()
            destination.close()
            receiver.close()
        }
        let payload: [UInt8] = Array(0..<100)
        #expect(payload.withUnsafeBytes { write(sender.descriptor, $0.baseAddress, $0.count) } == 100)
        let splice = StreamSplice(pool: pool)
        try #require(splice.prepare())

        _ = try splice.fill(from: source)
        _ = try splice.drain(to: destination)
        splice.giveBack()

        var received = [UInt8](repeating: 0, count: 200)
        #expect(read(receiver.descriptor, &received, received.count) == 100)
        #expect(Array(received[..<100]) == payload)
        #expect(pool.count == 1)
    }

    /// As above, a stray byte written behind the splice's back shows whether the kernel was asked: the splice counted
    /// 64 bytes in and 64 out, so its own count says the pipe is empty, and a burst ends without a `FIONREAD`.
    @Test func aPipeFilledAndDrainedGoesBackOnTheSplicesCountWithoutAskingTheKernel() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: .max)
        defer { pool.release() }
        let (source, sender) = try socketPair()
        let (destination, receiver) = try socketPair()
        defer {
            source.close()
            sender.close()
            destination.close()
            receiver.close()
        }
        let payload = [UInt8](repeating: 0x2A, count: 64)
        #expect(payload.withUnsafeBytes { write(sender.descriptor, $0.baseAddress, $0.count) } == 64)
        let pipe = try pool.take(size: StreamSplice.pipeSize)
        pool.give(pipe)
        let splice = StreamSplice(pool: pool)
        try #require(splice.prepare())
        let filled = try splice.fill(from: source)
        let drained = try splice.drain(to: destination)
        var stray: UInt8 = 0x42
        #expect(write(pipe.writeEnd, &stray, 1) == 1)

        splice.giveBack()

        guard case .processed(64) = filled, case .processed(64) = drained else {
            Issue.record("filled \(filled), drained \(drained)")
            return
        }
        #expect(pool.count == 1)
    }

    @Test func aPipeStillHoldingBytesAtCloseIsClosedNotKept() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: .max)
        defer { pool.release() }
        let (source, sender) = try socketPair()
        defer {
            source.close()
            sender.close()
        }
        var byte: UInt8 = 0x42
        #expect(write(sender.descriptor, &byte, 1) == 1)
        let splice = StreamSplice(pool: pool)
        try #require(splice.prepare())
        _ = try splice.fill(from: source)

        splice.close()

        #expect(pool.count == 0)
    }
}
