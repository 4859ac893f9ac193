import Foundation
import Testing

/// `linkcond trace`, run as the built binary.
struct TraceCommandTests {
    @Test func generateWritesTheShippedTraceByteForByte() throws {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles/traces/subway.up")

        let result = try LinkcondProcess.run(["trace", "generate", "subway.up"])

        #expect(result.status == 0)
        #expect(result.stdout == (try String(contentsOf: shipped, encoding: .utf8)))
    }

    @Test func anotherSeedAndDurationDrawANewTraceOfThatLength() throws {
        let result = try LinkcondProcess.run(["trace", "generate", "lte-driving.up", "--seed", "7", "--duration", "2s"])
        let lines = result.stdout.split(separator: "\n")

        #expect(result.status == 0)
        #expect(lines.last == "2000")
        #expect(lines.allSatisfy { Int($0) != nil })
    }

    @Test func anUnknownTraceNameListsTheKnownOnes() throws {
        let result = try LinkcondProcess.run(["trace", "generate", "lte-flying.down"])

        #expect(result.status == 2)
        #expect(
            result.stderr.contains(
                "no built-in trace \"lte-flying.down\"; expected one of lte-driving.down, lte-driving.up, subway.down, subway.up."
            ))
    }

    @Test func aDurationWhoseMinutesOverflowIsRefusedWithoutACrash() throws {
        let result = try LinkcondProcess.run(["trace", "generate", "subway.up", "--duration", "9223372036854775807min"])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("--duration \"9223372036854775807min\": expected a duration up to 60 min"),
            "\(result.stderr)")
    }

    @Test func listShowsEachBuiltInTraceWithItsAverage() throws {
        let result = try LinkcondProcess.run(["trace", "list"])

        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n").count == 4)
        #expect(result.stdout.contains("subway.down  average 3.52 Mbit/s over 120.0 s, repeating"))
    }
}
