import Foundation
import LinkModel
import LinkProfiles
import Testing

@Suite(.timeLimit(.minutes(5)))
struct TraceSettingTests {
    /// A directory holding `files`, removed by the caller.
    private func directory(with files: [String: String]) throws -> String {
        let path = NSTemporaryDirectory() + "linkcond-trace-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(toFile: path + "/" + name, atomically: true, encoding: .utf8) }
        return path
    }

    @Test func builtInTraceByName() throws {
        let profile = try Profile(parsing: "downlink.trace = subway.down\n")

        #expect(profile.downlink.trace?.name == "subway.down")
        #expect(profile.downlink.trace == DeliveryTrace.builtIn(named: "subway.down"))
        #expect(profile.uplink.trace == nil)
    }

    @Test func traceFileNextToTheProfileIsFoundRelativeToIt() throws {
        let folder = try directory(with: ["cell.profile": "downlink.trace = ./cell.down\n", "cell.down": "1\n1\n5\n"])
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let profile = try Profile(contentsOfFile: folder + "/cell.profile")

        #expect(profile.downlink.trace?.milliseconds == [1, 1, 5])
        #expect(profile.rendered.contains("downlink.trace = ./cell.down\n"))
    }

    @Test func malformedTraceIsReportedAtTheTracesLineFromTheProfilesLine() throws {
        let folder = try directory(with: [
            "bad.profile": "delay = 10 ms\ntrace = ./bad.trace\n", "bad.trace": "1\n7\n3\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/bad.profile"

        #expect(throws: ProfileError.self) { try Profile(contentsOfFile: path) }
        do {
            _ = try Profile(contentsOfFile: path)
        } catch {
            #expect(
                error.description
                    == "\(path):2: \"trace = ./bad.trace\": ./bad.trace:3: 3 comes after 7: timestamps must never decrease"
            )
        }
    }

    @Test func missingTraceFileAndUnknownBuiltInAreRefused() {
        #expect(throws: ProfileError.self) { try Profile(parsing: "trace = ./nowhere.trace\n", file: "/tmp/x.profile") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "trace = lte-flying.down\n") }
    }

    /// A path that exists but holds no trace (a directory, a device) is named as what it is, not as missing.
    @Test func aDirectoryOrDeviceGivenAsTheTraceIsNamedAsSuch() throws {
        let folder = try directory(with: ["cell.profile": "downlink.trace = ./traces\n"])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/traces", withIntermediateDirectories: false)

        #expect(throws: ProfileError.self) { try Profile(contentsOfFile: folder + "/cell.profile") }
        do {
            _ = try Profile(contentsOfFile: folder + "/cell.profile")
        } catch {
            #expect(
                error.description.hasSuffix(
                    "\"downlink.trace = ./traces\": ./traces: is a directory: expected a trace file (one millisecond timestamp per line)"
                ), "\(error)")
        }
        do {
            _ = try Profile(parsing: "uplink.trace = /dev/null\n")
            Issue.record("/dev/null was taken as a trace")
        } catch {
            #expect(
                error.description
                    == "1: \"uplink.trace = /dev/null\": /dev/null: is not a regular file: expected a trace file (one millisecond timestamp per line)",
                "\(error)")
        }
    }

    @Test func summaryNamesTheTraceOfOneDirection() throws {
        let profile = try Profile(parsing: "uplink.trace = lte-driving.up\n")

        #expect(profile.summary.hasSuffix("default down, trace lte-driving.up up"))
    }

    @Test func kernelBackendDeclinesATrace() throws {
        let profile = try Profile(parsing: "uplink.trace = lte-driving.up\n")

        #expect(ProfileSettings.kernelUnsupported(profile.uplink) == ["trace"])
    }

    @Test func noneRemovesATrace() throws {
        let profile = try Profile(parsing: "trace = subway.down\n").setting("downlink.trace", to: "none")

        #expect(profile.downlink.trace == nil)
        #expect(profile.uplink.trace != nil)
    }
}
