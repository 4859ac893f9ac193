import Foundation
import Testing

/// `linkcond profile check` lists every error of a file with its line, up to a cap, then how many more.
struct ProfileCheckTests {
    private func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString).profile")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func everyErrorIsListedWithItsFileAndLine() throws {
        let bad = try file("delay = 10 sec\nbandwidth = 1 Mbit/s\nlossy = 2 %\njitter = lots\n")
        let good = try file("delay = 10 ms\n")
        defer {
            try? FileManager.default.removeItem(at: bad)
            try? FileManager.default.removeItem(at: good)
        }

        let result = try LinkcondProcess.run(["profile", "check", bad.path, good.path])

        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 3, "\(result.stderr)")
        for (index, line) in [1, 3, 4].enumerated() where index < lines.count {
            #expect(lines[index].hasPrefix("linkcond: \(bad.path):\(line): "), "\(lines[index])")
        }
        #expect(result.stderr.contains("did you mean \"10 s\"?"), "\(result.stderr)")
        #expect(result.stdout == "ok \(good.path)\n")
    }

    @Test func aFileWrongOnEveryLineShowsTheFirstTwentyThenHowManyMore() throws {
        let bad = try file((1...25).map { "key\($0) = 1\n" }.joined())
        defer { try? FileManager.default.removeItem(at: bad) }

        let result = try LinkcondProcess.run(["profile", "check", bad.path])

        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 21, "\(result.stderr)")
        #expect(lines.first?.hasPrefix("linkcond: \(bad.path):1: ") == true)
        #expect(lines.last == "linkcond: \(bad.path): and 5 more errors")
    }
}
