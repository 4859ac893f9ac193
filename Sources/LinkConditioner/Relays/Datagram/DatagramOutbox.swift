/// Datagrams released by the link on their way out, sent with one `sendmmsg` per socket instead of one `sendto` each.
///
/// Lives on the event loop thread; one per loop (in `ReadBuffer`), shared by every UDP socket of the loop. While a
/// caller holds it (a receive batch, a delivery pass), datagrams for the same socket are staged and go out together
/// when the last hold is released; a datagram for another socket, or one that does not fit, sends what is staged
/// first, so each socket's datagrams leave in the order they were released. Outside a hold every datagram is sent at
/// once. A datagram the socket refuses (a full send buffer, an ICMP error pending on a connected socket) is dropped,
/// as a full NIC drops it, and counted in the `RefusedDatagrams` it was staged with.
///
/// Equal-sized datagrams to one destination go as one UDP GSO message where the kernel takes it; when a message
/// that joined datagrams fails, they are tried one by one, so a refusal still drops only its own datagram, and a
/// kernel or route that cannot segment (EIO, EINVAL, EOPNOTSUPP, ENOPROTOOPT) turns joining off for good.
final class DatagramOutbox {
    private let batch: DatagramSendBatch
    private var socket: Socket?
    private var refusals: RefusedDatagrams?
    private var holds = 0
    /// Whether sends join equal-sized datagrams (UDP GSO); off once the kernel refused it.
    private(set) var segments: Bool

    init(batch: DatagramSendBatch = DatagramSendBatch(), segments: Bool = true) {
        self.batch = batch
        self.segments = segments
    }

    /// Errors that say the kernel or the route cannot segment, rather than something about the datagram.
    private static let segmentationUnsupported: Set<Errno> = [
        .ioError, .invalidArgument, .notSupported, .optionUnknown,
    ]

    /// Defers sending until the matching `release`; holds nest.
    func hold() {
        holds += 1
    }

    /// Ends one hold; the last one sends what is staged.
    func release() {
        precondition(holds > 0, "outbox released more often than held")
        holds -= 1
        if holds == 0 { flush() }
    }

    /// Runs `body` with the outbox held, then sends what it staged.
    func holding<T>(_ body: () throws -> T) rethrows -> T {
        hold()
        defer { release() }
        return try body()
    }

    /// Sends `bytes` as one datagram on `socket` to `destination` (nil: its connected peer), now or at the end of the
    /// current hold; a refusal is counted in `refusals`.
    func send(
        _ bytes: UnsafeRawBufferPointer, on socket: Socket, to destination: SocketAddress?, refusals: RefusedDatagrams
    ) {
        if socket != self.socket || refusals !== self.refusals || !batch.hasRoom(for: bytes.count) { flush() }
        self.socket = socket
        self.refusals = refusals
        batch.append(bytes, to: destination)
        if holds == 0 { flush() }
    }

    /// `send` for bytes held in an array.
    func send(_ bytes: [UInt8], on socket: Socket, to destination: SocketAddress?, refusals: RefusedDatagrams) {
        bytes.withUnsafeBytes { send($0, on: socket, to: destination, refusals: refusals) }
    }

    /// Sends what is staged now. Called before a staged socket closes, so its datagrams leave before it does.
    func flush() {
        defer {
            batch.removeAll()
            socket = nil
            refusals = nil
        }
        guard let socket, let refusals, batch.count > 0 else { return }
        var next = 0
        var segmenting = segments
        while next < batch.count {
            let result: IOResult<Int>
            do {
                result = try socket.sendDatagrams(batch, from: next, segmenting: segmenting)
            } catch {
                if segmenting && batch.firstMessageLength > 1 {
                    if Self.segmentationUnsupported.contains(error.errno) { segments = false }
                    segmenting = false
                    continue
                }
                refusals.count += 1
                next += 1
                segmenting = segments
                continue
            }
            switch result {
            case .processed(let sent) where sent > 0:
                next += sent
                segmenting = segments
            case .processed, .wouldBlock:
                if segmenting && batch.firstMessageLength > 1 {
                    segmenting = false
                    continue
                }
                refusals.count += 1
                next += 1
                segmenting = segments
            }
        }
    }
}

/// Datagrams a socket refused to send, for the status's kernel drops. Lives on the event loop thread.
final class RefusedDatagrams {
    var count = 0
}
