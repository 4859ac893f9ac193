import Foundation
import LinkConditioner
import LoopbackPeers

/// UDP through the relay under `none` with iperf3 -u offered at the targets: datagrams delivered per second
/// and loss, against direct. iperf3 paces to within a few datagrams of the offered rate, so the rate target is met
/// at 99.9 % of it, the loss target's complement. iperf3 asks 4 MB socket buffers (`-w`, as linkcond's relay
/// sockets have), so the loss counted is the relay's, not that of iperf3's default 208 KiB receive buffer, which
/// loses even direct on a busy machine; the default-buffer rows at the end measure that buffer on purpose.
func udpGroup() throws {
    report.section("UDP datagrams through the relay under none (iperf3 -u at the target rate)")
    let port = freePort()
    let server = try startIperfServer(port: port)
    defer { server.stop() }
    let seconds = quick ? 1 : 5
    for (size, perSecond) in [(1200, 100_000), (64, 200_000)] {
        let extra = ["-u", "-l", String(size), "-b", String(size * 8 * perSecond), "-w", "4M"]
        /// Delivered per second, loss counted by the receiver, and (through linkcond) the part of it linkcond's
        /// sockets dropped, in percent of datagrams sent. With `inExec` the client runs inside `linkcond exec`.
        func run(inExec: Bool = false, _ target: () throws -> (LinkcondPeer?, UInt16)) -> (
            rate: Double?, loss: Double?, atRelay: Double?
        ) {
            var rates: [Double] = []
            var losses: [Double] = []
            var atRelay: [Double] = []
            for _ in 0..<runs {
                do {
                    let (linkcond, relay) = try target()
                    defer { linkcond?.stop() }
                    let result = try runIperfClient(port: relay, seconds: seconds, extra: extra, inExec: inExec)
                    rates.append((result.datagrams - result.lostDatagrams) / max(result.seconds, 0.001))
                    losses.append(result.datagrams > 0 ? result.lostDatagrams / result.datagrams * 100 : .nan)
                    if let drops = linkcond?.udpKernelDrops(), result.datagrams > 0 {
                        atRelay.append(drops / result.datagrams * 100)
                    }
                } catch { print("   (a run failed: \(error))") }
            }
            return (median(rates), median(losses), median(atRelay))
        }
        let direct = run { (nil, port) }
        let linkcond = run {
            let peer = try LinkcondPeer(profile: "", upstream: port, udp: true)
            return (peer, peer.relayPort)
        }
        report.add(
            "\(size) B direct: delivered", direct.rate, "/s",
            note: direct.loss.map { String(format: "loss %.3f %%", $0) })
        report.add(
            "\(size) B linkcond: delivered", linkcond.rate, "/s", versus: [("direct", direct.rate)],
            target: "≥ 99.9 % of \(perSecond / 1000) k/s", met: linkcond.rate.map { $0 >= 0.999 * Double(perSecond) })
        report.add(
            "\(size) B linkcond: loss", linkcond.loss, "%", versus: [("direct", direct.loss)], target: "< 0.1 %",
            met: linkcond.loss.map { $0 < 0.1 })
        report.add(
            "\(size) B linkcond: of it at linkcond", linkcond.atRelay, "%", target: "< 0.1 %",
            met: linkcond.atRelay.map { $0 < 0.1 },
            note: "kernel drops at linkcond's sockets; the rest is lost at iperf3's receiver")
        let exec = run(inExec: true) { (nil, port) }
        report.add(
            "\(size) B inside linkcond exec: delivered", exec.rate, "/s", versus: [("direct", direct.rate)],
            note: exec.loss.map { String(format: "loss %.3f %%; every datagram crosses two TUN devices", $0) })
    }
    floodedDatagrams(size: 64, perSecond: 200_000, seconds: Double(seconds))
    floodedDatagrams(size: 64, perSecond: 500_000, seconds: Double(seconds), headroom: true)
    for megabits in [1000, 300] {
        try defaultBufferLoss(megabits: megabits, port: port, seconds: seconds)
    }
}

