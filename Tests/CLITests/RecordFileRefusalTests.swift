import Foundation
import Glibc
import Testing

/// `run --record` onto something that is not a new or regular file of this user: a FIFO, or what another user
/// planted in a directory others can write to. linkcond refuses at start, at once, naming the path and what it
/// expected, and leaves the thing as it was.
@Suite(.serialized)
struct RecordFileRefusalTests {
    /// Another user: nobody.
    static let stranger: uid_t = 65534
    static let asRoot = getuid() == 0

    /// A fresh directory of mode `mode` (set with chmod, so the umask does not change it), removed afterwards.
    final class Directory {
        let path: String

        init(mode: mode_t) throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "lc-record-\(UUID().uuidString.prefix(8))"
                ).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            guard chmod(path, mode) == 0 else { throw CLITestError("chmod \(path): errno \(errno)") }
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Starts `linkcond run --record path` and waits (bounded) for it to exit by itself; nil when it did not, in
    /// which case it was killed.
    func recordingRun(_ path: String) throws -> (status: Int32?, stderr: String) {
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--record", path,
        ])
        let status = linkcond.waitForExit(timeout: 20)
        return (status, linkcond.stderrText)
    }

    func fileType(_ path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : nil
    }

    @Test func aFIFONobodyReadsIsRefusedAtOnceAndLeftAsItWas() throws {
        let directory = try Directory(mode: 0o700)
        let fifo = directory.path + "/app.jsonl"
        #expect(mkfifo(fifo, 0o600) == 0)

        let run = try recordingRun(fifo)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("\(fifo) is a FIFO (named pipe), not a regular file"), "\(run.stderr)")
        #expect(fileType(fifo) == S_IFIFO)
    }

    /// With a reader attached, opening for writing would succeed: linkcond still refuses, and the reader gets nothing.
    @Test func aFIFOSomeoneReadsIsRefusedAndGetsNoByte() throws {
        let directory = try Directory(mode: 0o700)
        let fifo = directory.path + "/app.jsonl"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        defer { close(reader) }

        let run = try recordingRun(fifo)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("\(fifo) is a FIFO (named pipe), not a regular file"), "\(run.stderr)")
        var byte: UInt8 = 0
        #expect(read(reader, &byte, 1) <= 0)
    }

    @Test(.enabled(if: asRoot, "needs root to plant files as another user"))
    func anotherUsersSymbolicLinkInAWorldWritableDirectoryWithoutTheStickyBitIsNotFollowed() throws {
        let shared = try Directory(mode: 0o777)
        let mine = try Directory(mode: 0o700)
        let victim = mine.path + "/secret"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        #expect(chmod(victim, 0o600) == 0)
        let planted = shared.path + "/app.jsonl"
        #expect(symlink(victim, planted) == 0)
        #expect(lchown(planted, Self.stranger, Self.stranger) == 0)

        let run = try recordingRun(planted)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("\(planted): a symbolic link"), "\(run.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
    }

    @Test(.enabled(if: asRoot, "needs root to plant files as another user"))
    func anotherUsersFileInAWorldWritableDirectoryWithoutTheStickyBitIsNotWrittenInto() throws {
        let shared = try Directory(mode: 0o777)
        let planted = shared.path + "/app.jsonl"
        try "theirs\n".write(toFile: planted, atomically: false, encoding: .utf8)
        #expect(chown(planted, Self.stranger, Self.stranger) == 0)
        #expect(chmod(planted, 0o666) == 0)

        let run = try recordingRun(planted)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("\(planted): a file of user \(Self.stranger)"), "\(run.stderr)")
        #expect(try String(contentsOfFile: planted, encoding: .utf8) == "theirs\n")
    }

    /// A second name for a file of this user, made in a shared directory (possible where fs.protected_hardlinks
    /// is off), would have the recording overwrite that file.
    @Test(.enabled(if: asRoot, "needs root to own a file another user links to"))
    func aHardLinkInAWorldWritableDirectoryIsNotWrittenInto() throws {
        let shared = try Directory(mode: 0o777)
        let victim = shared.path + "/secret"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        #expect(chmod(victim, 0o600) == 0)
        let planted = shared.path + "/app.jsonl"
        #expect(link(victim, planted) == 0)

        let run = try recordingRun(planted)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("\(planted): a file with 2 names"), "\(run.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
    }

    /// This user's own earlier recording in a shared directory is replaced as anywhere else.
    @Test func thisUsersOwnFileInAWorldWritableDirectoryIsReplaced() throws {
        let shared = try Directory(mode: 0o777)
        let path = shared.path + "/app.jsonl"
        try "an earlier recording\n".write(toFile: path, atomically: false, encoding: .utf8)

        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--record", path,
        ])
        _ = try linkcond.readReadyPort()
        #expect(try linkcond.stop() == 0)

        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("{\"v\":1,\"ev\":\"start\""), "\(text)")
        #expect(!text.contains("an earlier recording"))
    }
}
