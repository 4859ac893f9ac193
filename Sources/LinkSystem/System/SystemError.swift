import CLinuxShims
import Glibc

/// A C error number, with Swift names for the ones linkcond reacts to.
public struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// EAGAIN / EWOULDBLOCK: the non-blocking call has nothing to do now.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// EINTR: a signal interrupted the call.
    public static let interrupted = Errno(rawValue: EINTR)
    /// EINPROGRESS: a non-blocking connect has started.
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    /// ECONNREFUSED: nobody listens at the address.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// ECONNRESET: the peer reset the connection.
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    /// EPIPE: the peer closed the connection before all data was written.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// ETIMEDOUT: the connection attempt or the connection timed out.
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// EHOSTUNREACH: no route to the host.
    public static let hostUnreachable = Errno(rawValue: EHOSTUNREACH)
    /// ENETUNREACH: no route to the network.
    public static let networkUnreachable = Errno(rawValue: ENETUNREACH)
    /// EADDRINUSE: the address is already bound.
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    /// EBADF: not an open descriptor; always a bug in linkcond.
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// EFAULT: a bad pointer; always a bug in linkcond.
    public static let badAddress = Errno(rawValue: EFAULT)
    /// EMFILE: the process ran out of file descriptors.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// EEXIST: a file of that name exists (an exclusive create).
    public static let fileExists = Errno(rawValue: EEXIST)
    /// ENOENT: no such file or directory.
    public static let noSuchFile = Errno(rawValue: ENOENT)
    /// EIO: an input/output error (a UDP GSO message the device cannot segment).
    public static let ioError = Errno(rawValue: EIO)
    /// EINVAL: an argument the kernel does not accept.
    public static let invalidArgument = Errno(rawValue: EINVAL)
    /// EOPNOTSUPP: the operation is not supported here.
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    /// ENOPROTOOPT: the kernel does not know the socket option.
    public static let optionUnknown = Errno(rawValue: ENOPROTOOPT)
    /// EACCES: permission denied (a firewall rule, a privileged port).
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// EPERM: the operation is not permitted (an nftables or capability refusal).
    public static let notPermitted = Errno(rawValue: EPERM)
    /// ENOTCONN: the socket is not connected (its peer is already gone).
    public static let notConnected = Errno(rawValue: ENOTCONN)

    /// The C library's text for this error.
    public var description: String { String(cString: strerror(rawValue)) }

    static var current: Errno { Errno(rawValue: clinux_errno()) }
}

/// A failed system call: which operation, and the error number the kernel gave.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Errno

    public init(_ operation: String, _ errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(errno)" }

    /// True when the process (EMFILE) or the system (ENFILE) is out of file descriptors.
    public var isDescriptorShortage: Bool { errno == .tooManyOpenFiles || errno.rawValue == ENFILE }
}

/// The outcome of a non-blocking call: done, or nothing to do until the descriptor is ready.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Runs one system call, retrying EINTR, trapping on errors that can only be linkcond's bugs, and throwing the rest.
///
/// Every libc call that can fail goes through here or `nonBlockingSyscall`, the only places errno is read.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ operation: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    switch try nonBlockingSyscall(operation(), pending: nil, body) {
    case .processed(let result): return result
    case .wouldBlock: preconditionFailure("no errno is a result here")
    }
}

/// Like `syscall`, but `pending` (EAGAIN unless told, EINPROGRESS for a non-blocking connect) is a result
/// (`.wouldBlock`), not an error; the operation's name is spelled only for a real error.
@inline(__always)
func nonBlockingSyscall<T: FixedWidthInteger>(
    _ operation: @autoclosure () -> String, pending: Errno? = .wouldBlock,
    _ body: () -> T
) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result != -1 { return .processed(result) }
        let errno = Errno.current
        if errno == pending { return .wouldBlock }
        switch errno {
        case .interrupted:
            continue
        case .badFileDescriptor, .badAddress:
            preconditionFailure("\(operation()): \(errno) (a bug in linkcond)")
        default:
            throw SystemError(operation(), errno)
        }
    }
}
