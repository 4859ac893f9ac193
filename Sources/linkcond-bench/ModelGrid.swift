import Foundation
import LinkConditioner
import LoopbackPeers

/// The accuracy grid's transfers run through the TCP model alone, in virtual time: each cell's profile as
/// `Tests/netem-qemu/compare.sh` writes it, each transfer as `tcpprobe` makes it, one seed per run. It prints
/// compare.sh's raw.csv rows (side `linkcond`), which `Tests/netem-qemu/model-grid.py` sets against the stored
/// real samples. No sockets and no clock, so a run's figures do not depend on the machine.
struct ModelGrid {
    /// One cell of the grid: payload rate, round trip and loss in each direction.
    struct Cell {
        var megabits: Double
        var roundTripMilliseconds: Double
        var lossPercent: Double

        /// The name compare.sh's rows give the cell (`10,200,0.5`).
        var columns: String { "\(Self.text(megabits)),\(Self.text(roundTripMilliseconds)),\(Self.text(lossPercent))" }

        /// The profile compare.sh gives linkcond for this cell, plus `extraLines`. Counting `frames`, the rate is
        /// the guest's netem rate (a full segment's 1514-byte frame at the cell's payload rate) and the queue holds
        /// the guest's 182 full frames.
        func profileText(accounting: RateAccounting, extraLines: [String]) -> String {
            let link =
                switch accounting {
                case .payload: ["bandwidth = \(Self.text(megabits)) Mbit/s", "queue = 262144 B"]
                case .frames:
                    [
                        "bandwidth = \(Int((megabits * 1e6 * 1514 / 1448).rounded())) bit/s",
                        "bandwidth.counts = frames",
                        "queue = \(182 * 1514) B",
                    ]
                }
            return
                (link + [
                    "delay = \(Self.text(roundTripMilliseconds / 2)) ms", "loss = \(Self.text(lossPercent)) %",
                ] + extraLines).joined(separator: "\n")
        }

        private static func text(_ value: Double) -> String {
            value == value.rounded() ? String(Int(value)) : String(value)
        }
    }

    static let defaultCells: [Cell] = [1, 10].flatMap { rate in
        [10, 50, 200].flatMap { rtt in
            [0, 0.5, 2].map { loss in Cell(megabits: rate, roundTripMilliseconds: rtt, lossPercent: loss) }
        }
    }

    /// tcpprobe's pause before the request after idle, and that request's size.
    static let idlePause = Duration.milliseconds(2000)
    static let idleBytes = 100_000
    /// The bulk download's length; rows for each, from the same stream, as stored runs used 10 s or 20 s.
    static let bulkSeconds = [10, 20]

