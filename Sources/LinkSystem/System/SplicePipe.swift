import CLinuxShims
import Glibc

/// A non-blocking kernel pipe that `splice(2)` moves a stream's bytes through from one socket to another, so
/// they never enter user space. Whoever made it closes it, exactly once.
package struct SplicePipe {
    package let readEnd: Int32
    package let writeEnd: Int32
    /// How many bytes the pipe holds at most (the kernel's grant for the size asked).
    package let capacity: Int

    private static let brokenPipeIgnored: Void = clinux_ignore_sigpipe()

    /// Opens a pipe and asks for `size` bytes of room; the kernel's default (64 KiB) stays when it refuses more.
    /// The first one sets SIGPIPE to ignored process-wide: splice has no MSG_NOSIGNAL, and a peer that closed
    /// must be an error, not the end of the process.
    package static func open(size: Int) throws(SystemError) -> SplicePipe {
        _ = brokenPipeIgnored
        var fds: [Int32] = [-1, -1]
        _ = try syscall("pipe2") { clinux_pipe_nonblocking(&fds) }
        let granted = clinux_pipe_set_size(fds[1], Int32(clamping: size))
        return SplicePipe(readEnd: fds[0], writeEnd: fds[1], capacity: granted > 0 ? Int(granted) : 65_536)
    }

    /// Moves up to `count` bytes from `source` into the pipe; `.processed(0)` is the source's end of stream.
    /// Would-block means the source has nothing now or the pipe has no free slot.
    package func fill(from source: Socket, count: Int) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("splice from socket") { clinux_splice_nonblocking(source.descriptor, writeEnd, count) }
    }

    /// Moves up to `count` bytes from the pipe to `destination`.
    package func drain(to destination: Socket, count: Int) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("splice to socket") { clinux_splice_nonblocking(readEnd, destination.descriptor, count) }
    }

    /// Copies up to `buffer.count` bytes out of the pipe into user space (leaving the splice path).
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("read pipe") { Glibc.read(readEnd, buffer.baseAddress, buffer.count) }
    }

    /// Copies up to `buffer.count` bytes from user space into the pipe (bytes a destination did not take).
    package func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("write pipe") { Glibc.write(writeEnd, buffer.baseAddress, buffer.count) }
    }

    /// True when the pipe holds no byte, as the kernel counts them (FIONREAD): what makes it safe to hand to
    /// another connection.
    package var isEmpty: Bool { clinux_readable_bytes(readEnd) == 0 }

    package func close() {
        _ = Glibc.close(readEnd)
        _ = Glibc.close(writeEnd)
    }
}
