import Glibc

/// A file the event log is written to: created (or emptied) at open, mode 0644, written in whole buffers.
///
/// Used by the recording's writer thread only, never by the event loop, so a slow disk cannot stall the loop.
final class RecordFile {
    private let descriptor: Int32

    /// Creates `path`, replacing an earlier file of that name; throws with the path when it cannot.
    init(creating path: String) throws(SystemError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SystemError("open \(path)", .current) }
        self.descriptor = descriptor
    }

    /// Writes every byte of `bytes`, retrying short writes and EINTR.
    func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset) }
            if written < 0 {
                if Errno.current == .interrupted { continue }
                throw SystemError("write", .current)
            }
            offset += written
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
