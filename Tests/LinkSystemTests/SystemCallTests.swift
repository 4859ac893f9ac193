import Glibc
import Testing

@testable import LinkSystem

/// The one wrapper every non-blocking call goes through: the errno that means "not yet" is a result, any other
/// error is thrown with the operation's name.
struct SystemCallTests {
    @Test func aConnectInProgressIsAResultNotAnError() throws {
        let result = try nonBlockingSyscall("connect", pending: .inProgress) { () -> Int32 in
            Glibc.errno = EINPROGRESS
            return -1
        }

        guard case .wouldBlock = result else {
            Issue.record("EINPROGRESS gave \(result)")
            return
        }
    }

    @Test func anErrnoOtherThanThePendingOneIsThrownWithTheOperationsName() {
        #expect(throws: SystemError("connect 127.0.0.1:9", .wouldBlock)) {
            try nonBlockingSyscall("connect 127.0.0.1:9", pending: .inProgress) { () -> Int32 in
                Glibc.errno = EAGAIN
                return -1
            }
        }
    }

    @Test func wouldBlockIsTheDefaultPendingErrno() throws {
        let result = try nonBlockingSyscall("read") { () -> Int in
            Glibc.errno = EAGAIN
            return -1
        }

        guard case .wouldBlock = result else {
            Issue.record("EAGAIN gave \(result)")
            return
        }
    }
}
