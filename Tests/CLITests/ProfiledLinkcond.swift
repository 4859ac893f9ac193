import Foundation
import LinkConditioner

/// `linkcond run` with one TCP listener in front of `upstream`, under a built-in profile or one written from text,
/// and a control socket, all in a temporary directory that `stop` removes.
final class ProfiledLinkcond {
    let instance: RunningLinkcond
    /// The listener's port.
    let port: UInt16
    let controlSocket: String
    private let directory: URL

    /// Runs a relay to `upstream` under the profile file `profile` holds.
    convenience init(upstream: UInt16, profile: String) throws {
        try self.init(upstream: upstream) { directory in
            let path = directory.appendingPathComponent("test.profile").path
            try profile.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    /// Runs a relay to `upstream` under the built-in profile `name`.
    convenience init(upstream: UInt16, builtIn name: String) throws {
        try self.init(upstream: upstream) { _ in name }
    }

    /// Runs a relay to `upstream` under the profile argument `profileArgument` makes in the run's own directory.
    private init(upstream: UInt16, profileArgument: (URL) throws -> String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-run-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            controlSocket = directory.appendingPathComponent("control.sock").path
            instance = try RunningLinkcond([
                "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream)",
                "--profile", try profileArgument(directory), "--control", controlSocket,
            ])
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        do {
            port = try instance.readReadyPort()
            _ = try instance.readLine()
        } catch {
            _ = try? instance.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// The first listener of `linkcond status --json`.
    func listenerStatus() throws -> StatusReport.Listener {
        let json = try LinkcondProcess.run(["status", "--json", "--control", controlSocket])
        guard let listener = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).listeners.first
        else {
            throw CLITestError("status lists no listener: \(json.stdout)")
        }
        return listener
    }

    /// `linkcond status --wide` as a person reads it: one table row per listener.
    func humanStatus() throws -> String {
        try LinkcondProcess.run(["status", "--wide", "--control", controlSocket]).stdout
    }

    func stop() {
        _ = try? instance.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
