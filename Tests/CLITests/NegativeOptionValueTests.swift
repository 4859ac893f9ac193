import Foundation
import Testing

/// A negative number given as its own word (`--buffer -5`) is the option's value, not another option: the user is
/// told what the option expects, not that its value is missing. Every check runs before anything starts, so no
/// running linkcond is needed.
@Suite(.serialized)
struct NegativeOptionValueTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        /// What the refusal must say: the option, the value and what was expected.
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(arguments: ["run", "--buffer", "-5"], message: "--buffer \"-5\": expected a size from 1B to 1GiB"),
        Case(
            arguments: ["run", "--max-buffered", "-5"],
            message: "--max-buffered \"-5\": expected a size from 1MiB to 65536MiB"),
        Case(
            arguments: ["run", "--threads", "-1"],
            message: "--threads \"-1\": expected a whole number of event loop threads"),
        Case(arguments: ["run", "--udp-idle", "-5s"], message: "--udp-idle \"-5s\": expected a duration from 1ms"),
        Case(
            arguments: ["run", "--record", "/dev/null", "--record-limit", "-5"],
            message: "--record-limit \"-5\": expected a size of at least 4KiB"),
        Case(
            arguments: ["status", "--watch", "--count", "-1"],
            message: "'-1' is invalid for '--count <count>': expected a whole number of refreshes of at least 1"),
        Case(
            arguments: ["trace", "generate", "lte-driving.down", "--seed", "-1"],
            message: "'-1' is invalid for '--seed <seed>': expected a whole number from 0 to 18446744073709551615"),
        Case(
            arguments: ["trace", "generate", "lte-driving.down", "--duration", "-5"],
            message: "--duration \"-5\": expected a duration up to 60 min"),
        Case(
            arguments: ["tc", "apply", "lo", "3g", "--port", "-1"],
            message: "--port \"-1\" is not a port number from 1 to 65535"),
        Case(
            arguments: ["exec", "--forward", "-5", "--", "true"],
            message: "--forward \"-5\": expected ports from 1 to 65535"),
        Case(
            arguments: ["exec", "--forward", "--", "true"],
            message: "--forward: expected ports from 1 to 65535 before --"),
    ]

    @Test(arguments: cases)
    func aNegativeValueIsRefusedWithWhatTheOptionExpects(_ given: Case) throws {
        let result = try LinkcondProcess.run(given.arguments)

        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(given.message), "\(result.stderr)")
        #expect(!result.stderr.contains("Missing value"), "\(result.stderr)")
    }

    /// `--count 0` used to give one refresh as if it were 1; it is refused like any count below 1.
    @Test func aCountOfZeroIsRefused() throws {
        let result = try LinkcondProcess.run(["status", "--watch", "--count", "0"])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("expected a whole number of refreshes of at least 1"), "\(result.stderr)")
    }
}