/// iperf3 -u at `megabits` offered, 1200-byte datagrams, to its server with the default socket buffers (208 KiB
/// here), as most applications keep them: loss direct and through linkcond under none. Such a receiver drops what
/// comes faster than it reads, so a relay that sent a backlog read after a stall in one burst would lose far more
/// than direct; the target is within 1 point of direct. Runs alternate direct and linkcond, so load that comes
/// and goes on the machine falls on both.
private func defaultBufferLoss(megabits: Int, port: UInt16, seconds: Int) throws {
    let extra = ["-u", "-l", "1200", "-b", "\(megabits)M"]
    var direct: [Double] = []
    var linkcond: [Double] = []
    var atRelay: [Double] = []
    for _ in 0..<runs {
        do {
            let result = try runIperfClient(port: port, seconds: seconds, extra: extra)
            if result.datagrams > 0 { direct.append(result.lostDatagrams / result.datagrams * 100) }
        } catch { print("   (a run failed: \(error))") }
        do {
            let peer = try LinkcondPeer(profile: "", upstream: port, udp: true)
            defer { peer.stop() }
            let result = try runIperfClient(port: peer.relayPort, seconds: seconds, extra: extra)
            if result.datagrams > 0 {
                linkcond.append(result.lostDatagrams / result.datagrams * 100)
                if let drops = peer.udpKernelDrops() { atRelay.append(drops / result.datagrams * 100) }
            }
        } catch { print("   (a run failed: \(error))") }
    }
    let label = "1200 B at \(megabits) Mbit/s, default buffers"
    let directLoss = median(direct)
    let linkcondLoss = median(linkcond)
    report.add("\(label) direct: loss", directLoss, "%", note: "lost at iperf3's receiver")
    report.add(
        "\(label) linkcond: loss", linkcondLoss, "%", versus: [("direct", directLoss)],
        target: "within 1 point of direct",
        met: linkcondLoss.flatMap { loss in directLoss.map { loss <= $0 + 1 } })
    report.add(
        "\(label) linkcond: of it at linkcond", median(atRelay), "%",
        note: "kernel drops at linkcond's sockets; the rest is lost at iperf3's receiver")
}

/// The 64-byte target again with the bench's own `sendmmsg` sender, since iperf3's falls short of 200 k/s even
/// direct: delivered per second and loss, direct against through linkcond under none. With `headroom` the rate is
/// beyond the target, to show how far the relay is from its ceiling, and no verdict is given.
private func floodedDatagrams(size: Int, perSecond: Int, seconds: Double, headroom: Bool = false) {
    func run(_ target: (UInt16) throws -> (LinkcondPeer?, UInt16))
        -> (rate: Double?, loss: Double?, atRelay: Double?, cpuPerDatagram: Double?)
    {
        var rates: [Double] = []
        var losses: [Double] = []
        var atRelay: [Double] = []
        var cpu: [Double] = []
        for _ in 0..<runs {
            do {
                let sink = try DatagramSink(capacity: Int(Double(perSecond) * seconds) + 1)
                defer { sink.stop() }
                let (linkcond, port) = try target(sink.port)
                defer { linkcond?.stop() }
                let cpuBefore = linkcond?.peer.cpuSeconds()
                let result = try DatagramFlood.run(
                    to: port, sink: sink, size: size, perSecond: perSecond, seconds: seconds)
                rates.append(result.deliveredRate)
                losses.append(result.lossPercent)
                if let drops = linkcond?.udpKernelDrops(), result.sent > 0 {
                    atRelay.append(drops / Double(result.sent) * 100)
                }
                if let cpuBefore, let after = linkcond?.peer.cpuSeconds(), result.sent > 0 {
                    cpu.append((after - cpuBefore) / Double(result.sent))
                }
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(rates), median(losses), median(atRelay), median(cpu))
    }
    let direct = run { (nil, $0) }
    let linkcond = run {
        let peer = try LinkcondPeer(profile: "", upstream: $0, udp: true)
        return (peer, peer.relayPort)
    }
    let label = "\(size) B at \(perSecond / 1000) k/s, sendmmsg"
    report.add(
        "\(label) direct: delivered", direct.rate, "/s", note: direct.loss.map { String(format: "loss %.3f %%", $0) })
    report.add(
        "\(label) linkcond: delivered", linkcond.rate, "/s", versus: [("direct", direct.rate)],
        target: headroom ? nil : "≥ 99.9 % of \(perSecond / 1000) k/s",
        met: headroom ? nil : linkcond.rate.map { $0 >= 0.999 * Double(perSecond) })
    report.add(
        "\(label) linkcond: loss", linkcond.loss, "%", versus: [("direct", direct.loss)],
        target: headroom ? nil : "< 0.1 %",
        met: headroom ? nil : linkcond.loss.map { $0 < 0.1 })
    report.add(
        "\(label) linkcond: of it at linkcond", linkcond.atRelay, "%", note: "kernel drops at linkcond's sockets")
    report.add("\(label) linkcond: CPU per datagram", linkcond.cpuPerDatagram, "s", note: "user + system, from /proc")
}
