import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond status` fits the width it is given (`COLUMNS`, the terminal, else 80), keeps the wide table behind
/// `--wide`, and explains SYNs resent on a link that loses nothing. The real binary reads a fixed status answer from
/// a stand-in control endpoint, so every figure and name is known.
@Suite(.serialized)
struct StatusWidthTests {
    /// Every width from the narrowest view to a wide terminal: no line is wider, no figure is cut or parted from
    /// its unit (`1.2 MiB` stays on one line; a long phrase may break between words), and names too long for a line
    /// are cut with an ellipsis, the addresses keeping their ports. `COLUMNS` below 20 gets the 20-column view.
    @Test func everyLineFitsTheColumnsAndEveryFigureIsWhole() throws {
        for columns in [1, 5] + Array(20...120) {
            let status = try StatusFixture.status(Self.busy, environment: ["COLUMNS": "\(columns)"])
            let width = max(20, columns)

            #expect(status.status == 0, "\(status.stderr)")
            let lines = status.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            for line in lines { #expect(line.count <= width, "wider than \(width): \(line)") }
            // A number is never cut by an ellipsis (an address cut in its middle keeps its port), and stays on one
            // line with its unit.
            for line in lines {
                #expect(line.firstRange(of: #/[0-9]\.?…(?!:[0-9])/#) == nil, "a number cut at \(columns): \(line)")
            }
            for figure in [
                "787.6 kbit/s", "12.3 kbit/s", "1.2 MiB", "70.7 KiB", "15 TCP", "9 datagrams", "2 kernel", "2 SYNs",
                "1 SYN-ACK", "↓ p99", "1.20 ms", "5.4 MiB", "12 accepted", "0 live", "1 accepted",
            ] {
                #expect(status.stdout.contains(figure), "\(figure) parted at \(columns) columns:\n\(status.stdout)")
            }
            // Read as one text (a break between words as a space), each phrase is whole.
            let flowing = status.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            for phrase in [
                "787.6 kbit/s", "1.2 MiB delivered", "70.7 KiB queued", "15 TCP segments lost", "9 datagrams dropped",
                "2 kernel drops", "2 SYNs resent", "1 SYN-ACK resent", "↓ p99 1.20 ms", "12 accepted",
                "3g-lossy: 780 kbit/s down, 330 kbit/s up, 100 ms delay, 1 % loss",
            ] {
                #expect(flowing.contains(phrase), "\(phrase) missing at \(columns) columns:\n\(status.stdout)")
            }
            for port in [":8080", ":65535", ":8443", ":26379", ":5353", ":443"] {
                #expect(status.stdout.contains(port), "\(port) missing at \(columns) columns:\n\(status.stdout)")
            }
        }
        for columns in [60, 80, 100] {
            let status = try StatusFixture.status(Self.busy, environment: ["COLUMNS": "\(columns)"])
            #expect(status.stdout.contains("profile   3g-lossy: 780 kbit/s down,"), "\(status.stdout)")
        }
    }

    /// A name in CJK characters takes two columns a character: the lines are measured, clipped and padded by the
    /// columns a terminal shows, not by the characters counted.
    @Test(arguments: [40, 33, 20])
    func wideCharactersAreMeasuredByTheirColumns(columns: Int) throws {
        let fixture = try StatusFixture.with(
            Self.busy, ["profile": "東京から大阪への回線が混雑している夜間の携帯電話網の状態を再現するプロファイル"])
        let answer = fixture.replacingOccurrences(
            of: "payments-primary-database-replica-in-the-eu-west-region-behind-the-load-balancer",
            with: "決済用の主データベースの複製の欧州西部地域のもの")
        let status = try StatusFixture.status(answer, environment: ["COLUMNS": "\(columns)"])

        #expect(status.status == 0, "\(status.stderr)")
        for line in status.stdout.split(separator: "\n") {
            #expect(Self.columns(line) <= columns, "\(Self.columns(line)) columns at \(columns): \(line)")
        }
        #expect(status.stdout.contains("東京から"), "\(status.stdout)")
        #expect(status.stdout.contains("toxiproxy 決済"), "\(status.stdout)")
    }

    /// The columns a terminal gives `text` when its only wide characters are CJK ideographs, kana and fullwidth
    /// forms: measured here independently of linkcond's own measure.
    static func columns(_ text: Substring) -> Int {
        text.unicodeScalars.reduce(0) {
            $0 + ((0x3000...0x9FFF).contains($1.value) || (0xFF00...0xFF60).contains($1.value) ? 2 : 1)
        }
    }

    @Test func displayColumnsCountWideCharactersTwiceAndCombiningMarksNever() {
        #expect(TerminalText.columns("abc") == 3)
        #expect(TerminalText.columns("東京") == 4)
        #expect(TerminalText.columns("ＡＢ") == 4)
        #expect(TerminalText.columns("e\u{301}te\u{301}") == 3)
        #expect(TerminalText.columns("↑ 🚀") == 4)
        #expect(TerminalText.prefix("東京abc", columns: 3) == "東")
        #expect(TerminalText.prefix("東京abc", columns: 5) == "東京a")
    }

    /// An empty `COLUMNS` counts as unset: into a pipe, the view is 80 columns wide.
    @Test func withoutColumnsAndATerminalTheViewIsEightyColumns() throws {
        let status = try StatusFixture.status(Self.busy, environment: ["COLUMNS": ""])

        let widest = status.stdout.split(separator: "\n").map(\.count).max() ?? 0
        #expect(widest <= 80 && widest > 60, "\(status.stdout)")
    }

    /// A huge `COLUMNS` is held to 1000: it neither crashes the destinations table nor pads lines to gigabytes.
    @Test(arguments: ["9223372036854775807", "100000000", "1001"])
    func aHugeColumnsIsHeldToAThousand(columns: String) throws {
        let status = try StatusFixture.status(Self.busy, environment: ["COLUMNS": columns])

        #expect(status.status == 0, "COLUMNS=\(columns): \(status.stderr)")
        #expect(status.stdout.utf8.count < 20_000, "COLUMNS=\(columns): \(status.stdout.utf8.count) bytes")
        let widest = status.stdout.split(separator: "\n").map(\.count).max() ?? 0
        #expect(widest == 1000, "COLUMNS=\(columns):\n\(status.stdout)")
        #expect(status.stdout.contains("destination"), "\(status.stdout)")
    }

    /// The table as the linkcond before the fitted view printed it for the same answer.
    @Test func wideKeepsTheTableAsItWas() throws {
        let status = try StatusFixture.status(Self.busy, arguments: ["--wide"], environment: ["COLUMNS": "80"])

        #expect(status.stdout == Self.busyAsTheWideTable, "\(status.stdout)")
    }

    @Test func synsResentOnALosslessLinkAreExplainedOnlyWhenTheRoundTripOutlastsTheFirstTimeout() throws {
        let cases: [(roundTrip: Double, lossless: Bool, explained: Bool)] = [
            (1.2, true, true), (0.2, true, false), (1.2, false, false),
        ]
        for (roundTrip, lossless, explained) in cases {
            let fixture = try StatusFixture.with(
                Self.busy, ["handshake": ["roundTripSeconds": roundTrip, "lossless": lossless]])
            for arguments in [[], ["--wide"]] {
                let status = try StatusFixture.status(fixture, arguments: arguments, environment: ["COLUMNS": "80"])
                let note = status.stdout.split(separator: "\n").filter { $0.hasPrefix("SYNs resent with no loss") }
                #expect(note.count == (explained ? 1 : 0), "\(roundTrip) s, lossless \(lossless):\n\(status.stdout)")
                if explained {
                    #expect(
                        note.first == "SYNs resent with no loss: a 1.20 s handshake outlasts Linux's 1 s SYN timeout")
                }
            }
        }
        let noneResent = try StatusFixture.with(
            Self.quiet, ["handshake": ["roundTripSeconds": 1.2, "lossless": true]])
        let quiet = try StatusFixture.status(noneResent, environment: ["COLUMNS": "80"])
        #expect(!quiet.stdout.contains("SYNs resent with no loss"), "\(quiet.stdout)")
    }

    /// End to end: a link that loses nothing with a 1.2 s round trip resends each handshake's SYN once, and the
    /// answer says so with the figures that explain it.
    @Test func aSlowLosslessHandshakeIsExplainedByTheRunningInstance() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try ProfiledLinkcond(upstream: echo.port, profile: "delay = 600 ms\n")
        defer { linkcond.stop() }
        let client = try TestConnection.connect(port: linkcond.port, timeout: 30)
        defer { client.close() }
        try client.send([1])
        #expect(try client.receive(exactly: 1) == [1])

        let json = try LinkcondProcess.run(["status", "--json", "--control", linkcond.controlSocket])
        let text = try LinkcondProcess.run(
            ["status", "--control", linkcond.controlSocket], environment: ["COLUMNS": "80"])

        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
        #expect(report.handshake?.lossless == true)
        #expect(report.handshake?.roundTripSeconds == 1.2)
        #expect(report.listeners.first?.uplink.handshakeRetransmissions == 1, "\(json.stdout)")
        #expect(
            text.stdout.contains(
                "SYNs resent with no loss: a 1.20 s handshake outlasts Linux's 1 s SYN timeout"),
            "\(text.stdout)")
    }

    // MARK: - Fixtures

    /// Five listeners with long addresses and names, traffic, losses, late deliveries and an exec destination
    /// table; SYNs and SYN-ACKs resent on a lossy link.
    static let busy = #"""
        {"version":"0.1.0","profile":"3g-lossy","profileSummary":"780 kbit/s down, 330 kbit/s up, 100 ms delay, 1 % loss","spliceLoops":1,"spliceHandOvers":3,"splicePipesKept":0,"handshake":{"roundTripSeconds":0.2,"lossless":false},
        "listeners":[
        {"kind":"tcp","address":"127.0.0.1:8080","upstream":"127.0.0.1:3000","activeConnections":3,"connectionsAccepted":12,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":10342,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":3,"acksLost":4,"handshakeRetransmissions":2,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":12345.6},
         "downlink":{"bytesDelivered":1234567,"queuedBytes":72400,"inFlightBytes":8688,"segmentsLost":12,"acksLost":1,"handshakeRetransmissions":1,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":787562.8,
          "deliveryLateness":{"writes":111,"p50Seconds":0.000003,"p99Seconds":0.0012,"maxSeconds":0.0034,"sumSeconds":0.04}}},
        {"kind":"tcp","address":"[2001:db8:aaaa:bbbb:cccc:dddd:eeee:1234]:65535","upstream":"an-upstream-with-a-rather-long-host-name.internal.example.com:8443","activeConnections":1,"connectionsAccepted":1,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":164,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0},
         "downlink":{"bytesDelivered":5678901,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":1530000}},
        {"kind":"tcp","toxiproxy":"payments-primary-database-replica-in-the-eu-west-region-behind-the-load-balancer","address":"127.0.0.1:26379","upstream":"127.0.0.1:6379","activeConnections":0,"connectionsAccepted":0,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":0,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0},
         "downlink":{"bytesDelivered":0,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0}},
        {"kind":"exec","address":"127.0.0.1:40000","activeConnections":2,"connectionsAccepted":4,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":2048,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":800},
         "downlink":{"bytesDelivered":5678901,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":640000},
         "destinations":[{"destination":"198.18.0.2:443","host":"a-very-long-host-name-that-the-program-looked-up.cdn.example.net","connections":3,"bytesUp":1234,"bytesDown":5678901},{"destination":"[2001:db8::2]:53","connections":1,"bytesUp":40,"bytesDown":120}]},
        {"kind":"udp","address":"127.0.0.1:5353","upstream":"127.0.0.1:53","activeConnections":0,"connectionsAccepted":2,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":400,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":4,"datagramsDropped":3,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0},
         "downlink":{"bytesDelivered":900,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":6,"datagramsDropped":6,"kernelDrops":2,"faultDrops":0,"duplicates":0,"bitsPerSecond":0}}
        ]}
        """#

    /// One listener that resent nothing.
    static let quiet = #"""
        {"version":"0.1.0","profile":"slow","profileSummary":"600 ms delay","listeners":[
        {"kind":"tcp","address":"127.0.0.1:8080","upstream":"127.0.0.1:3000","activeConnections":0,"connectionsAccepted":0,"connectionsRefused":0,"malformedMessages":0,
         "uplink":{"bytesDelivered":0,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0},
         "downlink":{"bytesDelivered":0,"queuedBytes":0,"inFlightBytes":0,"segmentsLost":0,"acksLost":0,"handshakeRetransmissions":0,"datagramsDelivered":0,"datagramsDropped":0,"kernelDrops":0,"faultDrops":0,"duplicates":0,"bitsPerSecond":0}}
        ]}
        """#

    /// What the linkcond before the fitted view (main at 82de296) printed for `busy`.
    static let busyAsTheWideTable = """
        profile   3g-lossy: 780 kbit/s down, 330 kbit/s up, 100 ms delay, 1 % loss
        link      online
        threads   main loop + 1 splice loop carrying 0 pass-through connections, 3 handed over so far

        kind                                listen                 upstream               conns  accepted  refused   ↑ rate       ↓ rate       ↑ bytes     ↓ bytes     ↑ queued  ↓ queued  lost  dropped  kernel drops
        tcp                                 127.0.0.1:8080         127.0.0.1:3000             3        12        0  12.3 kbit/s 787.6 kbit/s    10.1 KiB     1.2 MiB       0 B  70.7 KiB    15        0             0
        tcp                                 [2001:db8:aaaa:bbbb:cc an-upstream-with-a-rat     1         1        0      0 bit/s  1.53 Mbit/s       164 B     5.4 MiB       0 B       0 B     0        0             0
        toxiproxy payments-primary-databa…  127.0.0.1:26379        127.0.0.1:6379             0         0        0      0 bit/s      0 bit/s         0 B         0 B       0 B       0 B     0        0             0
        exec                                127.0.0.1:40000        -                          2         4        0    800 bit/s 640.0 kbit/s     2.0 KiB     5.4 MiB       0 B       0 B     0        0             0
        udp                                 127.0.0.1:5353         127.0.0.1:53               0         2        0      0 bit/s      0 bit/s       400 B       900 B       0 B       0 B     0        9             2

        TCP losses  listen                 ↑ segments  ↓ segments  ↑ ACKs  ↓ ACKs  SYNs resent  SYN-ACKs resent
        tcp         127.0.0.1:8080                  3          12       1       4            2                1

        Late deliveries  listen                      ↑ p99      ↑ max      ↓ p99      ↓ max
        tcp              127.0.0.1:8080                  -          -    1.20 ms    3.40 ms
        (released bytes reached their sockets this long after the link model released them: emulated delays
         there were that much longer, because the machine kept linkcond from waking in time;
         --realtime, given to run, exec or attach, keeps its loop ahead of other processes)

        exec destination                       conns     ↑ bytes     ↓ bytes
        198.18.0.2:443 (a-very-long-host-name-that-the-program-looked-up.cdn.example.net)     3     1.2 KiB     5.4 MiB
        [2001:db8::2]:53                           1        40 B       120 B

        """
}

/// A stand-in control endpoint that answers every request with one fixed status answer, for `status --control`.
enum StatusFixture {
    /// `linkcond status ARGUMENTS` against an endpoint answering `answer`.
    static func status(_ answer: String, arguments: [String] = [], environment: [String: String] = [:]) throws
        -> LinkcondProcess.Result
    {
        let body = Array(answer.utf8)
        let server = try TestServer { connection in
            defer { connection.close() }
            var request: [UInt8] = []
            while !request.ends(with: Array("\r\n\r\n".utf8)), let chunk = try? connection.receive(), !chunk.isEmpty {
                request += chunk
            }
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            try? connection.send(Array(head.utf8) + body)
        }
        defer { server.stop() }
        let command = ["status", "--control", "http://127.0.0.1:\(server.port)", "--control-token", "fixture"]
        return try LinkcondProcess.run(command + arguments, environment: environment)
    }

    /// `answer` with `fields` set at its top level.
    static func with(_ answer: String, _ fields: [String: Any]) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
        object.merge(fields) { $1 }
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool {
        count >= suffix.count && Array(self.suffix(suffix.count)) == suffix
    }
}
