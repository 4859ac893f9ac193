import Foundation
import Glibc
import LinkSystem

/// Sends `request` to 127.0.0.1:`port` from a socket connected as linkcond connects a relay's upstream
/// (`Socket.connect`, which notes it among linkcond's own connections), and returns everything answered until the
/// connection closes: in a test that runs linkcond in process, the client an endpoint sees when one of linkcond's
/// own relays forwards to it. The kernel lists that socket as the owner's, whoever the relay carries.
public func exchangeThroughOwnSocket(port: UInt16, _ request: String) throws -> String {
    let socket = try Socket.tcp(family: AF_INET)
    defer { socket.close() }
    _ = try socket.connect(to: SocketAddress(numericHost: "127.0.0.1", port: port)!)
    var writable = pollfd(fd: socket.descriptor, events: Int16(POLLOUT), revents: 0)
    guard poll(&writable, 1, 20_000) == 1 else { throw TestError("no connection to port \(port) within 20 s") }
    _ = fcntl(socket.descriptor, F_SETFL, fcntl(socket.descriptor, F_GETFL) & ~O_NONBLOCK)
    var timeout = timeval(tv_sec: 20, tv_usec: 0)
    setsockopt(socket.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let wrote = bytes[sent...].withUnsafeBytes { Glibc.send(socket.descriptor, $0.baseAddress, $0.count, 0) }
        guard wrote > 0 else { throw TestError("send to port \(port): errno \(errno)") }
        sent += wrote
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = buffer.withUnsafeMutableBytes { recv(socket.descriptor, $0.baseAddress, $0.count, 0) }
        guard got > 0 else { break }
        answer += buffer[..<got]
    }
    return String(decoding: answer, as: UTF8.self)
}
