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

    /// The `linkcond-fuzz` replayer, built by `swift build --package-path Fuzz` (scripts/test does): the fuzz
    /// targets are a package of their own.
    static var replayer: URL {
        corpus.deletingLastPathComponent().appendingPathComponent(".build/debug/linkcond-fuzz")
    }

    @Test func everyTargetHasASeedCorpus() {
        #expect(
            Self.targets == [
                "control", "control-parse", "dns-message", "dns-tcp", "http-proxy", "ip-packet", "profile", "recording",
                "scenario", "socks5", "trace",
            ])
    }

    @Test(arguments: targets)
    func everyCorpusInputRunsWithoutATrap(target: String) throws {
        let inputs = try FileManager.default.contentsOfDirectory(
            atPath: Self.corpus.appendingPathComponent(target).path)
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.replayer.path),
            "no replayer at \(Self.replayer.path): build it with swift build --package-path Fuzz")
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
