import Foundation
import Testing

/// Every input in `Fuzz/corpus`, seeds and the reproducers of fixed crashes alike, runs through its fuzz target in
/// the debug build (overflow and bounds checks on) without a trap.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

    static var targets: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()
    }

    /// The `linkcond-fuzz` replayer next to the test bundle in the build folder.
    static var replayer: URL {
        var directory = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("linkcond-fuzz")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/linkcond-fuzz")
    }

    @Test func everyTargetHasASeedCorpus() {
        #expect(Self.targets == ["control", "control-parse", "dns-message", "dns-tcp", "http-proxy", "ip-packet", "profile", "recording", "scenario", "socks5", "trace"])
    }

    @Test(arguments: targets)
    func everyCorpusInputRunsWithoutATrap(target: String) throws {
        let inputs = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.appendingPathComponent(target).path)
        let process = Process()
        process.executableURL = Self.replayer
        process.arguments = [target, Self.corpus.appendingPathComponent(target).path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(printed.contains("ran \(inputs.count) inputs"))
    }
}
