import Foundation
import Glibc
import Testing

@testable import LinkSystem

/// `--record` into a directory every user can write to (/tmp): what another user planted there is neither followed
/// nor written into, as the kernel's fs.protected_symlinks and fs.protected_regular would refuse when they are on.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to plant files as another user"))
struct RecordFileTests {
    /// Another user: nobody.
    static let stranger: uid_t = 65534

    /// A fresh sticky directory that every user can write to, like /tmp, removed afterwards.
    final class SharedDirectory {
        let path: String

        init() throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "lc-shared-\(UUID().uuidString.prefix(8))"
                ).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            #expect(chmod(path, 0o1777) == 0)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    private func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aSymbolicLinkAnotherUserPlantedIsNotFollowed() throws {
        let shared = try SharedDirectory()
        let victim = shared.path + "/victim"
        let planted = shared.path + "/app.jsonl"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: victim)
        #expect(lchown(planted, Self.stranger, Self.stranger) == 0)

        #expect(throws: RecordFile.Refusal.self) { _ = try RecordFile(opening: planted) }
        #expect(contents(victim) == "precious\n")
    }

    @Test func aFileAnotherUserPlantedIsNotWrittenInto() throws {
        let shared = try SharedDirectory()
        let planted = shared.path + "/app.jsonl"
        try "theirs\n".write(toFile: planted, atomically: false, encoding: .utf8)
        #expect(chown(planted, Self.stranger, Self.stranger) == 0)
        #expect(chmod(planted, 0o666) == 0)

        #expect(throws: RecordFile.Refusal.self) { _ = try RecordFile(opening: planted) }
        #expect(contents(planted) == "theirs\n")
    }

    @Test func aSymbolicLinkOfThisUserIsFollowedAndItsFileEmptied() throws {
        let shared = try SharedDirectory()
        let target = shared.path + "/target.jsonl"
        let link = shared.path + "/app.jsonl"
        try "an earlier recording\n".write(toFile: target, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)

        let file = try RecordFile(opening: link)
        try file.claim()
        try file.writeAll(Array("new\n".utf8))
        file.close()

        #expect(contents(target) == "new\n")
    }
}
