import Glibc

/// A file the event log is written to, mode 0644, written in whole buffers.
///
/// Only a regular file is recorded into. A FIFO, device, socket or directory at the path is refused before it is
/// opened, and opening uses O_NONBLOCK (which a regular file ignores), so a FIFO put there in between cannot hold
/// the loop thread waiting for a reader: `fstat` refuses it before a byte is written.
///
/// Opening it changes nothing on disk but a new, empty file where none was: an earlier file of that name keeps its
/// contents until `claim` empties it, so a start that fails later (a port in use) can `abandon` the file and leave
/// what was there before.
///
/// In a directory other users can write to (/tmp, any 0777 directory, one writable by a group not the user's own),
/// what they may have planted is refused: an existing file of a user other than this one or the directory's owner
/// (to have linkcond write into it, or to read the recording), a file with more than one name (a hard link to a file
/// of this user's), and a symbolic link. In a sticky directory a link of this user or of the directory's owner is
/// followed, as the kernel's fs.protected_symlinks allows; without the sticky bit none is, since anyone there could
/// replace it between the check and the open. These are the kernel's protected_symlinks, protected_hardlinks and
/// protected_regular rules, kept here for systems that turn them off and for directories without the sticky bit,
/// which those rules leave out. Used by the loop thread until `claim`, then by the recording's writer thread only,
/// so a slow disk cannot stall the loop.
package final class RecordFile {
    /// Why `path` is not recorded into: what is there, or the system's error, named with the path.
    package struct Refusal: Error, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// A directory other users can write to: its owner, and whether its sticky bit keeps them from replacing names
    /// that are not theirs.
    private struct SharedDirectory {
        var owner: uid_t
        var sticky: Bool
    }

    private let descriptor: Int32
    private let path: String
    /// Whether opening made the file, so abandoning it removes it.
    private let created: Bool

    /// Opens `path` for writing without emptying it, creating it if it is missing; throws with the path when it
    /// cannot or must not. Never waits: a FIFO is refused whether or not anyone reads it.
    package init(opening path: String) throws(Refusal) {
        let shared = Self.sharedDirectory(of: path)
        var existing = stat()
        if stat(path, &existing) == 0, existing.st_mode & S_IFMT != S_IFREG {
            throw Refusal(Self.notRegular(path, existing.st_mode))
        }
        // O_EXCL never follows a symbolic link: it fails on one as on any existing name.
        var descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC, 0o644)
        var created = true
        if descriptor < 0 && Errno.current == .fileExists {
            created = false
            descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if descriptor < 0 && Errno.current.rawValue == ELOOP {
                var link = stat()
                guard lstat(path, &link) == 0 else { throw Refusal("cannot inspect \(path): \(Errno.current)") }
                if let shared, !shared.sticky {
                    throw Refusal(
                        "\(path): a symbolic link in a directory other users can write to and whose sticky bit is off (any of them could replace the link); not following it. Record into a directory of your own, or name the file itself"
                    )
                }
                if let shared, link.st_uid != getuid(), link.st_uid != shared.owner {
                    throw Refusal(
                        "\(path): a symbolic link of user \(link.st_uid) in a directory other users can write to; not following it"
                    )
                }
                descriptor = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0o644)
            }
        }
        guard descriptor >= 0 else {
            let error = Errno.current
            // A FIFO made after the check above, with no reader.
            if error.rawValue == ENXIO, stat(path, &existing) == 0 {
                throw Refusal(Self.notRegular(path, existing.st_mode))
            }
            throw Refusal("cannot open \(path) for writing: \(error)")
        }
        var file = stat()
        var refusal: String?
        if fstat(descriptor, &file) != 0 {
            refusal = "cannot inspect \(path): \(Errno.current)"
        } else if file.st_mode & S_IFMT != S_IFREG {
            refusal = Self.notRegular(path, file.st_mode)
        } else if let shared, !created, file.st_uid != getuid(), file.st_uid != shared.owner {
            refusal =
                "\(path): a file of user \(file.st_uid) in a directory other users can write to; not writing into it"
        } else if shared != nil, !created, file.st_nlink > 1 {
            refusal =
                "\(path): a file with \(file.st_nlink) names in a directory other users can write to (one may be a hard link to another of your files); not writing into it"
        }
        if let refusal {
            _ = Glibc.close(descriptor)
            throw Refusal(refusal)
        }
        self.descriptor = descriptor
        self.path = path
        self.created = created
    }

    /// The refusal of a path whose file type (`mode`) is not a regular file.
    private static func notRegular(_ path: String, _ mode: mode_t) -> String {
        let kind =
            switch mode & S_IFMT {
            case S_IFIFO: "a FIFO (named pipe)"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFSOCK: "a socket"
            case S_IFDIR: "a directory"
            default: "of file type \(String(mode & S_IFMT, radix: 8))"
            }
        return
            "\(path) is \(kind), not a regular file; --record writes a regular file (a new name, or an earlier recording to replace)"
    }

    /// The directory holding `path` when users other than its owner may write to it: every user (mode o+w), or a
    /// group that is not this user's own (g+w); nil otherwise.
    private static func sharedDirectory(of path: String) -> SharedDirectory? {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = stat()
        guard stat(directory, &status) == 0 else { return nil }
        let othersWrite = status.st_mode & S_IWOTH != 0 || (status.st_mode & S_IWGRP != 0 && status.st_gid != getgid())
        guard othersWrite else { return nil }
        return SharedDirectory(owner: status.st_uid, sticky: status.st_mode & S_ISVTX != 0)
    }

    /// Empties an earlier file of that name, so the recording replaces it.
    package func claim() throws(SystemError) {
        guard ftruncate(descriptor, 0) == 0 else { throw SystemError("truncate \(path)", .current) }
    }

    /// Closes the file unwritten, removing it if opening made it.
    package func abandon() {
        close()
        if created { _ = unlink(path) }
    }

    /// Writes every byte of `bytes`, retrying short writes and EINTR.
    package func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if Errno.current == .interrupted { continue }
                throw SystemError("write", .current)
            }
            offset += written
        }
    }

    package func close() { _ = Glibc.close(descriptor) }
}
