import Testing

@testable import LinkConditioner

/// Sending released datagrams together with sendmmsg, on real loopback sockets.
struct DatagramOutboxTests {
    /// A UDP socket bound to a free loopback port.
    private func receiver() throws -> (socket: Socket, address: SocketAddress) {
        let socket = try Socket.datagram(boundTo: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
        socket.enlargeReceiveBuffer(to: 4 << 20)
        return (socket, try socket.localAddress())
    }

    /// Every datagram waiting on `socket`, whole, in arrival order (at most `limit`).
    private func drain(_ socket: Socket, limit: Int = 1000) throws -> [[UInt8]] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var datagrams: [[UInt8]] = []
        while datagrams.count < limit, case .processed(let (length, _)) = try socket.receiveDatagram(into: buffer) {
            datagrams.append(Array(buffer[0..<length]))
        }
        return datagrams
    }

    /// Datagram `number` of a test: its number in the first byte, then filler up to a size that varies with it.
    private func datagram(_ number: Int) -> [UInt8] {
        [UInt8(number)] + [UInt8](repeating: UInt8(truncatingIfNeeded: number * 7), count: (number * 613) % 9000)
    }

    @Test func aHeldOutboxSendsOnlyFullBatchesUntilReleasedAndEveryDatagramWholeAndInOrder() throws {
        let (sink, address) = try receiver()
        defer { sink.close() }
        let sender = try Socket.datagram(connectedTo: address)
        defer { sender.close() }
        let outbox = DatagramOutbox()
        let refusals = RefusedDatagrams()
        let sent = (0..<150).map(datagram)

        outbox.hold()
        for bytes in sent { outbox.send(bytes, on: sender, to: nil, refusals: refusals) }
        let beforeRelease = try drain(sink)
        outbox.release()
        let received = try drain(sink)

        // 150 datagrams of up to 9 KB: more than one batch holds, so the outbox sent full batches on the way.
        #expect(beforeRelease == Array(sent.prefix(beforeRelease.count)))
        #expect(beforeRelease.count < sent.count)
        #expect(beforeRelease + received == sent)
        #expect(refusals.count == 0)
    }

    @Test(arguments: [true, false])
    func equalSizedDatagramsArriveWholeAndSeparateWithOrWithoutSegmentation(segments: Bool) throws {
        let (sink, address) = try receiver()
        defer { sink.close() }
        let sender = try Socket.datagram(connectedTo: address)
        defer { sender.close() }
        let outbox = DatagramOutbox(segments: segments)
        let refusals = RefusedDatagrams()
        // Runs of 1200-byte datagrams, each run ending in a shorter one, then a longer one that cannot join.
        let sent =
            (0..<130).map { number in [UInt8(number)] + [UInt8](repeating: 1, count: number % 50 == 49 ? 500 : 1199) }
            + [[UInt8](repeating: 2, count: 1500)]

        outbox.holding {
            for bytes in sent { outbox.send(bytes, on: sender, to: nil, refusals: refusals) }
        }

        #expect(try drain(sink) == sent)
        #expect(refusals.count == 0)
        #expect(outbox.segments == segments)
    }

    @Test func datagramsForSeveralDestinationsOnOneSocketEachReachTheirOwnInOrder() throws {
        let (first, firstAddress) = try receiver()
        defer { first.close() }
        let (second, secondAddress) = try receiver()
        defer { second.close() }
        let sender = try Socket.datagram(boundTo: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
        defer { sender.close() }
        let outbox = DatagramOutbox()
        let refusals = RefusedDatagrams()

        outbox.holding {
            for number in 0..<40 {
                outbox.send(
                    datagram(number), on: sender, to: number % 3 == 0 ? firstAddress : secondAddress, refusals: refusals
                )
            }
        }

        #expect(try drain(first) == stride(from: 0, to: 40, by: 3).map(datagram))
        #expect(try drain(second) == (0..<40).filter { $0 % 3 != 0 }.map(datagram))
    }

    @Test func aDatagramForAnotherSocketSendsWhatIsStagedFirst() throws {
        let (sink, address) = try receiver()
        defer { sink.close() }
        let one = try Socket.datagram(connectedTo: address)
        defer { one.close() }
        let other = try Socket.datagram(connectedTo: address)
        defer { other.close() }
        let outbox = DatagramOutbox()
        let refusals = RefusedDatagrams()

        outbox.hold()
        outbox.send([1], on: one, to: nil, refusals: refusals)
        outbox.send([2], on: one, to: nil, refusals: refusals)
        outbox.send([3], on: other, to: nil, refusals: refusals)
        let beforeRelease = try drain(sink)
        outbox.release()

        #expect(beforeRelease == [[1], [2]])
        #expect(try drain(sink) == [[3]])
    }

    @Test func outsideAHoldEachDatagramLeavesAtOnce() throws {
        let (sink, address) = try receiver()
        defer { sink.close() }
        let sender = try Socket.datagram(connectedTo: address)
        defer { sender.close() }
        let outbox = DatagramOutbox()

        outbox.send([9, 9], on: sender, to: nil, refusals: RefusedDatagrams())

        #expect(try drain(sink) == [[9, 9]])
    }

    @Test func aDatagramTheSocketRefusesIsCountedAndTheRestAreStillTried() throws {
        // A connected socket whose peer port has closed: the kernel's ICMP port-unreachable makes a later send fail
        // with ECONNREFUSED.
        let (gone, address) = try receiver()
        gone.close()
        let sender = try Socket.datagram(connectedTo: address)
        defer { sender.close() }
        let outbox = DatagramOutbox()
        let refusals = RefusedDatagrams()
        outbox.send([0], on: sender, to: nil, refusals: refusals)

        outbox.holding {
            // Sizes differ, so no two are joined into one segmented message.
            for number in 1...5 {
                outbox.send([UInt8](repeating: UInt8(number), count: number), on: sender, to: nil, refusals: refusals)
            }
        }

        #expect(refusals.count >= 1)
        #expect(refusals.count <= 6)
    }
}
