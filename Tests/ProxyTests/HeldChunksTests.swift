import Glibc
@testable import LinkConditioner
import Testing

/// What one write of a pump takes from the chunks it holds: the released bytes in order across the boundaries
/// between reads, never more than released, from at most `gatherLimit` chunks.
struct HeldChunksTests {
    private func chunks(_ sizes: [Int]) -> HeldChunks {
        var held = HeldChunks()
        var next: UInt8 = 0
        for size in sizes {
            held.append((0..<size).map { _ in
                defer { next &+= 1 }
                return next
            })
        }
        return held
    }

    private func bytes(of held: HeldChunks, upTo count: Int) -> [[UInt8]] {
        held.withSlices(upTo: count) { slices in slices.map { Array($0) } }
    }

    @Test func aReleaseSpanningTwoReadsIsOneWritesSlicesInOrder() {
        let held = chunks([5, 5])

        let slices = bytes(of: held, upTo: 8)

        #expect(slices == [[0, 1, 2, 3, 4], [5, 6, 7]])
    }

    @Test func aWriteTakesNoMoreThanWasReleased() {
        let held = chunks([5, 5])

        #expect(bytes(of: held, upTo: 3) == [[0, 1, 2]])
        #expect(bytes(of: held, upTo: 0) == [])
    }

    @Test func aWriteAfterAPartialOneStartsWhereItStopped() {
        var held = chunks([5, 5])

        held.removeFirst(3)

        #expect(bytes(of: held, upTo: 10) == [[3, 4], [5, 6, 7, 8, 9]])
    }

    @Test func writtenBytesThatEmptyChunksDropThem() {
        var held = chunks([2, 2, 2])

        held.removeFirst(5)

        #expect(bytes(of: held, upTo: 10) == [[5]])
    }

    @Test func oneWriteGathersAtMostTheGatherLimitOfChunks() {
        let held = chunks(Array(repeating: 1, count: HeldChunks.gatherLimit + 2))

        let slices = bytes(of: held, upTo: HeldChunks.gatherLimit + 2)

        #expect(slices.count == HeldChunks.gatherLimit)
        #expect(slices.flatMap { $0 } == (0..<UInt8(HeldChunks.gatherLimit)).map { $0 })
    }
}

/// The pump's socket calls on a real socket pair: a gathering write puts its buffers on the stream in order, and
/// a busy source is read into storage of its own that holds no more than what was read.
struct PumpSocketCallTests {
    /// A connected pair of non-blocking stream sockets; the caller closes both.
    private func socketPair() throws -> (Socket, Socket) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        return (Socket(descriptor: fds[0]), Socket(descriptor: fds[1]))
    }

    @Test func aGatheringWritePutsEveryBufferOnTheStreamInOrderInOneCall() throws {
        let (writer, reader) = try socketPair()
        defer { writer.close(); reader.close() }
        let first: [UInt8] = [1, 2, 3], second: [UInt8] = [4, 5], third: [UInt8] = [6]

        let result = try first.withUnsafeBytes { a in
            try second.withUnsafeBytes { b in
                try third.withUnsafeBytes { c in
                    try [a, b, c].withUnsafeBufferPointer { try writer.write(gathering: $0) }
                }
            }
        }
        var received = [UInt8](repeating: 0, count: 16)
        let count = received.withUnsafeMutableBytes { Glibc.read(reader.descriptor, $0.baseAddress, $0.count) }

        guard case .processed(6) = result else { Issue.record("the write took \(result)"); return }
        #expect(Array(received[0..<count]) == [1, 2, 3, 4, 5, 6])
    }

    @Test func aReadThatFillsItsSizeKeepsItsOwnStorage() throws {
        let (source, peer) = try socketPair()
        defer { source.close(); peer.close() }
        let sent = (0..<4096).map { UInt8(truncatingIfNeeded: $0) }
        _ = sent.withUnsafeBytes { Glibc.write(peer.descriptor, $0.baseAddress, $0.count) }

        let (result, _, bytes) = try StreamPump.readOwned(from: source, size: 1024)

        guard case .processed(1024) = result else { Issue.record("the read took \(result)"); return }
        #expect(bytes == Array(sent[0..<1024]))
    }

    @Test func aShortReadIsCopiedToStorageOfItsSizeSoAPumpHoldsNoMoreThanItCounts() throws {
        let (source, peer) = try socketPair()
        defer { source.close(); peer.close() }
        let sent: [UInt8] = Array(repeating: 0x5A, count: 100)
        _ = sent.withUnsafeBytes { Glibc.write(peer.descriptor, $0.baseAddress, $0.count) }

        let (result, _, bytes) = try StreamPump.readOwned(from: source, size: 256 * 1024)

        guard case .processed(100) = result else { Issue.record("the read took \(result)"); return }
        #expect(bytes == sent)
        #expect(bytes.capacity < 1024, "a 100-byte read holds \(bytes.capacity) bytes of storage")
    }
}
