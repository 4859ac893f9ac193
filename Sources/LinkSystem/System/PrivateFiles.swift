import Glibc

/// Files only this user can reach: the private directory linkcond keeps its control socket and token in, the
/// token files themselves, and the owner checks a client makes before trusting a socket or a token.
///
/// Every check looks at the object itself (`lstat`, `O_NOFOLLOW`, `fstat`), so a symbolic link or a file another
/// user planted is refused, never followed.
public enum PrivateFiles {
    /// Why a private file or directory cannot be trusted or made.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        package init(_ description: String) { self.description = description }
    }

    /// Creates `path` as a directory only this user can enter (mode 0700), or checks that the existing one is such a
    /// directory: owned by this user, not a symbolic link, with no access for group or others.
    public static func prepareDirectory(_ path: String) throws(Refusal) {
        if mkdir(path, 0o700) == 0 { return }
        let error = Errno.current
        guard error.rawValue == EEXIST else { throw Refusal("cannot create \(path): \(error)") }
        var status = stat()
        guard lstat(path, &status) == 0 else { throw Refusal("cannot inspect \(path): \(Errno.current)") }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw Refusal("\(path) exists and is not a directory; remove it")
        }
        guard status.st_uid == getuid() else {
            throw Refusal(
                "\(path) belongs to user \(status.st_uid), not to you (user \(getuid())); another user may be trying to intercept linkcond. Remove it, or set XDG_RUNTIME_DIR"
            )
        }
        guard status.st_mode & 0o077 == 0 else {
            throw Refusal(
                "\(path) is accessible to other users (mode \(String(status.st_mode & 0o777, radix: 8))); run: chmod 700 \(path)"
            )
        }
    }

    /// Writes `text` to a new file at `path` readable by this user only (mode 0600), replacing an earlier file
    /// of the same name. Call it inside a directory made by `prepareDirectory`.
    public static func write(_ text: String, to path: String) throws(Refusal) {
        _ = unlink(path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Refusal("cannot create \(path): \(Errno.current)") }
        defer { _ = Glibc.close(descriptor) }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 && Errno.current == .interrupted { continue }
            guard written > 0 else {
                _ = unlink(path)
                throw Refusal("cannot write \(path): \(Errno.current)")
            }
            offset += written
        }
    }

    /// Creates `path` with `text` (mode 0600) only if nothing is there yet, as one step: a reader sees the whole file
    /// or none. Returns false, writing nothing, when `path` exists.
    public static func createExclusively(_ text: String, at path: String) throws(Refusal) -> Bool {
        let staging = stagingPath(for: path)
        try write(text, to: staging)
        defer { _ = unlink(staging) }
        guard link(staging, path) == 0 else {
            let error = Errno.current
            if error.rawValue == EEXIST { return false }
            throw Refusal("cannot create \(path): \(error)")
        }
        return true
    }

    /// Replaces `path` with a file holding `text` (mode 0600), as one step: a reader sees the old file or the new one.
    public static func replace(_ text: String, at path: String) throws(Refusal) {
        let staging = stagingPath(for: path)
        try write(text, to: staging)
        guard rename(staging, path) == 0 else {
            let error = Errno.current
            _ = unlink(staging)
            throw Refusal("cannot replace \(path): \(error)")
        }
    }

    /// A name next to `path` that no other process uses: the writer's pid in a hidden file.
    private static func stagingPath(for path: String) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        return String(path[..<slash]) + "." + path[slash...] + ".\(getpid()).tmp"
    }

    /// Runs `body` holding an exclusive `flock` on the file `path` (created 0600 when missing), so that processes of
    /// this user that take the same lock run such bodies one at a time. Throws a `Refusal` when the lock cannot be
    /// taken, or what `body` throws.
    public static func withLock<Result>(_ path: String, _ body: () throws -> Result) throws -> Result {
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Refusal("cannot open \(path): \(Errno.current)") }
        defer { _ = Glibc.close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard Errno.current == .interrupted else { throw Refusal("cannot lock \(path): \(Errno.current)") }
        }
        return try body()
    }

    /// Reads a small file this user owns and nobody else can read (at most `limit` bytes); nil when it does not
    /// exist. A file another user owns, a readable-by-others file or a symbolic link is refused.
    public static func read(_ path: String, limit: Int = 4096) throws(Refusal) -> String? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = Errno.current
            if error.rawValue == ENOENT { return nil }
            throw Refusal("cannot read \(path): \(error)")
        }
        defer { _ = Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw Refusal("\(path) is not a regular file")
        }
        guard status.st_uid == getuid() else {
            throw Refusal("\(path) belongs to user \(status.st_uid), not to you; not using it")
        }
        guard status.st_mode & 0o077 == 0 else { throw Refusal("\(path) is readable by other users; not using it") }
        var buffer = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let got = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor, raw.baseAddress! + count, limit - count)
            }
            if got < 0 && Errno.current == .interrupted { continue }
            guard got > 0 else { break }
            count += got
        }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Removes a file linkcond created; a no-op when it is already gone.
    public static func remove(_ path: String) { _ = unlink(path) }

    /// When `path` itself (a symbolic link is not followed) last changed, in nanoseconds since the epoch; nil when
    /// it does not exist or cannot be inspected. It tells a file an older process wrote from one written since.
    public static func modified(_ path: String) -> Int64? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
    }

    /// Checks that `path` is a Unix-domain socket owned by this user (or by root), so a client never talks to a
    /// socket another user planted where linkcond's would be. A missing path passes: connecting then fails plainly.
    public static func checkSocketOwner(_ path: String) throws(Refusal) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw Refusal("\(path) is not a socket") }
        guard status.st_uid == getuid() || status.st_uid == 0 else {
            throw Refusal(
                "\(path) belongs to user \(status.st_uid), not to you (user \(getuid())); refusing to talk to another user's process. Remove it, or pass --control"
            )
        }
    }
}

extension Socket {
    /// The user id of the process at the other end of a connected Unix-domain socket (`SO_PEERCRED`, whose
    /// `struct ucred` is pid, uid, gid).
    package func peerUserID() throws(SystemError) -> UInt32 {
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        _ = try syscall("getsockopt SO_PEERCRED") {
            getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length)
        }
        return credentials.uid
    }
}
