import Foundation
import LinkConditioner
import Testing

/// A damaged or hand-written recording: a number no recording holds (negative, beyond 2⁴², not whole) is refused
/// with its line and key, where it once trapped converting a connection number or adding round trips, or made the
/// report run without end.
struct RecordingRangeTests {
    private let start = #"{"v":1,"ev":"start","wall":"2026-01-01T00:00:00Z"}"#

    @Test(arguments: [
        (#"{"t":0,"ev":"open","conn":-1}"#, #""conn" is -1"#),
        (#"{"t":9223372036854775807,"ev":"open","conn":1}"#, #""t" is 9223372036854775807"#),
        (#"{"t":1e300,"ev":"open","conn":1}"#, #""t" is 1e+300"#),
        (#"{"t":1.5,"ev":"open","conn":1}"#, #""t" is 1.5"#),
        (
            #"{"t":0,"ev":"profile","delay_up_us":9223372036854775807,"delay_down_us":9223372036854775807}"#,
            #""delay_up_us" is 9223372036854775807"#
        ),
        (#"{"t":0,"ev":"dropped","events":-5}"#, #""events" is -5"#),
    ])
    func aNumberNoRecordingHoldsIsRefusedWithItsLineAndKey(line: String, shown: String) {
        do {
            _ = try Recording(data: Data((start + "\n" + line + "\n").utf8), file: "hand.jsonl")
            Issue.record("\(line) was read")
        } catch {
            #expect(
                error.description == "hand.jsonl:2: \(shown): expected a whole number from 0 to 4398046511104",
                "\(error)")
        }
    }

    @Test func aRecordingAtTheLargestTimesMakesAReportAndAPage() throws {
        let last = Recording.largestNumber
        let lines = [
            start,
            #"{"t":0,"ev":"profile","name":"3g","summary":"","offline":null,"delay_up_us":\#(last),"delay_down_us":\#(last)}"#,
            #"{"t":0,"ev":"open","conn":1,"listener":"tcp","client":"c","dest":"198.18.0.2:80"}"#,
            #"{"t":0,"ev":"stall","conn":1,"dir":"down","cause":"queue"}"#,
            #"{"t":1,"ev":"send","conn":1,"dir":"up","bytes":\#(last),"reads":\#(last),"small":\#(last),"last":\#(last)}"#,
            #"{"t":\#(last),"ev":"close","conn":1,"by":"client","reset":false}"#,
        ]
        let recording = try Recording(data: Data((lines.joined(separator: "\n") + "\n").utf8), file: "hand.jsonl")

        let report = TrafficReport(recording)

        #expect(report.summary.contains("1 connections"), "\(report.summary)")
        #expect(ReportPage.html(recording, report).contains("<svg"))
    }
}
