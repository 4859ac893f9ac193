import Foundation
import Testing

@testable import LinkSystem

/// A descriptor names its process by pid and start time, so that a pid the kernel gave to another process since,
/// or a process that exited and waits to be reaped, is not taken for a running instance.
struct ProcessIdentityTests {
    @Test func thisProcessRunsAndAnotherStartTimeIsAnotherProcess() {
        let current = ProcessIdentity.current

        #expect(current.startTicks != nil)
        #expect(current.isRunning)
        #expect(!ProcessIdentity(pid: current.pid, startTicks: current.startTicks! + 1).isRunning)
    }

    @Test func anExitedProcessDoesNotRun() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()

        #expect(!ProcessIdentity(pid: process.processIdentifier, startTicks: nil).isRunning)
    }

    @Test func theStatLineIsReadFromTheLastParenthesis() {
        let fields = (4...52).map(String.init).joined(separator: " ")
        let parsed = ProcessStat.parse("123 (a ) b (x)) S \(fields)")

        #expect(parsed?.state == "S")
        // Field 22 is the 20th after the name; the fields written start at 4, so it holds 22.
        #expect(parsed?.startTicks == 22)
    }
}

/// Files made in one step: a reader sees a whole descriptor or none, and a name is taken once.
struct PrivateFilesCreationTests {
    @Test func createExclusivelyTakesAPathOnceAndReplaceSwapsItsContents() throws {
        let directory = NSTemporaryDirectory() + "lc-private-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try PrivateFiles.prepareDirectory(directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/a.json"

        #expect(try PrivateFiles.createExclusively("first\n", at: path))
        #expect(try !PrivateFiles.createExclusively("second\n", at: path))
        #expect(try PrivateFiles.read(path) == "first\n")
        try PrivateFiles.replace("third\n", at: path)
        #expect(try PrivateFiles.read(path) == "third\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["a.json"])
    }
}
