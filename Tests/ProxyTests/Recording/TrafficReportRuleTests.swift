import Foundation
import LinkConditioner
import Testing

/// The report's rules on recordings written out by hand: each fires on the habit it names and stays silent on its
/// well-behaved twin. Times are microseconds, as in the log.
struct TrafficReportRuleTests {
    /// A recording with `profile` (round trip 200 ms unless offline) and one exchange per entry of `exchanges`:
    /// a connection opened at `at`, `up` bytes sent, `down` bytes answered `wait` later, closed after.
    func recording(offlineAt: Int64? = nil, _ exchanges: [(at: Int64, up: Int, down: Int, wait: Int64)]) throws
        -> TrafficReport
    {
        var lines = [
            #"{"v":1,"ev":"start","wall":"2026-01-01T00:00:00Z"}"#,
            #"{"t":0,"ev":"profile","name":"3g","summary":"","offline":null,"delay_up_us":100000,"delay_down_us":100000}"#,
        ]
        if let offlineAt {
            lines.append(
                #"{"t":\#(offlineAt),"ev":"profile","name":"3g","summary":"","offline":"blackhole","delay_up_us":100000,"delay_down_us":100000}"#
            )
        }
        for (index, exchange) in exchanges.enumerated() {
            let id = index + 1
            let sent = exchange.at + 1000
            let answered = sent + exchange.wait
            lines.append(
                #"{"t":\#(exchange.at),"ev":"open","conn":\#(id),"listener":"tcp","client":"c","dest":"198.18.0.2:80"}"#
            )
            lines.append(
                #"{"t":\#(sent),"ev":"send","conn":\#(id),"dir":"up","bytes":\#(exchange.up),"reads":1,"small":\#(exchange.up < 100 ? 1 : 0),"last":\#(sent)}"#
            )
            lines.append(
                #"{"t":\#(sent),"ev":"deliver","conn":\#(id),"dir":"up","bytes":\#(exchange.up),"writes":1,"small":0,"last":\#(sent)}"#
            )
            if exchange.down > 0 {
                lines.append(
                    #"{"t":\#(answered),"ev":"send","conn":\#(id),"dir":"down","bytes":\#(exchange.down),"reads":1,"small":0,"last":\#(answered)}"#
                )
                lines.append(
                    #"{"t":\#(answered),"ev":"deliver","conn":\#(id),"dir":"down","bytes":\#(exchange.down),"writes":1,"small":0,"last":\#(answered)}"#
                )
            }
            lines.append(#"{"t":\#(answered + 1000),"ev":"close","conn":\#(id),"by":"client","reset":false}"#)
        }
        let data = Data((lines.joined(separator: "\n") + "\n").utf8)
        return TrafficReport(try Recording(data: data, file: "hand.jsonl"))
    }

    func finding(_ rule: String, in report: TrafficReport) -> TrafficReport.Finding? {
        report.findings.first { $0.rule == rule }
    }

    @Test func aSmallPollEveryFifteenSecondsWakesTheRadioEachTimeAndOneBatchWakesItOnce() throws {
        let polls = try recording((0..<4).map { (at: Int64($0) * 15_000_000, up: 300, down: 500, wait: 250_000) })
        let batch = try recording([(at: 0, up: 1200, down: 2000, wait: 250_000)])

        #expect(polls.radio.wakeUps == 4)
        #expect(finding("radio-wake-ups", in: polls)?.numbers.hasPrefix("4 of 4 wake-ups") == true)
        #expect(batch.radio.wakeUps == 1)
        #expect(finding("radio-wake-ups", in: batch) == nil)
    }

    @Test func aRequestAnsweredAfterFortyFiveSecondsOutlivesTheThirtySecondTimeoutButNotTheSixty() throws {
        let slow = try recording([(at: 0, up: 300, down: 500, wait: 45_000_000)])
        let quick = try recording([(at: 0, up: 300, down: 500, wait: 20_000_000)])

        let long = try #require(finding("long-waits", in: slow))
        #expect(long.numbers.hasPrefix("1 requests waited at least 30 s, 0 at least 60 s"))
        #expect(long.connections == [1])
        #expect(finding("long-waits", in: quick) == nil)
    }

    @Test func connectionsEveryTwoHundredMillisecondsWhileOfflineAreATightRetryLoopAndEveryFiveSecondsAreNot() throws {
        let tight = try recording(
            offlineAt: 0, (0..<5).map { (at: Int64($0) * 200_000 + 10, up: 300, down: 0, wait: 100_000) })
        let backingOff = try recording(
            offlineAt: 0, (0..<5).map { (at: Int64($0) * 5_000_000 + 10, up: 300, down: 0, wait: 100_000) })

        #expect(finding("offline-retries", in: tight)?.connections == [2, 3, 4, 5])
        #expect(finding("offline-retries", in: backingOff) == nil)
    }

    @Test func aFirstByteFourRoundTripsAfterOpeningIsSetUpCostAndOneAndAHalfIsNot() throws {
        let chatty = try recording([(at: 0, up: 300, down: 500, wait: 800_000)])
        let plain = try recording([(at: 0, up: 300, down: 500, wait: 300_000)])

        #expect(finding("set-up-cost", in: chatty)?.connections == [1])
        #expect(finding("set-up-cost", in: plain) == nil)
    }
}
