import Glibc

/// A file the event log is written to, mode 0644, written in whole buffers.
///
/// Opening it changes nothing on disk but a new, empty file where none was: an earlier file of that name keeps its
/// contents until `claim` empties it, so a start that fails later (a port in use) can `abandon` the file and leave
/// what was there before. In a sticky directory every user can write to (/tmp), a symbolic link or an existing
/// file that belongs to neither this user nor the directory's owner is refused: another user planted it, to have
/// linkcond overwrite a file of this user's through the link, or to read the recording. That is the kernel's
/// fs.protected_symlinks and fs.protected_regular rule, kept here for systems that turn them off. Used by the loop
/// thread until `claim`, then by the recording's writer thread only, so a slow disk cannot stall the loop.
final class RecordFile {
    private let descriptor: Int32
    private let path: String
    /// Whether opening made the file, so abandoning it removes it.
    private let created: Bool

    /// Opens `path` for writing without emptying it, creating it if it is missing; throws with the path when it
    /// cannot or must not.
    init(opening path: String) throws(SystemError) {
        let sharedDirectoryOwner = Self.sharedDirectoryOwner(of: path)
        // O_EXCL never follows a symbolic link: it fails on one as on any existing name.
        var descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        var created = true
        if descriptor < 0 && Errno.current == .fileExists {
            created = false
            descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor < 0 && Errno.current.rawValue == ELOOP {
                var link = stat()
                guard lstat(path, &link) == 0 else { throw SystemError("lstat \(path)", .current) }
                if let owner = sharedDirectoryOwner, link.st_uid != getuid(), link.st_uid != owner {
                    throw SystemError("open \(path) (a symbolic link of user \(link.st_uid) in a directory every user can write to; not following it)", .permissionDenied)
                }
                descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
        }
        guard descriptor >= 0 else { throw SystemError("open \(path)", .current) }
        var file = stat()
        guard fstat(descriptor, &file) == 0 else {
            let error = Errno.current
            _ = Glibc.close(descriptor)
            throw SystemError("fstat \(path)", error)
        }
        if let owner = sharedDirectoryOwner, file.st_uid != getuid(), file.st_uid != owner {
            _ = Glibc.close(descriptor)
            throw SystemError("open \(path) (a file of user \(file.st_uid) in a directory every user can write to; not writing into it)", .permissionDenied)
        }
        self.descriptor = descriptor
        self.path = path
        self.created = created
    }

    /// The owner of the directory holding `path` when it is sticky and every user can write to it (/tmp), else nil.
    private static func sharedDirectoryOwner(of path: String) -> uid_t? {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & S_ISVTX != 0, status.st_mode & S_IWOTH != 0 else { return nil }
        return status.st_uid
    }

    /// Empties an earlier file of that name, so the recording replaces it; a pipe or device is left as it is.
    func claim() throws(SystemError) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw SystemError("fstat \(path)", .current) }
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        guard ftruncate(descriptor, 0) == 0 else { throw SystemError("truncate \(path)", .current) }
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
