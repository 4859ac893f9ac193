import Foundation
import Glibc
@testable import LinkConditioner
import Testing

/// Handing a registered descriptor to a new owner (a proxy session's client taken over by its relay).
struct EventLoopRegistrationTests {
    /// Event bits a handler saw, filled on the loop thread and read by the test once it waited for them.
    private final class SeenEvents: @unchecked Sendable {
        let lock = NSLock()
        private var events: [UInt32] = []
        let arrived = DispatchSemaphore(value: 0)

        func record(_ bits: UInt32) {
            lock.lock()
            events.append(bits)
            lock.unlock()
            arrived.signal()
        }

        var seen: [UInt32] {
            lock.lock()
            defer { lock.unlock() }
            return events
        }
    }

    @Test func aReregisteredDescriptorReportsItsCurrentReadinessToTheNewHandlerOnly() throws {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var byte: UInt8 = 0x42
        #expect(write(fds[1], &byte, 1) == 1)
        let loop = try EventLoop()
        defer { loop.stopAndWait() }
        loop.start()
        let first = SeenEvents(), second = SeenEvents()
        let descriptor = fds[0]
        nonisolated(unsafe) var registration: EventLoop.RegistrationID?
        try loop.submitAndWait {
            registration = try loop.register(descriptor, interest: Epoll.readable | Epoll.edgeTriggered) { first.record($0) }
        }
        try #require(first.arrived.wait(timeout: .now() + 10) == .success)

        try loop.submitAndWait {
            registration = try loop.reregister(registration!, interest: Epoll.readable | Epoll.edgeTriggered) { second.record($0) }
        }

        // The byte is still unread: the edge the first owner consumed is reported again, to the second owner.
        try #require(second.arrived.wait(timeout: .now() + 10) == .success)
        #expect(second.seen.allSatisfy { $0 & Epoll.readable != 0 })
        try loop.submitAndWait {}
        #expect(first.seen.count == 1)
        try loop.submitAndWait { loop.deregister(registration!) }
    }
}
