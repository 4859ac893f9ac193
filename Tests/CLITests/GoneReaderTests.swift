import Foundation
import Testing

/// Output nobody reads any more: linkcond blocks SIGPIPE for its sockets, so a write to a pipe whose reader left
/// fails with EPIPE, which FileHandle's `write(_:)` turned into a trap.
struct GoneReaderTests {
    /// `linkcond run … | true`: the ready lines are lost, the proxy runs on and stops cleanly on SIGTERM.
    @Test func runWhoseStdoutReaderLeftKeepsServingAndStopsCleanly() throws {
        let process = Process()
        process.executableURL = LinkcondProcess.executable
        process.arguments = ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--control", "127.0.0.1:0"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try out.fileHandleForReading.close()
        try process.run()
        try out.fileHandleForWriting.close()
        defer { if process.isRunning { process.terminate() } }

        // The profile is logged right after the ready lines are written; a crash ends stderr first.
        var logged = ""
        while !logged.contains("profile "), case let chunk = err.fileHandleForReading.availableData, !chunk.isEmpty {
            logged += String(decoding: chunk, as: UTF8.self)
        }
        process.terminate()
        process.waitUntilExit()

        #expect(logged.contains("profile "), "\(logged)")
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 0,
            "\(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus): \(logged.suffix(600))"
        )
    }
}
