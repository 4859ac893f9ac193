import Foundation
import LinkConditioner
import Testing

/// The report's rules on recordings written out by hand: each fires on the habit it names and stays silent on its
/// well-behaved twin. Times are microseconds, as in the log.
struct TrafficReportRuleTests {
    /// A recording with `profile` (round trip 200 ms unless offline) and one exchange per entry of `exchanges`:
    /// a connection opened at `at`, `up` bytes sent, `down` bytes answered `wait` later, closed after.
    func recording(
        offlineAt: Int64? = nil, closedBy: String = "client", extra: [String] = [],
        _ exchanges: [(at: Int64, up: Int, down: Int, wait: Int64)]
    ) throws -> TrafficReport {
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
            lines.append(
                #"{"t":\#(answered + 1000),"ev":"close","conn":\#(id),"by":"\#(closedBy)","reset":false}"#)
        }
        lines += extra
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

    /// Lines of one connection `id` opened at 0 to 198.18.0.3:443 that `sends` (time, bytes) upward and gets
    /// `answers` (time, bytes) delivered, each in its own 20 ms window, closed at `closed`.
    func connection(_ id: Int, sends: [(Int64, Int)], answers: [(Int64, Int)], closed: Int64) -> [String] {
        var lines = [#"{"t":0,"ev":"open","conn":\#(id),"listener":"tcp","client":"c","dest":"198.18.0.3:443"}"#]
        for (time, bytes) in sends {
            lines.append(
                #"{"t":\#(time),"ev":"send","conn":\#(id),"dir":"up","bytes":\#(bytes),"reads":1,"small":\#(bytes < 100 ? 1 : 0),"last":\#(time)}"#
            )
        }
        for (time, bytes) in answers {
            lines.append(
                #"{"t":\#(time),"ev":"deliver","conn":\#(id),"dir":"down","bytes":\#(bytes),"writes":1,"small":0,"last":\#(time + 19_000)}"#
            )
        }
        lines.append(#"{"t":\#(closed),"ev":"close","conn":\#(id),"by":"client","reset":false}"#)
        return lines
    }

    @Test func manyConnectionsThatEachWroteOneSmallRequestAreNotSmallWrites() throws {
        let report = try recording((0..<30).map { (at: Int64($0) * 300_000, up: 80, down: 2000, wait: 250_000) })

        #expect(finding("small-writes", in: report) == nil)
    }

    @Test func fourSmallPiecesWithinTwoHundredMillisecondsBeforeAReplyAreSmallWritesAndOneReplyApartAreNot() throws {
        let pieces = (0..<6).map { (Int64(1000 + $0 * 30_000), 12) }
        let burst = try recording(extra: connection(1, sends: pieces, answers: [(400_000, 500)], closed: 500_000), [])
        let answeredEach = try recording(
            extra: connection(
                1, sends: (0..<6).map { (Int64(1000 + $0 * 400_000), 12) },
                answers: (0..<6).map { (Int64(300_000 + $0 * 400_000), 500) }, closed: 2_500_000), [])
        let spreadOut = try recording(
            extra: connection(
                1, sends: (0..<6).map { (Int64(1000 + $0 * 2_000_000), 12) }, answers: [], closed: 12_000_000), [])

        let small = try #require(finding("small-writes", in: burst))
        #expect(small.connections == [1])
        #expect(small.numbers.hasPrefix("1 of 1 connections"))
        #expect(small.numbers.hasSuffix("the worst wrote 6 in one burst"))
        #expect(finding("small-writes", in: answeredEach) == nil)
        #expect(finding("small-writes", in: spreadOut) == nil)
    }

    /// A download that goes on while the app writes small acknowledgements (an HTTP/2 window update) is one
    /// exchange, not a chain of requests; five requests each after the previous answer are a chain.
    @Test func smallWritesDuringOneDownloadAreNotSerialRequests() throws {
        let download = try recording(
            extra: connection(
                1, sends: [(1000, 300)] + (1...10).map { (Int64($0) * 100_000 + 5000, 13) },
                answers: (0..<60).map { (Int64(200_000 + $0 * 20_000), 1400) }, closed: 1_500_000), [])
        let chain = try recording(
            extra: connection(
                1, sends: (0..<6).map { (Int64(1000 + $0 * 400_000), 300) },
                answers: (0..<6).map { (Int64(300_000 + $0 * 400_000), 500) }, closed: 2_500_000), [])

        #expect(finding("dependent-round-trips", in: download) == nil)
        #expect(finding("long-waits", in: download) == nil)
        #expect(finding("dependent-round-trips", in: chain)?.numbers.hasPrefix("5 serial requests") == true)
    }

    @Test func aDownloadLastingAMinuteThatStartedAtOnceIsNotALongWait() throws {
        let download = try recording(
            extra: connection(
                1, sends: [(1000, 300)], answers: (0..<3500).map { (Int64(250_000 + $0 * 20_000), 1400) },
                closed: 71_000_000), [])

        #expect(finding("long-waits", in: download) == nil)
    }

    @Test func aNewConnectionAfterOneLinkcondEndedIsNotMissedReuseButAfterOneTheClientClosedIs() throws {
        let exchanges = (0..<4).map { (at: Int64($0) * 1_000_000, up: 300, down: 500, wait: Int64(250_000)) }
        let failed = try recording(closedBy: "linkcond", exchanges)
        let closedByClient = try recording(exchanges)
        let closedByUpstream = try recording(closedBy: "upstream", exchanges)

        #expect(finding("reuse-missed", in: failed) == nil)
        #expect(finding("reuse-missed", in: closedByClient)?.connections == [2, 3, 4])
        #expect(
            finding("reuse-missed", in: closedByUpstream)?.numbers.hasSuffix(
                "for 3 of them the upstream had closed the previous one (check its keep-alive)") == true)
    }

    @Test func fiveConnectionsOpenedTogetherWhileOfflineAreNotRetries() throws {
        let parallel = try recording(
            offlineAt: 0, (0..<5).map { (at: Int64($0) * 1000 + 10, up: 300, down: 0, wait: 3_000_000) })

        #expect(finding("offline-retries", in: parallel) == nil)
    }

    /// A connection opened ahead of use (the app writes 2 s later) or answered by a slow server spent no round
    /// trips on set-up; one whose request reached the upstream only after 4 round trips did.
    @Test func anAppThatWritesLateOrASlowServerIsNotSetUpCost() throws {
        func connection(write: Int64, handedOver: Int64, answered: Int64) -> [String] {
            [
                #"{"t":0,"ev":"open","conn":1,"listener":"tcp","client":"c","dest":"198.18.0.3:80"}"#,
                #"{"t":\#(write),"ev":"send","conn":1,"dir":"up","bytes":300,"reads":1,"small":0,"last":\#(write)}"#,
                #"{"t":\#(handedOver),"ev":"deliver","conn":1,"dir":"up","bytes":300,"writes":1,"small":0,"last":\#(handedOver)}"#,
                #"{"t":\#(answered),"ev":"send","conn":1,"dir":"down","bytes":500,"reads":1,"small":0,"last":\#(answered)}"#,
                #"{"t":\#(answered + 1000),"ev":"close","conn":1,"by":"client","reset":false}"#,
            ]
        }
        let preOpened = try recording(
            extra: connection(write: 2_000_000, handedOver: 2_300_000, answered: 2_310_000), [])
        let slowServer = try recording(extra: connection(write: 1000, handedOver: 300_000, answered: 2_300_000), [])
        let slowHandshake = try recording(extra: connection(write: 1000, handedOver: 800_000, answered: 810_000), [])

        #expect(finding("set-up-cost", in: preOpened) == nil)
        #expect(finding("set-up-cost", in: slowServer) == nil)
        #expect(finding("set-up-cost", in: slowHandshake)?.connections == [1])
    }

    @Test func connectionListsCollapseRunsShowTheWorstAndCountWhatTheyLeaveOut() {
        #expect(TrafficReport.connectionList([]) == "-")
        #expect(TrafficReport.connectionList([7]) == "#7")
        #expect(TrafficReport.connectionList(Array(1...23)) == "#1–#23")
        #expect(
            TrafficReport.connectionList([3, 4, 5, 9, 12, 13], worst: [12, 4]) == "#3–#5, #9, #12–#13; worst #12, #4")
        let scattered = (1...20).map { UInt64($0 * 2) }
        #expect(TrafficReport.connectionList(scattered) == "#2, #4, #6, #8, #10, #12 and 14 more")
    }
}
