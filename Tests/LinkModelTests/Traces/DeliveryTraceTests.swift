import Foundation
import LinkModel
import LinkProfiles
import Testing

struct DeliveryTraceTests {
    private func parse(_ text: String) throws(TraceError) -> DeliveryTrace {
        try DeliveryTrace(parsing: Array(text.utf8), name: "cell.trace")
    }

    private func error(of text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func parsesMahimahisFormat() throws {
        let trace = try parse("0\n0\n7\n12")

        #expect(trace.milliseconds == [0, 0, 7, 12])
        #expect(trace.periodMilliseconds == 12)
    }

    @Test func toleratesCarriageReturnsAndSurroundingSpaces() throws {
        #expect(try parse(" 4\r\n9 \r\n").milliseconds == [4, 9])
    }

    @Test func refusesANonIntegerLineByFileAndLine() {
        #expect(
            error(of: "1\n2\nabc\n")
                == "cell.trace:3: \"abc\" is not a timestamp: expected a whole number of milliseconds")
        #expect(error(of: "1\n2.5\n")?.hasPrefix("cell.trace:2:") == true)
        #expect(error(of: "1\n-3\n")?.hasPrefix("cell.trace:2:") == true)
    }

    @Test func refusesDecreasingTimestamps() {
        #expect(error(of: "5\n9\n8\n") == "cell.trace:3: 8 comes after 9: timestamps must never decrease")
    }

    @Test func refusesEmptyLinesAsMahimahiDoes() {
        #expect(error(of: "5\n\n9\n")?.hasPrefix("cell.trace:2: empty line") == true)
    }

    @Test func refusesAnEmptyFile() {
        #expect(error(of: "")?.hasPrefix("cell.trace: the trace is empty") == true)
    }

    @Test func refusesATraceThatLastsNoTime() {
        #expect(error(of: "0\n0\n")?.hasPrefix("cell.trace:2: the trace lasts 0 ms") == true)
    }

    @Test func refusesTimestampsBeyondFortyNineDays() {
        #expect(error(of: "1\n99999999999\n")?.hasPrefix("cell.trace:2: timestamp beyond") == true)
    }

    @Test(arguments: TraceModel.presetNames)
    func shippedTraceFileIsWhatTheModelGenerates(name: String) throws {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("profiles/traces/\(name)").path
        let shipped = try #require(FileManager.default.contents(atPath: path))

        #expect(String(decoding: shipped, as: UTF8.self) == TraceModel.presets[name]!.fileText())
        #expect(
            try DeliveryTrace(parsing: Array(shipped), name: name).milliseconds
                == DeliveryTrace.builtIn(named: name)?.milliseconds)
    }

    @Test func theSameSeedDrawsTheSameTraceAndAnotherSeedAnother() {
        var model = TraceModel.presets["subway.down"]!
        let first = model.generate()
        let again = model.generate()
        model.seed += 1

        #expect(first == again)
        #expect(model.generate() != first)
    }

    @Test(arguments: TraceModel.presetNames)
    func builtInTraceAveragesNearItsModelsMeanLessItsOutages(name: String) throws {
        let model = TraceModel.presets[name]!
        let trace = try #require(DeliveryTrace.builtIn(named: name))

        #expect(trace.averageRate.bitsPerSecond > model.mean.bitsPerSecond * 0.3)
        #expect(trace.averageRate.bitsPerSecond < model.mean.bitsPerSecond * 1.5)
        #expect(trace.periodMilliseconds == model.duration.nanoseconds / 1_000_000)
    }
}
