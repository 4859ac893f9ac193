import Foundation
import Glibc
import Testing

@testable import LinkSystem

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

    /// A socket pair whose first end has one byte to read, and a started loop; the caller stops the loop and closes
    /// both ends.
    private func readableSocketAndLoop() throws -> (fds: [Int32], loop: EventLoop) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        var byte: UInt8 = 0x42
        #expect(write(fds[1], &byte, 1) == 1)
        let loop = try EventLoop()
        loop.start()
        return (fds, loop)
    }

    @Test func registrationNumbersWrapToOneSoNoKeyIsEverTheLoopsOwn() {
        let last = UInt64(UInt32.max)

        let afterLast = EventLoop.RegistrationID.number(after: last)

        #expect(afterLast == 1)
        #expect(EventLoop.RegistrationID.number(after: 2) == 3)
        #expect(EventLoop.RegistrationID.number(after: last - 1) == last)
    }

    @Test func aReregisteredDescriptorReportsItsCurrentReadinessToTheNewHandlerOnly() throws {
        let (fds, loop) = try readableSocketAndLoop()
        defer {
            loop.stopAndWait()
            close(fds[0])
            close(fds[1])
        }
        let first = SeenEvents()
        let second = SeenEvents()
        let descriptor = fds[0]
        nonisolated(unsafe) var registration: EventLoop.RegistrationID?
        try loop.submitAndWait {
            registration = try loop.register(descriptor, interest: Epoll.readable | Epoll.edgeTriggered) {
                first.record($0)
            }
        }
        try #require(first.arrived.wait(timeout: .now() + 10) == .success)

        try loop.submitAndWait {
            registration = try loop.reregister(registration!, interest: Epoll.readable | Epoll.edgeTriggered) {
                second.record($0)
            }
        }

        // The byte is still unread: the edge the first owner consumed is reported again, to the second owner.
        try #require(second.arrived.wait(timeout: .now() + 10) == .success)
        #expect(second.seen.allSatisfy { $0 & Epoll.readable != 0 })
        try loop.submitAndWait {}
        #expect(first.seen.count == 1)
        try loop.submitAndWait { loop.deregister(registration!) }
    }

    @Test func aRegistrationTransferredWithItsInterestKeepsItsKeyWithoutACallAndTellsTheNewOwnerOnlyLaterEdges() throws
    {
        let (fds, loop) = try readableSocketAndLoop()
        defer {
            loop.stopAndWait()
            close(fds[0])
            close(fds[1])
        }
        let first = SeenEvents()
        let receiver = RecordingReceiver()
        let descriptor = fds[0]
        let interest = Epoll.readable | Epoll.edgeTriggered
        nonisolated(unsafe) var registration: EventLoop.RegistrationID?
        try loop.submitAndWait {
            registration = try loop.register(descriptor, interest: interest) { first.record($0) }
        }
        try #require(first.arrived.wait(timeout: .now() + 10) == .success)

        let (transferred, controls) = try loop.submitAndWait {
            let before = loop.descriptorControls
            let transferred = try loop.transfer(registration!, interest: interest, receiver: receiver)
            return (transferred, loop.descriptorControls - before)
        }
        var byte: UInt8 = 0x43
        #expect(write(fds[1], &byte, 1) == 1)

        // The first byte's edge went to the first owner; the second byte's goes to the new one.
        try #require(receiver.seen.arrived.wait(timeout: .now() + 10) == .success)
        #expect(transferred == registration)
        #expect(controls == 0)
        try loop.submitAndWait {}
        #expect(first.seen.count == 1)
        #expect(receiver.seen.seen.count == 1)
        try loop.submitAndWait { loop.deregister(transferred) }
    }

    /// A receiver that records which descriptors reported events.
    private final class RecordingReceiver: EventReceiver, @unchecked Sendable {
        let seen = SeenEvents()
        private(set) var descriptors: [Int32] = []

        func receive(_ events: UInt32, on descriptor: Int32) {
            descriptors.append(descriptor)
            seen.record(events)
        }
    }

    @Test func aReceiverIsToldWhichOfItsDescriptorsReportedAndIsLetGoOnceDeregistered() throws {
        let (fds, loop) = try readableSocketAndLoop()
        defer {
            loop.stopAndWait()
            close(fds[0])
            close(fds[1])
        }
        nonisolated(unsafe) var receiver: RecordingReceiver? = RecordingReceiver()
        weak let released = receiver
        let seen = receiver!.seen
        let descriptor = fds[0]
        nonisolated(unsafe) var registration: EventLoop.RegistrationID?
        try loop.submitAndWait {
            registration = try loop.register(
                descriptor, interest: Epoll.readable | Epoll.edgeTriggered, receiver: receiver!)
        }
        try #require(seen.arrived.wait(timeout: .now() + 10) == .success)
        try loop.submitAndWait {
            #expect(receiver?.descriptors == [descriptor])
            receiver = nil
        }
        // The loop alone holds the receiver while it is registered.
        #expect(released != nil)
        try loop.submitAndWait { loop.deregister(registration!) }
        #expect(released == nil)
    }

    @Test func anEventQueuedForADescriptorsEarlierOwnerIsNotToldToItsNewOwner() throws {
        // Two readable sockets report in one epoll_wait; whichever is handled first gives the other's descriptor
        // number to a new, silent socket with a new owner, while the other's event is still to be handled.
        var first: [Int32] = [-1, -1]
        var second: [Int32] = [-1, -1]
        var quiet: [Int32] = [-1, -1]
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        try #require(socketpair(AF_UNIX, kind, 0, &first) == 0)
        try #require(socketpair(AF_UNIX, kind, 0, &second) == 0)
        try #require(socketpair(AF_UNIX, kind, 0, &quiet) == 0)
        defer { for fd in first + second + quiet { close(fd) } }
        var byte: UInt8 = 0x42
        #expect(write(first[1], &byte, 1) == 1)
        #expect(write(second[1], &byte, 1) == 1)
        let loop = try EventLoop()
        defer { loop.stopAndWait() }
        loop.start()
        let earlier = SeenEvents()
        let newOwner = SeenEvents()
        nonisolated(unsafe) var registrations: [Int32: EventLoop.RegistrationID] = [:]
        nonisolated(unsafe) var replaced = false
        let (a, b, silent) = (first[0], second[0], quiet[0])
        try loop.submitAndWait {
            for (mine, other) in [(a, b), (b, a)] {
                registrations[mine] = try loop.register(mine, interest: Epoll.readable | Epoll.edgeTriggered) {
                    events in
                    earlier.record(events)
                    guard !replaced else { return }
                    replaced = true
                    loop.deregister(registrations[other]!, closing: true)
                    #expect(dup2(silent, other) == other)
                    registrations[other] = try? loop.register(other, interest: Epoll.readable | Epoll.edgeTriggered) {
                        newOwner.record($0)
                    }
                }
            }
        }
        try #require(earlier.arrived.wait(timeout: .now() + 10) == .success)
        try loop.submitAndWait {}
        #expect(replaced)
        #expect(earlier.seen.count == 1)
        #expect(newOwner.seen.isEmpty)
        try loop.submitAndWait { for registration in registrations.values { loop.deregister(registration) } }
    }
}
