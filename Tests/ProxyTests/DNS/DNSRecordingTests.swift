import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The DNS forwarder reports each answered lookup to the recording: name, type, the client's wait and the answer.
struct DNSRecordingTests {
    @Test(.enabled(if: Dig.path != nil, "dig is not installed (apt-get install dnsutils)"))
    func aLookupThroughARecordingForwarderIsRecordedWithItsNameDelayAndAnswer() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-dns-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ProxyOptions()
        options.recording = RecordingOptions(path: path)
        var profile = Profile.none
        profile.dnsDelay = .milliseconds(200)
        let proxy = try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .dns(upstream: Endpoint(host: "127.0.0.1", port: server.port)))
            ],
            profile: profile, options: options)

        _ = try Dig.query("app.example.test", port: proxy.port)
        proxy.stop()
        let recording = try Recording(contentsOf: path)

        #expect(recording.lookups.count == 1)
        let lookup = try #require(recording.lookups.first)
        #expect(lookup.name == "app.example.test")
        #expect(lookup.type == "A")
        #expect(lookup.answers == ["192.0.2.53"])
        #expect(lookup.delay >= 200_000, "waited \(lookup.delay) µs for 200 ms asked")
    }

    @Test(.enabled(if: Dig.path != nil, "dig is not installed (apt-get install dnsutils)"))
    func aLookupOverTCPIsRecordedAsATCPLookupAndTheReportCountsIt() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-dns-tcp-\(UUID()).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ProxyOptions()
        options.recording = RecordingOptions(path: path)
        var profile = Profile.none
        profile.dnsDelay = .milliseconds(200)
        let proxy = try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .dns(upstream: Endpoint(host: "127.0.0.1", port: server.port)))
            ],
            profile: profile, options: options)

        let answer = try Dig.query("app.example.test", port: proxy.port, tcp: true)
        proxy.stop()
        let recording = try Recording(contentsOf: path)
        let report = TrafficReport(recording)

        #expect(answer.answers.count == 1 && answer.answers[0].hasSuffix("192.0.2.53"), "\(answer)")
        let lookup = try #require(recording.lookups.first)
        #expect(recording.lookups.count == 1)
        #expect(lookup.transport == "tcp" && lookup.name == "app.example.test" && lookup.answers == ["192.0.2.53"])
        #expect(lookup.delay >= 200_000, "waited \(lookup.delay) µs for 200 ms asked")
        #expect(report.lookups == 1)
    }
}
