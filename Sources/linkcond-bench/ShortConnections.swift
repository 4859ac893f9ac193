import CLinuxShims
import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// A listening TCP socket on 127.0.0.1 at a free port, with a backlog of 4096; `name` says whose in an error.
func loopbackListener(for name: String) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let port = freePort()
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = loopbackAddress(port: port)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, 4096) == 0 else {
        close(fd)
        throw TestError("\(name): bind/listen errno \(errno)")
    }
    return (fd, port)
}

/// A server on 127.0.0.1 that accepts and closes at once: the upstream for short-connection churn.
final class ClosingServer: @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        (fd, port) = try loopbackListener(for: "closing server")
        let (fd, done) = (self.fd, self.done)
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED || errno == EMFILE { continue }
                    break
                }
                close(client)
            }
            done.signal()
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        done.wait()
        close(fd)
    }
}

/// A server on 127.0.0.1 that accepts, reads one byte from each client, and holds it open until `stop`: the
/// upstream of idle connections. One thread; `received` counts the clients whose byte arrived.
final class HoldingServer: @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    let received = LockedBox(0)
    private let held = LockedBox<[Int32]>([])
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        (fd, port) = try loopbackListener(for: "holding server")
        let fd = self.fd
        let (done, held, received) = (self.done, self.held, self.received)
        Thread.detachNewThread {
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    break
                }
                setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var byte: UInt8 = 0
                if read(client, &byte, 1) == 1 { received.mutate { $0 += 1 } }
                held.mutate { $0.append(client) }
            }
            done.signal()
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        done.wait()
        close(fd)
        release()
    }

    /// Closes the clients held so far, keeping the listener: the next peer starts from none.
    func release() {
        held.mutate { clients in
            for client in clients { close(client) }
            clients.removeAll()
        }
        received.value = 0
    }
}

/// Keeps `concurrency` connections to `port` open at once for `seconds`: each connects, waits for the end of stream
/// the server sends, closes, and is replaced. Returns completed connections per second and the failures.
func shortConnections(port: UInt16, concurrency: Int, seconds: Double) -> (rate: Double, failures: Int) {
    var address = loopbackAddress(port: port)
    func open() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return fd
    }
    var polls = (0..<concurrency).map { _ in pollfd(fd: open(), events: Int16(POLLIN), revents: 0) }
    var completed = 0
    var failures = 0
    var buffer = [UInt8](repeating: 0, count: 64)
    let start = MonotonicClock().now()
    while secondsSince(start) < seconds {
        let ready = poll(&polls, nfds_t(polls.count), 100)
        if ready <= 0 { continue }
        for index in polls.indices where polls[index].revents != 0 {
            let fd = polls[index].fd
            let count = read(fd, &buffer, buffer.count)
            if count == 0 { completed += 1 } else if count < 0, errno == EAGAIN { continue } else { failures += 1 }
            close(fd)
            polls[index] = pollfd(fd: open(), events: Int16(POLLIN), revents: 0)
        }
    }
    let elapsed = secondsSince(start)
    for entry in polls { close(entry.fd) }
    return (Double(completed) / elapsed, failures)
}

/// Time from starting a connect until one byte has made the round trip through an echo server, for each of
/// `samples` connections in turn after `warmUp` uncounted ones, sorted: what an app waits before its connection is
/// usable. `handshake` runs a front end's request (SOCKS5, HTTP CONNECT) on the new connection first.
func setupTimes(
    port: UInt16, samples: Int, warmUp: Int = 20, handshake: (TestConnection) throws -> Void = { _ in }
) throws -> [Double] {
    var times: [Double] = []
    for index in 0..<(samples + warmUp) {
        let start = MonotonicClock().now()
        let connection = try TestConnection.connect(port: port, timeout: 5)
        defer { connection.close() }
        try handshake(connection)
        try connection.send([0x42])
        _ = try connection.receive(exactly: 1)
        if index >= warmUp { times.append(secondsSince(start)) }
    }
    return times.sorted()
}
