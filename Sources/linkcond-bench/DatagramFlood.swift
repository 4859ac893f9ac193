import CLinuxShims
import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// What one paced datagram flood delivered: datagrams sent, distinct ones the receiver counted, over how long.
struct FloodResult {
    var sent: Int
    var received: Int
    /// From the first send to the last new datagram's arrival (at least the sending time): what drained from
    /// buffers after the sender stopped counts over the time it took.
    var seconds: Double
    /// Distinct datagrams received per second, first send to last arrival.
    var deliveredRate: Double { Double(received) / max(seconds, 0.001) }
    /// Datagrams sent that never arrived, in percent.
    var lossPercent: Double { sent > 0 ? Double(sent - received) / Double(sent) * 100 : .nan }
}

/// A UDP sink on 127.0.0.1 with an 8 MB receive buffer that counts the distinct sequence numbers (the first 4
/// bytes of each datagram) it receives, on its own thread, with `recvmmsg` 64 at a time: a receiver that keeps up
/// with far more than 200 k datagrams/s, so a loss it counts is the path's, not its own.
final class DatagramSink: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let stopped = LockedBox(false)
    private let counted = LockedBox((distinct: 0, lastAt: Instant(nanoseconds: 0)))
    private let thread: Thread
    /// Signalled by the receiving thread as it ends, so `stop` closes the socket only after its last read.
    private let finished = DispatchSemaphore(value: 0)

    /// Binds a free port and starts receiving; sequence numbers at or above `capacity` are not counted.
    init(capacity: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw TestError("socket: \(String(cString: strerror(errno)))") }
        var size: Int32 = 8 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = loopbackAddress()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw TestError("bind: \(String(cString: strerror(errno)))")
        }
        port = UInt16(bigEndian: address.sin_port)
        let (stopped, counted, finished) = (stopped, counted, finished)
        thread = Thread {
            defer { finished.signal() }
            let slot = 2048
            let most: UInt32 = 64
            let buffers = UnsafeMutableRawPointer.allocate(byteCount: slot * Int(most), alignment: 16)
            let addresses = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: Int(most))
            let slots = UnsafeMutablePointer<clinux_datagram_slot>.allocate(capacity: Int(most))
            defer {
                buffers.deallocate()
                addresses.deallocate()
                slots.deallocate()
            }
            var seen = [Bool](repeating: false, count: capacity)
            var distinct = 0
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while !stopped.value {
                guard poll(&poller, 1, 20) > 0 else { continue }
                for _ in 0..<1024 {
                    let received = clinux_receive_datagrams(fd, buffers, slot, addresses, slots, most)
                    guard received > 0 else { break }
                    let before = distinct
                    for index in 0..<Int(received) where slots[index].length >= 4 {
                        let sequence = Int(
                            UInt32(littleEndian: buffers.loadUnaligned(fromByteOffset: index * slot, as: UInt32.self)))
                        if sequence < capacity, !seen[sequence] {
                            seen[sequence] = true
                            distinct += 1
                        }
                    }
                    if distinct > before {
                        let now = MonotonicClock().now()
                        counted.mutate { $0 = (distinct, now) }
                    }
                }
            }
        }
        thread.start()
    }

    /// Distinct datagrams received so far.
    var received: Int { counted.value.distinct }

    /// When the last of them arrived.
    var lastArrival: Instant { counted.value.lastAt }

    func stop() {
        stopped.mutate { $0 = true }
        finished.wait()
        close(fd)
    }
}

/// A paced UDP sender: `perSecond` datagrams of `size` bytes to 127.0.0.1:`port` for `seconds`, numbered from 0,
/// sent with `sendmmsg` 64 at a time every 100 µs of the schedule. iperf3 sends one datagram per system call and on
/// this VM tops out near 195 k/s of 64 bytes even direct, below the 200 k/s; this sender reaches several
/// times that, so the figure through the relay is the relay's.
enum DatagramFlood {
    /// Sends the flood to `port` while `sink` (fresh for each flood) counts what arrives, then waits until the count
    /// stops growing.
    static func run(to port: UInt16, sink: DatagramSink, size: Int, perSecond: Int, seconds: Double) throws
        -> FloodResult
    {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var sendBuffer: Int32 = 8 << 20
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw TestError("connect: \(String(cString: strerror(errno)))") }
        let total = Int(Double(perSecond) * seconds)
        let batch = 64
        let payload = UnsafeMutableRawPointer.allocate(byteCount: batch * size, alignment: 16)
        defer { payload.deallocate() }
        payload.initializeMemory(as: UInt8.self, repeating: 0x42, count: batch * size)
        var datagrams = (0..<batch).map {
            clinux_outgoing_datagram(offset: UInt32($0 * size), length: UInt32(size), address_length: 0)
        }
        let start = MonotonicClock().now()
        var sent = 0
        while sent < total {
            let elapsed = secondsSince(start)
            if elapsed > seconds * 3 + 5 {
                throw TestError("the sender fell behind: \(sent) of \(total) sent in \(elapsed) s")
            }
            let due = min(total, Int(elapsed * Double(perSecond)) + 1)
            if sent >= due {
                usleep(100)
                continue
            }
            let count = min(batch, due - sent)
            for index in 0..<count {
                payload.storeBytes(of: UInt32(sent + index).littleEndian, toByteOffset: index * size, as: UInt32.self)
            }
            var first: UInt32 = 0
            let taken = clinux_send_datagrams(fd, payload, nil, &datagrams, UInt32(count), 0, &first)
            if taken > 0 {
                sent += Int(taken)
            } else if errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED {
                usleep(50)
            } else {
                throw TestError("sendmmsg: \(String(cString: strerror(errno)))")
            }
        }
        let sending = secondsSince(start)
        var last = sink.received
        var quietSince = MonotonicClock().now()
        let waited = MonotonicClock().now()
        while secondsSince(quietSince) < 0.3, secondsSince(waited) < 5 {
            usleep(20_000)
            let now = sink.received
            if now != last {
                last = now
                quietSince = MonotonicClock().now()
            }
        }
        return FloodResult(
            sent: sent, received: sink.received, seconds: max(sending, (sink.lastArrival - start).seconds))
    }
}
