import CLinuxShims
import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// Round trips of one 64-byte message on each of `samples` connections to `port`, the sends `gap` apart on a
/// sender thread while this thread polls for the echoes: many samples of a long delay in about one delay's time.
/// Every connection first makes one warm-up round trip, so connection set-up is not in the figures. Connections
/// open and warm up `gap` apart too, so that linkcond's own lateness (read from its status) is not that of a hundred
/// first messages released within a millisecond and written one after another. A round trip ends when the echo
/// reached this process's socket (the kernel's receive stamp, `SO_TIMESTAMPNS`), not when this thread woke to read
/// it: the bench's own wake-up is neither linkcond's error nor the network's. Sorted seconds.
func staggeredRoundTrips(port: UInt16, samples: Int, gap: Double, timeout: Double) throws -> [Double] {
    let message = [UInt8](repeating: 0x42, count: 64)
    var opened: [TestConnection] = []
    defer { for connection in opened { connection.close() } }
    for _ in 0..<samples {
        let connection = try TestConnection.connect(port: port, timeout: timeout)
        opened.append(connection)
        try connection.send(message)
        usleep(useconds_t(gap * 1e6))
    }
    let connections = opened
    for connection in connections {
        _ = try connection.receive(exactly: 64)
        var on: Int32 = 1
        setsockopt(connection.fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, socklen_t(MemoryLayout<Int32>.size))
    }
    let sentAt = LockedBox([Instant?](repeating: nil, count: samples))
    let sender = Thread {
        let start = MonotonicClock().now()
        for (index, connection) in connections.enumerated() {
            let due = Double(index) * gap
            let wait = due - secondsSince(start)
            if wait > 0 { usleep(useconds_t(wait * 1e6)) }
            let now = MonotonicClock().now()
            sentAt.mutate { $0[index] = now }
            try? connection.send(message)
        }
    }
    sender.start()
    var polls = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    var received = [Int](repeating: 0, count: samples)
    var times: [Double] = []
    var buffer = [UInt8](repeating: 0, count: 128)
    let start = MonotonicClock().now()
    while times.count < samples, secondsSince(start) < timeout + Double(samples) * gap {
        guard poll(&polls, nfds_t(polls.count), 50) > 0 else { continue }
        let now = MonotonicClock().now()
        for index in polls.indices where polls[index].revents != 0 {
            var stamp: Int64 = 0
            let count = clinux_recv_stamped(polls[index].fd, &buffer, buffer.count, &stamp)
            guard count > 0 else { throw TestError("connection \(index) closed during the delay measurement") }
            received[index] += count
            if received[index] >= 64, let sent = sentAt.value[index] {
                let arrival = stamp > 0 ? min(Instant(nanoseconds: stamp), now) : now
                times.append((arrival - sent).seconds)
                polls[index].events = 0
            }
        }
    }
    guard times.count == samples else {
        throw TestError("\(samples - times.count) of \(samples) echoes did not come back in time")
    }
    return times.sorted()
}
