import Foundation
import LinkModel
import LinkProfiles
import Testing

/// Reading a profile file: a wrong path (a device, a huge file) is refused at once with what it is, and a pipe is
/// read like a file.
@Suite(.timeLimit(.minutes(5)))
struct ProfileFileReadingTests {
    @Test func aFileOverOneMebibyteIsRefusedEvenWhenItIsAllComments() throws {
        let path = NSTemporaryDirectory() + "linkcond-huge-\(UUID().uuidString).profile"
        let line = "# a comment line of a file that grew far beyond a profile\n"
        try String(repeating: line, count: (2 << 20) / line.utf8.count).write(
            toFile: path, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }

        #expect(
            throws: ProfileError(
                file: path,
                kind: .unreadable(reason: "is larger than a profile file may be: at most 1 MiB (1048576 bytes)"))
        ) {
            try Profile(contentsOfFile: path)
        }
    }

    @Test func anEndlessDeviceIsRefusedAsTooLarge() {
        #expect(
            throws: ProfileError(
                file: "/dev/zero",
                kind: .unreadable(reason: "is larger than a profile file may be: at most 1 MiB (1048576 bytes)"))
        ) {
            try Profile(contentsOfFile: "/dev/zero")
        }
    }

    /// What `linkcond run --profile <(…)` opens: a pipe, whose size is unknown until its end.
    @Test func aPipeIsReadToItsEnd() throws {
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(Data("delay = 40 ms\n".utf8))
        try pipe.fileHandleForWriting.close()
        defer { try? pipe.fileHandleForReading.close() }

        let profile = try Profile(contentsOfFile: "/dev/fd/\(pipe.fileHandleForReading.fileDescriptor)")

        #expect(profile.downlink.delay == .milliseconds(40))
    }
}