    var runs = 10
    var cells = defaultCells
    var accounting = RateAccounting.payload
    var extraLines: [String] = []

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--runs":
                guard let text = iterator.next(), let value = Int(text), (1...10_000).contains(value) else {
                    throw TestError("--runs: expected a whole number from 1 to 10000")
                }
                runs = value
            case "--cells":
                cells = try Self.cells(iterator.next() ?? "")
            case "--frames":
                accounting = .frames
            case "--lines":
                extraLines = (iterator.next() ?? "").split(separator: ";").map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
            default:
                throw TestError(
                    "--model-grid: unknown option \(argument); expected --runs N, --cells LIST, --frames, --lines TEXT")
            }
        }
    }

    /// Cells from `10/200/0.5,1/10/0`: rate in Mbit/s, round trip in ms, loss in per cent.
    private static func cells(_ text: String) throws -> [Cell] {
        let cells = text.split(separator: ",").map { item -> Cell? in
            let parts = item.split(separator: "/").compactMap { Double($0) }
            guard parts.count == 3, parts[0] > 0, parts[1] >= 0, (0...100).contains(parts[2]) else { return nil }
            return Cell(megabits: parts[0], roundTripMilliseconds: parts[1], lossPercent: parts[2])
        }
        guard !cells.isEmpty, !cells.contains(where: { $0 == nil }) else {
            throw TestError("--cells: expected RATE/RTT/LOSS items separated by commas, e.g. 10/200/0.5,1/10/0")
        }
        return cells.compactMap { $0 }
    }

    /// Prints every run of every cell as raw.csv rows.
    func run() throws {
        print("side,rate_mbit,rtt_ms,loss_pct,metric,run,value")
        for cell in cells {
            let profile = try Profile(
                parsing: cell.profileText(accounting: accounting, extraLines: extraLines), name: "grid cell")
            for run in 1...runs {
                for (metric, value) in samples(profile: profile, seed: seed(cell, run)) {
                    print("linkcond,\(cell.columns),\(metric),\(run),\(String(format: "%.4f", value))")
                }
            }
        }
    }

    /// A seed per cell and run, different for every pair, the same from one invocation to the next.
    private func seed(_ cell: Cell, _ run: Int) -> UInt64 {
        var digest = StreamDigest()
        digest.add(Array("\(cell.columns)/\(run)".utf8))
        return digest.value
    }

    /// One run's transfers, each on its own connection as tcpprobe makes them: milliseconds from connect() to the
    /// last byte, from the request after idle to its last byte, and payload Mbit/s of the bulk download.
    private func samples(profile: Profile, seed: UInt64) -> [(String, Double)] {
        var samples: [(String, Double)] = []
        for (index, size) in [10_000, 100_000].enumerated() {
            let connection = VirtualConnection(profile: profile, seed: seed &+ UInt64(index) &* 16)
            if let last = connection.fetch(request: "\(size)\n".utf8.count, response: size, at: .zero) {
                samples.append(("fetch_\(size)", milliseconds(last - .zero)))
                samples += counters(of: connection).map { ("counter:fetch_\(size):\($0)", Double($1)) }
            }
        }
        let long = VirtualConnection(profile: profile, seed: seed &+ 32)
        if let last = long.fetch(request: "1000000\n".utf8.count, response: 1_000_000, at: .zero) {
            samples.append(("fetch_1000000", milliseconds(last - .zero)))
            let asked = last + Self.idlePause
            long.idle(until: asked)
            if let again = long.fetch(request: "\(Self.idleBytes)\n".utf8.count, response: Self.idleBytes, at: asked) {
                samples.append(("idle_\(Self.idleBytes)", milliseconds(again - asked)))
            }
            samples += counters(of: long).map { ("counter:fetch_1000000:\($0)", Double($1)) }
        }
        for seconds in Self.bulkSeconds {
            let bulk = VirtualConnection(profile: profile, seed: seed &+ 48)
            let bytes = bulk.stream(request: 2, at: .zero, until: .zero + .seconds(seconds))
            samples.append(("bulk_mbit_\(seconds)s", Double(bytes) * 8 / Double(seconds) / 1e6))
            samples += counters(of: bulk).map { ("counter:bulk_\(seconds)s:\($0)", Double($1)) }
        }
        return samples
    }

    private func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

    /// The server's sending figures, named as the kernel's `Tcp` and `TcpExt` counters compare-guest.sh records
    /// around the same fetch in the guest.
    private func counters(of connection: VirtualConnection) -> [(String, Int)] {
        let sender = connection.serverFlow.transport
        let sent = connection.downlink.counters.transmissions
        return [
            ("TCPOrigDataSent", sent - sender.retransmissions), ("RetransSegs", sender.retransmissions),
            ("TCPSackRecovery", sender.recoveries), ("TCPTimeouts", sender.timeouts),
            ("TCPLossProbes", sender.probes), ("segmentsLost", connection.downlink.counters.segmentsLost),
        ] + hystartCounters(sender.slowStartExit)
    }

    /// TcpExt's HyStart counters for one connection's exit.
    private func hystartCounters(_ exit: HyStartExit?) -> [(String, Int)] {
        let (train, delay): (Int?, Int?) =
            switch exit {
            case .ackTrain(let cwnd): (cwnd, nil)
            case .delay(let cwnd): (nil, cwnd)
            case nil: (nil, nil)
            }
        return [
            ("TCPHystartTrainDetect", train == nil ? 0 : 1), ("TCPHystartTrainCwnd", train ?? 0),
            ("TCPHystartDelayDetect", delay == nil ? 0 : 1), ("TCPHystartDelayCwnd", delay ?? 0),
        ]
    }
}
