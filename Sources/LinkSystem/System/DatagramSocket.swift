import CLinuxShims
import Glibc
import LinkModel

extension Socket {
    /// Opens a non-blocking UDP socket for `family` (`AF_INET` or `AF_INET6`).
    static func udp(family: Int32) throws(SystemError) -> Socket {
        try marked(
            Socket(descriptor: try syscall("socket") { clinux_socket_nonblocking(family, Int32(SOCK_DGRAM.rawValue)) }))
    }

    /// Opens a non-blocking UDP socket bound to `address` (port 0 picks a free port).
    package static func datagram(boundTo address: SocketAddress) throws(SystemError) -> Socket {
        let socket = try udp(family: address.family)
        do {
            if address.isIPv6 { try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1, name: "IPV6_V6ONLY") }
            try address.withSockAddr { (pointer, length) throws(SystemError) in
                _ = try syscall("bind \(address)") { bind(socket.descriptor, pointer, length) }
            }
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Opens a non-blocking UDP socket connected to `address`: it sends there and receives only from there.
    package static func datagram(connectedTo address: SocketAddress) throws(SystemError) -> Socket {
        let socket = try udp(family: address.family)
        do {
            _ = try socket.startConnect(to: address)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Asks for a receive buffer of `bytes` (the kernel doubles it for its bookkeeping) so a burst waits in the
    /// kernel instead of being dropped while the loop is busy. Tries SO_RCVBUFFORCE first, which lifts the
    /// `net.core.rmem_max` cap for root (CAP_NET_ADMIN); otherwise SO_RCVBUF, which the kernel caps at rmem_max.
    /// Failing both leaves the default buffer: the socket still works, and its drops are counted.
    package func enlargeReceiveBuffer(to bytes: Int32) {
        do {
            try setOption(SOL_SOCKET, SO_RCVBUFFORCE, bytes, name: "SO_RCVBUFFORCE")
        } catch {
            try? setOption(SOL_SOCKET, SO_RCVBUF, bytes, name: "SO_RCVBUF")
        }
    }

    /// Asks the kernel to attach its count of datagrams dropped on this socket (a full receive buffer) to each
    /// datagram received after a drop (SO_RXQ_OVFL); `DatagramBatch` reads it.
    package func reportKernelDrops() throws(SystemError) {
        try setOption(SOL_SOCKET, SO_RXQ_OVFL, 1, name: "SO_RXQ_OVFL")
    }

    /// Receives as many datagrams as `batch` holds, or as are waiting, with one `recvmmsg`; returns how many.
    package func receiveDatagrams(into batch: DatagramBatch) throws(SystemError) -> IOResult<Int> {
        try batch.receive(from: descriptor)
    }

    /// Sends the datagrams of `batch` from index `start` with one `sendmmsg`; returns how many the socket took,
    /// from `start` on. With `segmenting`, runs of equal-sized datagrams to one destination go as one message the
    /// kernel cuts up (UDP GSO); the receiver still gets every datagram whole. `.wouldBlock` and a thrown error are
    /// about the first message: datagram `start` and, segmenting, the rest of its run (`batch.firstMessageLength`
    /// datagrams), none of which was sent.
    package func sendDatagrams(_ batch: DatagramSendBatch, from start: Int, segmenting: Bool) throws(SystemError)
        -> IOResult<Int>
    {
        try batch.send(on: descriptor, from: start, segmenting: segmenting)
    }

    /// Receives one datagram into `buffer`; returns its length (cut to the buffer) and its sender.
    package func receiveDatagram(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<
        (Int, SocketAddress)
    > {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(SystemError) -> IOResult<Int> in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                (address) throws(SystemError) -> IOResult<Int> in
                try nonBlockingSyscall("recvfrom") {
                    recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, address, &length)
                }
            }
        }
        switch result {
        case .processed(let count): return .processed((count, SocketAddress(storage: storage, length: length)))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Sends `buffer` as one datagram to `address`; `.wouldBlock` when the socket's send buffer is full.
    package func sendDatagram(_ buffer: UnsafeRawBufferPointer, to address: SocketAddress) throws(SystemError)
        -> IOResult<Int>
    {
        try address.withSockAddr { (pointer, length) throws(SystemError) -> IOResult<Int> in
            try nonBlockingSyscall("sendto \(address)") {
                sendto(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), pointer, length)
            }
        }
    }
}

/// Receive slots for `recvmmsg`: up to `capacity` datagrams per system call, each with its sender and the kernel's
/// drop counter.
///
/// Lives on the event loop thread that owns it (one per loop, like `ReadBuffer`). Each slot holds a whole UDP
/// datagram (64 KiB), so nothing is cut; the memory is touched only as far as datagrams fill it. A slot's bytes
/// stay valid until the next `receive`; pointers to them never leave `withDatagram`.
package final class DatagramBatch {
    /// One received datagram: where its bytes are, who sent it, and the kernel's drop counter if attached.
    package struct Datagram {
        var length: Int
        package var sender: SocketAddress
        /// Datagrams the kernel had dropped on the socket in total when this one was queued (SO_RXQ_OVFL), or
        /// nil when the kernel attached no count (it has dropped none).
        package var kernelDropCount: UInt32?
        /// When it reached the socket, if the socket stamps arrivals (`stampArrivals`): a datagram that waited in
        /// the kernel while the loop was busy counts its delay from there. The kernel stamps on CLOCK_REALTIME, so a
        /// step of the wall clock between arrival and read moves it by as much (a backward step is clamped by the
        /// link, a forward one makes the datagram look that much late).
        package var arrival: Instant?
    }

    /// The largest UDP payload over IPv4 (65 535 − 8 − 20), rounded up to a whole slot.
    static let slotSize = 64 * 1024

    package let capacity: Int
    private let payload: UnsafeMutableRawBufferPointer
    private let addresses: UnsafeMutablePointer<sockaddr_storage>
    private let slots: UnsafeMutablePointer<clinux_datagram_slot>
    /// Datagrams the last `receive` filled.
    private(set) var count = 0

    /// Makes `capacity` slots (at most 64, the shim's limit).
    package init(capacity: Int = 32) {
        self.capacity = min(max(capacity, 1), 64)
        payload = .allocate(byteCount: self.capacity * Self.slotSize, alignment: 16)
        addresses = .allocate(capacity: self.capacity)
        slots = .allocate(capacity: self.capacity)
    }

    deinit {
        payload.deallocate()
        addresses.deallocate()
        slots.deallocate()
    }

    fileprivate func receive(from descriptor: Int32) throws(SystemError) -> IOResult<Int> {
        count = 0
        let result = try nonBlockingSyscall("recvmmsg") {
            clinux_receive_datagrams(descriptor, payload.baseAddress, Self.slotSize, addresses, slots, UInt32(capacity))
        }
        guard case .processed(let received) = result else { return .wouldBlock }
        count = Int(received)
        return .processed(count)
    }

    /// The facts of datagram `index` of the last `receive`.
    package subscript(index: Int) -> Datagram {
        precondition(index < count, "datagram \(index) of \(count) received")
        let slot = slots[index]
        return Datagram(
            length: Int(slot.length),
            sender: SocketAddress(storage: addresses[index], length: slot.address_length),
            kernelDropCount: slot.has_drop_count != 0 ? slot.drop_count : nil,
            arrival: slot.arrival_ns != 0 ? Instant(nanoseconds: slot.arrival_ns) : nil)
    }

    /// Calls `body` with the bytes of datagram `index` of the last `receive`.
    package func withDatagram<T>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        precondition(index < count, "datagram \(index) of \(count) received")
        let start = index * Self.slotSize
        return try body(UnsafeRawBufferPointer(rebasing: payload[start..<start + Int(slots[index].length)]))
    }
}

/// Outgoing datagrams staged for one `sendmmsg`: their bytes copied into one payload buffer, each with its
/// destination (nil: the socket's connected peer).
///
/// Lives on the event loop thread that owns it. Holds at most `capacity` datagrams and `payloadCapacity` bytes (at
/// least one whole datagram of 64 KiB); pointers to the payload never leave the `send` call.
package final class DatagramSendBatch {
    let capacity: Int
    let payloadCapacity: Int
    private let payload: UnsafeMutableRawBufferPointer
    private let addresses: UnsafeMutablePointer<sockaddr_storage>
    private let datagrams: UnsafeMutablePointer<clinux_outgoing_datagram>
    /// Datagrams staged.
    package private(set) var count = 0
    /// Payload bytes staged.
    private(set) var payloadBytes = 0
    /// How many datagrams the first message of the last send joined (1 unless segmented).
    package private(set) var firstMessageLength = 0

    /// Makes room for `capacity` datagrams (at most 64, the shim's limit) and `payloadCapacity` bytes.
    package init(capacity: Int = 64, payloadCapacity: Int = 256 * 1024) {
        self.capacity = min(max(capacity, 1), 64)
        self.payloadCapacity = max(payloadCapacity, DatagramBatch.slotSize)
        payload = .allocate(byteCount: self.payloadCapacity, alignment: 16)
        addresses = .allocate(capacity: self.capacity)
        datagrams = .allocate(capacity: self.capacity)
    }

    deinit {
        payload.deallocate()
        addresses.deallocate()
        datagrams.deallocate()
    }

    /// Whether one more datagram of `length` bytes fits.
    package func hasRoom(for length: Int) -> Bool {
        count < capacity && payloadBytes + length <= payloadCapacity
    }

    /// Copies `bytes` in as the next datagram, for `destination` (nil: the connected peer). Check `hasRoom` first.
    package func append(_ bytes: UnsafeRawBufferPointer, to destination: SocketAddress?) {
        precondition(hasRoom(for: bytes.count), "datagram of \(bytes.count) B appended to a full batch")
        if bytes.count > 0, let base = bytes.baseAddress {
            (payload.baseAddress! + payloadBytes).copyMemory(from: base, byteCount: bytes.count)
        }
        var addressLength: socklen_t = 0
        if let destination {
            addresses[count] = destination.storage
            addressLength = destination.length
        }
        datagrams[count] = clinux_outgoing_datagram(
            offset: UInt32(payloadBytes), length: UInt32(bytes.count),
            address_length: addressLength)
        count += 1
        payloadBytes += bytes.count
    }

    /// Forgets every staged datagram.
    package func removeAll() {
        count = 0
        payloadBytes = 0
    }

    fileprivate func send(on descriptor: Int32, from start: Int, segmenting: Bool) throws(SystemError) -> IOResult<Int>
    {
        precondition(start < count, "sending datagram \(start) of \(count) staged")
        var firstMessage: UInt32 = 0
        defer { firstMessageLength = Int(firstMessage) }
        let result = try nonBlockingSyscall("sendmmsg") {
            clinux_send_datagrams(
                descriptor, payload.baseAddress, addresses + start, datagrams + start, UInt32(count - start),
                segmenting ? 1 : 0, &firstMessage)
        }
        guard case .processed(let sent) = result else { return .wouldBlock }
        return .processed(Int(sent))
    }
}

/// Follows one socket's kernel drop counter (SO_RXQ_OVFL, a running total per socket) and turns what each
/// received datagram carries into new drops.
package struct KernelDropCounter {
    private var lastSeen: UInt32 = 0

    package init() {}

    /// The drops reported since the previous call, from the counter attached to a datagram (nil: none attached).
    package mutating func newDrops(reported total: UInt32?) -> Int {
        guard let total, total != lastSeen else { return 0 }
        let added = total &- lastSeen
        lastSeen = total
        return Int(added)
    }
}
