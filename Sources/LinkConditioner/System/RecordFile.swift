import Glibc

/// A file the event log is written to, mode 0644, written in whole buffers.
///
/// Opening it changes nothing on disk but a new, empty file where none was: an earlier file of that name keeps its
/// contents until `claim` empties it, so a start that fails later (a port in use) can `abandon` the file and leave
/// what was there before. Used by the loop thread until `claim`, then by the recording's writer thread only, so a
/// slow disk cannot stall the loop.
final class RecordFile {
    private let descriptor: Int32
    private let path: String
    /// Whether opening made the file, so abandoning it removes it.
    private let created: Bool

    /// Opens `path` for writing without emptying it, creating it if it is missing; throws with the path when it cannot.
    init(opening path: String) throws(SystemError) {
        var descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        var created = true
        if descriptor < 0 && Errno.current == .fileExists {
            descriptor = open(path, O_WRONLY | O_CLOEXEC)
            created = false
        }
        guard descriptor >= 0 else { throw SystemError("open \(path)", .current) }
        self.descriptor = descriptor
        self.path = path
        self.created = created
    }

    /// Empties an earlier file of that name, so the recording replaces it; a pipe or device is left as it is.
    func claim() throws(SystemError) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw SystemError("fstat \(path)", .current) }
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        guard ftruncate(descriptor, 0) == 0 else { throw SystemError("ftruncate \(path)", .current) }
    }

    /// Closes the file unwritten, removing it if opening made it.
    func abandon() {
        close()
        if created { _ = unlink(path) }
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
