import Foundation
import LinkConditioner
import LoopbackPeers

let iperfSeconds = quick ? 1 : 5

/// One unshaped TCP stream (iperf3): linkcond against direct, socat and HAProxy with and without splice.
func throughputGroup() throws {
    report.section("Unshaped TCP, one stream (iperf3, payload)")
    let port = freePort()
    let server = try startIperfServer(port: port)
    defer { server.stop() }
    func through(_ start: () throws -> (PeerProcess, UInt16)) -> Double? {
        medianOf {
            let (peer, relay) = try start()
            defer { peer.stop() }
            return try runIperfClient(port: relay, seconds: iperfSeconds).receivedRate
        }
    }
    let direct = medianOf { try runIperfClient(port: port, seconds: iperfSeconds).receivedRate }
    let socat = through { try startSocat(upstream: port) }
    let haproxy = through { try startHAProxy(upstream: port, splice: false) }
    let splice = through { try startHAProxy(upstream: port, splice: true) }
    let linkcond = through { let peer = try LinkcondPeer(profile: "", upstream: port); return (peer.peer, peer.relayPort) }
    report.add("direct", direct, "bit/s")
    report.add("socat", socat, "bit/s", versus: [("direct", direct)])
    report.add("haproxy", haproxy, "bit/s", versus: [("direct", direct)])
    report.add("haproxy splice-auto", splice, "bit/s", versus: [("direct", direct)])
    let met = linkcond.flatMap { value in splice.flatMap { s in direct.map { value >= 1.2 * s && value >= 0.8 * $0 } } }
    report.add("linkcond none", linkcond, "bit/s", versus: [("haproxy-splice", splice), ("direct", direct)],
               target: "≥1.2× splice, ≥0.8× direct", met: met)
    let exec = medianOf { try runIperfClient(port: port, seconds: iperfSeconds, inExec: true).receivedRate }
    report.add("iperf3 inside linkcond exec, none", exec, "bit/s", versus: [("direct", direct)])
}

/// Shaped TCP at 1 Gbit/s: delivered payload rate against the target and CPU per gigabyte, against HAProxy
/// relaying iperf3 paced at 1 Gbit/s (in its own 1 ms bursts, and in linkcond's 100 µs cadence) and the kernel's tbf
/// at 1 Gbit/s (frames) in a namespace.
func shapedGroup() throws {
    report.section("Shaped TCP at 1 Gbit/s, one stream (iperf3, payload; CPU from /proc/PID/stat)")
    let port = freePort()
    let server = try startIperfServer(port: port)
    defer { server.stop() }
    let seconds = quick ? 2 : 8
    /// Delivered rate, CPU seconds and sleeps (the relay's wake-ups) per gigabyte and, for linkcond, how late it
    /// wrote released bytes (p50 and p99 of its own status).
    func relayed(_ start: () throws -> (PeerProcess, UInt16, LinkcondPeer?), client extra: [String] = [])
        -> (rate: Double?, cpu: Double?, sleeps: Double?, lateness: (p50: Double?, p99: Double?)) {
        var rates: [Double] = [], cpus: [Double] = [], sleeps: [Double] = [], p50s: [Double] = [], p99s: [Double] = []
        for _ in 0..<runs {
            do {
                let (peer, relay, linkcond) = try start()
                defer { peer.stop() }
                let before = (cpu: peer.cpuSeconds(), sleeps: peer.sleeps())
                let result = try runIperfClient(port: relay, seconds: seconds, omit: 1, extra: extra)
                rates.append(result.receivedRate)
                cpus.append((peer.cpuSeconds() - before.cpu) / (result.sentBytes / 1e9))
                sleeps.append((peer.sleeps() - before.sleeps) / (result.sentBytes / 1e9))
                if let lateness = linkcond?.deliveryLateness("uplink") {
                    p50s.append(lateness.p50)
                    p99s.append(lateness.p99)
                }
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(rates), median(cpus), median(sleeps), (median(p50s), median(p99s)))
    }
    func haproxyPeer(splice: Bool) throws -> (PeerProcess, UInt16, LinkcondPeer?) {
        let (peer, port) = try startHAProxy(upstream: port, splice: splice)
        return (peer, port, nil)
    }
    let haproxy = relayed({ try haproxyPeer(splice: false) }, client: ["-b", "1G"])
    let splice = relayed({ try haproxyPeer(splice: true) }, client: ["-b", "1G"])
    // iperf3 `-b 1G` writes 128 KB blocks, so HAProxy wakes about once a millisecond; linkcond writes what its link
    // released at most 100 µs before. This row gives HAProxy that cadence (12.5 KB every 100 µs), for comparison only.
    let cadence = relayed({ try haproxyPeer(splice: false) }, client: ["-b", "1G", "-l", "12500", "--pacing-timer", "100"])
    report.add("haproxy, iperf3 -b 1G: rate", haproxy.rate, "bit/s")
    report.add("haproxy, iperf3 -b 1G: CPU", haproxy.cpu, "s/GB")
    report.add("haproxy splice: CPU", splice.cpu, "s/GB")
    report.add("haproxy, 12.5 KB every 100 µs: CPU", cadence.cpu, "s/GB", note: "linkcond's write cadence at 1 Gbit/s, as iperf3 keeps it")
    report.add("haproxy, iperf3 -b 1G: sleeps", haproxy.sleeps, "/GB")
    report.add("haproxy, 12.5 KB every 100 µs: sleeps", cadence.sleeps, "/GB",
               note: "80 000/GB if iperf3 kept its 100 µs timer and each block woke HAProxy")
    // With 10 ms each way the path holds 2.5 MB; a queue of at least that lets the emulated CUBIC fill it, as a
    // real sender would. The default 256 KiB queue is a tenth of it: the emulated sender then overshoots at the end
    // of slow start, cuts its window and regrows it over seconds, as Linux's CUBIC does on such a link, so that row
    // reports TCP's own ramp rather than the shaper's accuracy.
    let rows = [("rate", "bandwidth = 1 Gbit/s", true),
                ("rate + 10 ms, 4 MiB queue", "bandwidth = 1 Gbit/s\ndelay = 10 ms\nqueue = 4 MiB", true),
                ("rate + 10 ms, default queue", "bandwidth = 1 Gbit/s\ndelay = 10 ms", false)]
    for (label, profile, shaperAccuracy) in rows {
        let shaped = relayed({ let peer = try LinkcondPeer(profile: profile, upstream: port); return (peer.peer, peer.relayPort, peer) })
        let error = shaped.rate.map { ($0 / 1e9 - 1) * 100 }
        let delivered = shaped.rate.map { Report.format($0, "bit/s") + " delivered" }
        if shaperAccuracy {
            report.add("linkcond \(label): rate error", error, "%", target: "within ±0.5 %", met: error.map { abs($0) <= 0.5 },
                       note: delivered)
        } else {
            report.add("linkcond \(label): rate error", error, "%",
                       note: delivered.map { $0 + "; 256 KiB is a tenth of the path: TCP's own sawtooth, not the shaper" })
        }
        report.add("linkcond \(label): CPU", shaped.cpu, "s/GB", versus: [("haproxy", haproxy.cpu), ("haproxy-splice", splice.cpu), ("haproxy at 100 µs", cadence.cpu)],
                   target: "≤ haproxy", met: shaped.cpu.flatMap { value in haproxy.cpu.map { value <= $0 } })
        report.add("linkcond \(label): sleeps", shaped.sleeps, "/GB", versus: [("haproxy", haproxy.sleeps), ("haproxy at 100 µs", cadence.sleeps)])
        report.add("linkcond \(label): write lateness p50", shaped.lateness.p50, "s",
                   note: "after the model released the bytes (status, uplink)")
        report.add("linkcond \(label): write lateness p99", shaped.lateness.p99, "s")
    }
    measuring("kernel tbf rate 1gbit: rate error") {
        let link = try TbfLink(rate: "1gbit")
        defer { link.remove() }
        let tbfPort = freePort()
        let tbfServer = try startIperfServer(port: tbfPort, host: TbfLink.receiverAddress, namespace: link.receiver)
        defer { tbfServer.stop() }
        let rate = medianOf { try runIperfClient(host: TbfLink.receiverAddress, port: tbfPort, seconds: seconds, omit: 1,
                                                 namespace: link.sender).receivedRate }
        report.add("kernel tbf 1gbit: payload error", rate.map { ($0 / 1e9 - 1) * 100 }, "%",
                   note: "tbf counts frames: payload is 1448/1514 of them, −4.4 %")
    }
}

/// 100 concurrent streams: aggregate throughput unshaped (vs HAProxy) and Jain fairness under one shared 1 Gbit/s,
/// with a FIFO (against tbf's) and with fq_codel.
func streamsGroup() throws {
    report.section("100 concurrent TCP streams (iperf3 -P 100, payload)")
    let port = freePort()
    let server = try startIperfServer(port: port)
    defer { server.stop() }
    let seconds = quick ? 2 : 6
    func run(_ start: () throws -> (PeerProcess, UInt16)) -> (rate: Double?, jain: Double?) {
        var rates: [Double] = [], jains: [Double] = []
        for _ in 0..<runs {
            do {
                let (peer, relay) = try start()
                defer { peer.stop() }
                let result = try runIperfClient(port: relay, seconds: seconds, omit: 1, extra: ["-P", "100"])
                rates.append(result.receivedRate)
                jains.append(jainFairness(result.streamRates))
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(rates), median(jains))
    }
    let direct = medianOf { try runIperfClient(port: port, seconds: seconds, omit: 1, extra: ["-P", "100"]).receivedRate }
    let haproxy = run { try startHAProxy(upstream: port, splice: true) }
    let unshaped = run { let peer = try LinkcondPeer(profile: "", upstream: port); return (peer.peer, peer.relayPort) }
    let shared = run { let peer = try LinkcondPeer(profile: "bandwidth = 1 Gbit/s", upstream: port); return (peer.peer, peer.relayPort) }
    let fair = run {
        let peer = try LinkcondPeer(profile: "bandwidth = 1 Gbit/s\nqueue.discipline = fq_codel", upstream: port)
        return (peer.peer, peer.relayPort)
    }
    report.add("direct: aggregate", direct, "bit/s")
    report.add("haproxy splice: aggregate", haproxy.rate, "bit/s", versus: [("direct", direct)])
    report.add("linkcond none: aggregate", unshaped.rate, "bit/s", versus: [("haproxy-splice", haproxy.rate), ("direct", direct)],
               target: "≥1× haproxy", met: unshaped.rate.flatMap { value in haproxy.rate.map { value >= $0 } })
    report.add("linkcond shared 1 Gbit/s: aggregate", shared.rate, "bit/s")
    // A drop-tail FIFO shares a link as unevenly as TCP does through one (compare tbf's row); fq_codel's
    // round robin shares it exactly, so that row carries the exact-sharing target.
    report.add("linkcond shared 1 Gbit/s fifo: Jain", shared.jain, "", note: "TCP's own sharing through a FIFO: compare tbf")
    report.add("linkcond shared 1 Gbit/s fq_codel: aggregate", fair.rate, "bit/s")
    report.add("linkcond shared 1 Gbit/s fq_codel: Jain", fair.jain, "", target: "≥ 0.99", met: fair.jain.map { $0 >= 0.99 })
    measuring("kernel tbf 1gbit, 100 streams: Jain") {
        let link = try TbfLink(rate: "1gbit")
        defer { link.remove() }
        let tbfPort = freePort()
        let tbfServer = try startIperfServer(port: tbfPort, host: TbfLink.receiverAddress, namespace: link.receiver)
        defer { tbfServer.stop() }
        let result = try runIperfClient(host: TbfLink.receiverAddress, port: tbfPort, seconds: seconds, omit: 1,
                                        extra: ["-P", "100"], namespace: link.sender)
        report.add("kernel tbf 1gbit: aggregate", result.receivedRate, "bit/s")
        report.add("kernel tbf 1gbit: Jain", jainFairness(result.streamRates), "")
    }
}

/// 64-byte TCP ping-pong round trip with sockperf, paced: linkcond under none against socat and HAProxy.
func latencyGroup() throws {
    report.section("64-byte ping-pong round trip (sockperf pp --full-rtt, paced 10 000 msg/s)")
    let port = freePort()
    let server = try startSockperfServer(port: port)
    defer { server.stop() }
    let seconds = quick ? 1 : 5
    func sample(_ start: () throws -> (PeerProcess, UInt16)?) -> (p50: Double?, p99: Double?) {
        var p50s: [Double] = [], p99s: [Double] = []
        for _ in 0..<runs {
            do {
                let started = try start()
                defer { started?.0.stop() }
                let result = try sockperfPingPong(port: started?.1 ?? port, seconds: seconds, rate: 10_000)
                p50s.append(result.p50)
                p99s.append(result.p99)
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(p50s), median(p99s))
    }
    let direct = sample { nil }
    let socat = sample { try startSocat(upstream: port) }
    let haproxy = sample { try startHAProxy(upstream: port, splice: false) }
    let linkcond = sample { let peer = try LinkcondPeer(profile: "", upstream: port); return (peer.peer, peer.relayPort) }
    report.add("direct p50", direct.p50, "s")
    report.add("direct p99", direct.p99, "s")
    for (name, figures) in [("socat", socat), ("haproxy", haproxy)] {
        report.add("\(name) p50", figures.p50, "s", versus: [("direct", direct.p50)])
        report.add("\(name) p99", figures.p99, "s", versus: [("direct", direct.p99)])
    }
    report.add("linkcond none p50", linkcond.p50, "s", versus: [("socat", socat.p50), ("direct", direct.p50)],
               target: "≤ socat", met: linkcond.p50.flatMap { value in socat.p50.map { value <= $0 } })
    report.add("linkcond none p99", linkcond.p99, "s", versus: [("socat", socat.p99), ("direct", direct.p99)],
               target: "≤ socat", met: linkcond.p99.flatMap { value in socat.p99.map { value <= $0 } })
    var execP50s: [Double] = [], execP99s: [Double] = []
    for _ in 0..<runs {
        do {
            let result = try sockperfPingPong(port: port, seconds: seconds, rate: 10_000, inExec: true)
            execP50s.append(result.p50)
            execP99s.append(result.p99)
        } catch { print("   (a run failed: \(error))") }
    }
    report.add("sockperf inside linkcond exec p50", median(execP50s), "s", versus: [("direct", direct.p50)])
    report.add("sockperf inside linkcond exec p99", median(execP99s), "s", versus: [("direct", direct.p99)])
    let added = linkcond.p50.flatMap { value in direct.p50.map { value - $0 } }
    report.add("linkcond none added p50", added, "s", target: "≤ 15 µs", met: added.map { $0 <= 15e-6 })
}

/// A p50 in whole microseconds for a note, or "—".
private func microseconds(_ seconds: Double?) -> String { seconds.map { String(Int(($0 * 1e6).rounded())) } ?? "—" }

/// Connection set-up through each front end against a direct connect, and short connections per second with 1000
/// open at once against HAProxy.
func setupGroup() throws {
    report.section("Connection set-up, connect until one byte echoed (p50), and short connections")
    let samples = quick ? 200 : 1000
    let echo = try TestServer.echo()
    defer { echo.stop() }
    let linkcond = try LinkcondPeer(profile: "", upstream: echo.port, proxyFrontEnd: true)
    defer { linkcond.stop() }
    let socks: [UInt8] = [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(echo.port >> 8), UInt8(echo.port & 0xFF)]
    let connect = Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n".utf8)
    let connectReply = "HTTP/1.1 200 Connection established\r\n\r\n".utf8.count
    // Direct is the floor every other row is judged against, so it is measured twice, before and after the relays,
    // and the lower p50 is kept: a busy machine can slow one pass of it (p50s of 2-4 ms were seen) and must not
    // turn the verdicts into passes.
    let directFirst = medianOf { quantile(try setupTimes(port: echo.port, samples: samples), 0.5) }
    var relays: [(name: String, p50: Double?)] = []
    for (name, start) in [("socat", { try startSocat(upstream: echo.port) }),
                          ("haproxy", { try startHAProxy(upstream: echo.port, splice: false) })] as [(String, () throws -> (PeerProcess, UInt16))] {
        measuring(name) {
            let (peer, port) = try start()
            defer { peer.stop() }
            let p50 = medianOf { quantile(try setupTimes(port: port, samples: samples), 0.5) }
            relays.append((name, p50))
        }
    }
    let directSecond = medianOf { quantile(try setupTimes(port: echo.port, samples: samples), 0.5) }
    let direct = [directFirst, directSecond].compactMap { $0 }.min()
    report.add("direct", direct, "s", note: "lower of two passes: \(microseconds(directFirst)) and \(microseconds(directSecond)) µs")
    for relay in relays { report.add(relay.name, relay.p50, "s", versus: [("direct", direct)]) }
    let paths: [(String, UInt16, (TestConnection) throws -> Void)] = [
        ("TCP relay", linkcond.relayPort, { _ in }),
        ("SOCKS5", linkcond.proxyPort!, { try $0.send(socks); _ = try $0.receive(exactly: 12) }),
        ("HTTP CONNECT", linkcond.proxyPort!, { try $0.send(connect); _ = try $0.receive(exactly: connectReply) }),
    ]
    for (name, port, handshake) in paths {
        let p50 = medianOf { quantile(try setupTimes(port: port, samples: samples, handshake: handshake), 0.5) }
        report.add("linkcond \(name)", p50, "s", versus: [("direct", direct)] + relays.map { ($0.name, $0.p50) }, target: "≤ direct + 40 µs",
                   met: p50.flatMap { value in direct.map { value <= $0 + 40e-6 } })
    }
    let closing = try ClosingServer()
    defer { closing.stop() }
    let seconds = quick ? 1.0 : 3.0
    func churn(_ port: UInt16) -> Double? {
        medianOf {
            let result = shortConnections(port: port, concurrency: 1000, seconds: seconds)
            if result.failures > 0 { print("   (\(result.failures) connections failed)") }
            return result.rate
        }
    }
    let churnDirect = churn(closing.port)
    var churnHAProxy: Double?
    measuring("1000 concurrent short: haproxy") {
        let (haproxyPeer, haproxyPort) = try startHAProxy(upstream: closing.port, splice: false)
        defer { haproxyPeer.stop() }
        churnHAProxy = churn(haproxyPort)
    }
    var churnHAProxyOneThread: Double?
    measuring("1000 concurrent short: haproxy, 1 thread") {
        let (haproxyPeer, haproxyPort) = try startHAProxy(upstream: closing.port, splice: false, threads: 1)
        defer { haproxyPeer.stop() }
        churnHAProxyOneThread = churn(haproxyPort)
    }
    let churnRelay = try LinkcondPeer(profile: "", upstream: closing.port)
    let churnLinkcond = churn(churnRelay.relayPort)
    churnRelay.stop()
    report.add("1000 concurrent short: direct", churnDirect, "/s")
    report.add("1000 concurrent short: haproxy", churnHAProxy, "/s", versus: [("direct", churnDirect)])
    report.add("1000 concurrent short: haproxy, 1 thread", churnHAProxyOneThread, "/s", versus: [("direct", churnDirect)])
    report.add("1000 concurrent short: linkcond", churnLinkcond, "/s",
               versus: [("haproxy", churnHAProxy), ("haproxy-1-thread", churnHAProxyOneThread), ("direct", churnDirect)],
               target: "≥1× haproxy", met: churnLinkcond.flatMap { value in churnHAProxy.map { value >= $0 } })
}

/// Idle connections held open through a relay: resident memory and descriptors each, linkcond against HAProxy.
/// Each client sends one byte first, so its direction has moved data (as a kept-alive connection has), then waits.
func scaleGroup() throws {
    // The 10 000 in a full run. This process holds both ends of every connection, and a relay two
    // descriptors each, so the limit (inherited by the relays) must hold twice the count and some to spare.
    let wanted = quick ? 1000 : 10_000
    let limit = raiseDescriptorLimit(toAtLeast: 2 * wanted + 1024)
    let count = min(wanted, (limit - 2048) / 2)
    report.section("Idle connections held open, each after sending one byte (RSS and descriptors per connection)")
    report.add("connections held open", Double(count), "", target: "10 000 (full run)", met: quick ? nil : count >= 10_000,
               note: count < wanted ? "descriptor limit \(limit)" : nil)
    let server = try HoldingServer()
    defer { server.stop() }
    let relays: [(String, () throws -> (PeerProcess, UInt16))] = [
        ("haproxy", { try startHAProxy(upstream: server.port, splice: true, maxConnections: count + 32,
                                           maxPipes: 256) }),
        ("linkcond none", { let peer = try LinkcondPeer(profile: "", upstream: server.port); return (peer.peer, peer.relayPort) }),
    ]
    for (name, start) in relays {
        measuring(name) {
            let (peer, port) = try start()
            defer { peer.stop() }
            defer { server.release() }
            // One connection first, so what the relay makes once (buffers, the first pipe) is not counted.
            let first = try TestConnection.connect(port: port, timeout: 10)
            try first.send([0x2A])
            guard waitUntil(seconds: 10, { server.received.value == 1 }) else { throw TestError("the first byte did not arrive") }
            first.close()
            server.release()
            usleep(200_000)
            let rssBefore = peer.residentBytes(), descriptorsBefore = peer.descriptorCount()
            var clients: [TestConnection] = []
            defer { clients.forEach { $0.close() } }
            for _ in 0..<count {
                let client = try TestConnection.connect(port: port, timeout: 10)
                clients.append(client)
                try client.send([0x2A])
            }
            guard waitUntil(seconds: 60, { server.received.value == count }) else {
                throw TestError("only \(server.received.value) of \(count) bytes reached the upstream")
            }
            let rss = peer.residentBytes().flatMap { after in rssBefore.map { (after - $0) / Double(count) } }
            let descriptors = Double(peer.descriptorCount() - descriptorsBefore) / Double(count)
            report.add("\(name): RSS per idle connection", rss, "B",
                       target: name == "haproxy" ? nil : "≤ 8 KiB", met: name == "haproxy" ? nil : rss.map { $0 <= 8192 })
            report.add("\(name): descriptors per idle connection", descriptors, "")
        }
    }
}

/// UDP through the relay under `none` with iperf3 -u offered at the targets: datagrams delivered per second
/// and loss, against direct. iperf3 paces to within a few datagrams of the offered rate, so the rate target is met
/// at 99.9 % of it, the loss target's complement. iperf3 asks 4 MB socket buffers (`-w`, as linkcond's relay
/// sockets have), so the loss counted is the relay's, not that of iperf3's default 208 KiB receive buffer, which
/// loses even direct on a busy machine.
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
        func run(inExec: Bool = false, _ target: () throws -> (LinkcondPeer?, UInt16)) -> (rate: Double?, loss: Double?, atRelay: Double?) {
            var rates: [Double] = [], losses: [Double] = [], atRelay: [Double] = []
            for _ in 0..<runs {
                do {
                    let (linkcond, relay) = try target()
                    defer { linkcond?.stop() }
                    let result = try runIperfClient(port: relay, seconds: seconds, extra: extra, inExec: inExec)
                    rates.append((result.datagrams - result.lostDatagrams) / max(result.seconds, 0.001))
                    losses.append(result.datagrams > 0 ? result.lostDatagrams / result.datagrams * 100 : .nan)
                    if let drops = linkcond?.udpKernelDrops(), result.datagrams > 0 { atRelay.append(drops / result.datagrams * 100) }
                } catch { print("   (a run failed: \(error))") }
            }
            return (median(rates), median(losses), median(atRelay))
        }
        let direct = run { (nil, port) }
        let linkcond = run { let peer = try LinkcondPeer(profile: "", upstream: port, udp: true); return (peer, peer.relayPort) }
        report.add("\(size) B direct: delivered", direct.rate, "/s", note: direct.loss.map { String(format: "loss %.3f %%", $0) })
        report.add("\(size) B linkcond: delivered", linkcond.rate, "/s", versus: [("direct", direct.rate)],
                   target: "≥ 99.9 % of \(perSecond / 1000) k/s", met: linkcond.rate.map { $0 >= 0.999 * Double(perSecond) })
        report.add("\(size) B linkcond: loss", linkcond.loss, "%", versus: [("direct", direct.loss)], target: "< 0.1 %",
                   met: linkcond.loss.map { $0 < 0.1 })
        report.add("\(size) B linkcond: of it at linkcond", linkcond.atRelay, "%", target: "< 0.1 %",
                   met: linkcond.atRelay.map { $0 < 0.1 },
                   note: "kernel drops at linkcond's sockets; the rest is lost at iperf3's receiver")
        let exec = run(inExec: true) { (nil, port) }
        report.add("\(size) B inside linkcond exec: delivered", exec.rate, "/s", versus: [("direct", direct.rate)],
                   note: exec.loss.map { String(format: "loss %.3f %%; every datagram crosses two TUN devices", $0) })
    }
    floodedDatagrams(size: 64, perSecond: 200_000, seconds: Double(seconds))
    floodedDatagrams(size: 64, perSecond: 500_000, seconds: Double(seconds), headroom: true)
}

/// The 64-byte target again with the bench's own `sendmmsg` sender, since iperf3's falls short of 200 k/s even
/// direct: delivered per second and loss, direct against through linkcond under none. With `headroom` the rate is
/// beyond the target, to show how far the relay is from its ceiling, and no verdict is given.
private func floodedDatagrams(size: Int, perSecond: Int, seconds: Double, headroom: Bool = false) {
    func run(_ target: (UInt16) throws -> (LinkcondPeer?, UInt16))
        -> (rate: Double?, loss: Double?, atRelay: Double?, cpuPerDatagram: Double?) {
        var rates: [Double] = [], losses: [Double] = [], atRelay: [Double] = [], cpu: [Double] = []
        for _ in 0..<runs {
            do {
                let sink = try DatagramSink(capacity: Int(Double(perSecond) * seconds) + 1)
                defer { sink.stop() }
                let (linkcond, port) = try target(sink.port)
                defer { linkcond?.stop() }
                let cpuBefore = linkcond?.peer.cpuSeconds()
                let result = try DatagramFlood.run(to: port, sink: sink, size: size, perSecond: perSecond, seconds: seconds)
                rates.append(result.deliveredRate)
                losses.append(result.lossPercent)
                if let drops = linkcond?.udpKernelDrops(), result.sent > 0 { atRelay.append(drops / Double(result.sent) * 100) }
                if let cpuBefore, let after = linkcond?.peer.cpuSeconds(), result.sent > 0 {
                    cpu.append((after - cpuBefore) / Double(result.sent))
                }
            } catch { print("   (a run failed: \(error))") }
        }
        return (median(rates), median(losses), median(atRelay), median(cpu))
    }
    let direct = run { (nil, $0) }
    let linkcond = run { let peer = try LinkcondPeer(profile: "", upstream: $0, udp: true); return (peer, peer.relayPort) }
    let label = "\(size) B at \(perSecond / 1000) k/s, sendmmsg"
    report.add("\(label) direct: delivered", direct.rate, "/s", note: direct.loss.map { String(format: "loss %.3f %%", $0) })
    report.add("\(label) linkcond: delivered", linkcond.rate, "/s", versus: [("direct", direct.rate)],
               target: headroom ? nil : "≥ 99.9 % of \(perSecond / 1000) k/s",
               met: headroom ? nil : linkcond.rate.map { $0 >= 0.999 * Double(perSecond) })
    report.add("\(label) linkcond: loss", linkcond.loss, "%", versus: [("direct", direct.loss)], target: headroom ? nil : "< 0.1 %",
               met: headroom ? nil : linkcond.loss.map { $0 < 0.1 })
    report.add("\(label) linkcond: of it at linkcond", linkcond.atRelay, "%", note: "kernel drops at linkcond's sockets")
    report.add("\(label) linkcond: CPU per datagram", linkcond.cpuPerDatagram, "s", note: "user + system, from /proc")
}

/// Uplink delay asked against the added round trip, from 1 ms to 10 s: p99 of (round trip − delay − linkcond's own
/// round trip under none, measured right before with the messages as far apart).
///
/// The round trip under none is measured before each run of a cell, with its spacing. With messages 10 or 20 ms
/// apart every process on the path (linkcond, the echo server, this bench) wakes from a longer sleep than 2 ms apart,
/// which on the 2-vCPU VM made the unshaped round trip 15–55 µs longer; and on a shared machine that round trip
/// drifts by more than the target within a minute (73 to 295 µs in one series). A single figure taken at the start
/// with 2 ms spacing counted both as delay error.
///
/// The cells run twice: as linkcond runs by default, and with `run --realtime` and the echo server's threads in
/// SCHED_FIFO too (when this process may use it), so a busy machine's late wake-ups of either are out of the error.
func delayGroup() throws {
    report.section("Delay precision: round trip − asked delay − round trip under none just before, as far apart")
    let echo = try TestServer.echo()
    defer { echo.stop() }
    try delayCells(echoPort: echo.port, realtime: false)
    guard let realtimeEcho = realtimeEchoServer() else {
        report.skip("--realtime: 1 ms: error p99", because: "this process may not use SCHED_FIFO (needs root or CAP_SYS_NICE)")
        return
    }
    defer { realtimeEcho.stop() }
    try delayCells(echoPort: realtimeEcho.port, realtime: true)
}

/// An echo server whose threads run in SCHED_FIFO: started from a thread that entered it and passes it on; nil when
/// the kernel refuses.
private func realtimeEchoServer() -> TestServer? {
    let result = LockedBox<TestServer?>(nil)
    let started = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        defer { started.signal() }
        guard (try? RealtimeScheduling.enterFIFO(priority: 1, passedOn: true)) != nil else { return }
        result.mutate { $0 = try? TestServer.echo() }
    }
    started.wait()
    return result.value
}

/// One row per delay from 1 ms to 10 s, through linkcond (with `--realtime` when `realtime`) to the echo server.
private func delayCells(echoPort: UInt16, realtime: Bool) throws {
    let label = realtime ? "--realtime: " : ""
    // 200 samples a cell, so p99 is a p99 (two samples lie above it) rather than the single worst sample; the
    // samples are staggered and in flight together, so a 10 s cell takes 4 s of sends plus its delay.
    var cells: [(Int, Int, Double)] = [(1, 200, 0.003), (10, 200, 0.003), (100, 200, 0.003), (1000, 200, 0.01)]
    if !quick { cells.append((10_000, 200, 0.02)) }
    let none = try LinkcondPeer(profile: "", upstream: echoPort, realtime: realtime)
    defer { none.stop() }
    var baselines: [Double: [Double]] = [:]
    for (milliseconds, samples, gap) in cells {
        let asked = Double(milliseconds) / 1000
        var p99s: [Double] = [], p50s: [Double] = [], minimums: [Double] = [], maximums: [Double] = []
        var ownP99s: [Double] = [], ownMaximums: [Double] = []
        for _ in 0..<(milliseconds >= 10_000 ? 1 : runs) {
            do {
                let baseline = quantile(try staggeredRoundTrips(port: none.relayPort, samples: samples, gap: gap, timeout: 5), 0.5)
                baselines[gap, default: []].append(baseline)
                let delayed = try LinkcondPeer(profile: "uplink.delay = \(milliseconds) ms", upstream: echoPort, realtime: realtime)
                defer { delayed.stop() }
                let errors = try staggeredRoundTrips(port: delayed.relayPort, samples: samples, gap: gap, timeout: 2 * asked + 10)
                    .map { $0 - asked - baseline }
                p50s.append(quantile(errors, 0.5))
                p99s.append(quantile(errors, 0.99))
                if let own = delayed.deliveryLateness("uplink") {
                    ownP99s.append(own.p99)
                    ownMaximums.append(own.max)
                }
                minimums.append(errors.first ?? .nan)
                maximums.append(errors.last ?? .nan)
            } catch { print("   (a run failed: \(error))") }
        }
        let p99 = median(p99s)
        report.add("\(label)\(milliseconds) ms: error p99", p99, "s", target: "≤ 0.1 ms", met: p99.map { $0 <= 1e-4 },
                   note: median(p50s).map {
                       "p50 " + Report.format($0, "s") + ", min " + Report.format(median(minimums) ?? .nan, "s")
                           + ", max " + Report.format(median(maximums) ?? .nan, "s")
                   })
        report.add("\(label)\(milliseconds) ms: linkcond's own lateness p99", median(ownP99s), "s",
                   note: median(ownMaximums).map { "max " + Report.format($0, "s") + "; released bytes written after their release" })
    }
    if quick { report.skip("\(label)10000 ms: error p99", because: "left out of --quick (one cell takes about 20 s)") }
    for gap in baselines.keys.sorted() {
        report.add("\(label)round trip under none p50, \(Int(gap * 1000)) ms apart", median(baselines[gap] ?? []), "s",
                   note: "median of the \(baselines[gap]?.count ?? 0) figures subtracted")
    }
}

/// Downlink rate asked against payload delivered, 64 kbit/s to 1 Gbit/s, timed from the first byte.
func rateGroup() throws {
    report.section("Rate precision: payload delivered vs asked, downlink, from the first segment")
    for (label, bits) in [("64 kbit/s", 64e3), ("1 Mbit/s", 1e6), ("10 Mbit/s", 10e6), ("100 Mbit/s", 100e6), ("1 Gbit/s", 1e9)] {
        let seconds = quick ? (bits < 1e5 ? 3.0 : 1.5) : 5.0
        let error = medianOf {
            let size = Int(bits / 8 * seconds)
            let source = try TestServer { connection in
                defer { connection.close() }
                try? Payload(size: size, seed: 9).forEachBlock(blockSize: 65536) { try connection.send($0) }
                connection.shutdownWrite()
            }
            defer { source.stop() }
            let shaped = try LinkcondPeer(profile: "downlink.bandwidth = \(label)", upstream: source.port)
            defer { shaped.stop() }
            let client = try TestConnection.connect(port: shaped.relayPort, timeout: 60)
            defer { client.close() }
            // The clock starts at the first read, which takes the whole first segment (released at once, as on
            // a link that delivers whole packets); only the bytes after it count, or at 64 kbit/s one 1448-byte
            // segment in 24 KB would read as +6 %.
            let first = try client.receive(max: 1 << 20)
            let start = MonotonicClock().now()
            let rest = try client.drain()
            guard first.count + rest.count == size else { throw TestError("\(first.count + rest.count) of \(size) bytes arrived") }
            return (Double(rest.count) * 8 / secondsSince(start) / bits - 1) * 100
        }
        report.add("\(label): error", error, "%", target: "within ±0.5 %", met: error.map { abs($0) <= 0.5 })
    }
}

/// What `run --record` costs: one unshaped iperf3 stream through linkcond with and without recording, alternated
/// in the same run, and how many bytes of log a second of that transfer writes.
func recordingGroup() throws {
    report.section("Recording (run --record), one unshaped TCP stream (iperf3, payload)")
    let port = freePort()
    let server = try startIperfServer(port: port)
    defer { server.stop() }
    var logBytesPerSecond: [Double] = []
    func through(record: Bool) -> Double? {
        medianOf {
            let path = scratch + "/bench-record-\(UInt32.random(in: 0...UInt32.max)).jsonl"
            let peer = try LinkcondPeer(profile: "", upstream: port, record: record ? path : nil)
            let rate = try runIperfClient(port: peer.relayPort, seconds: iperfSeconds).receivedRate
            peer.stop()
            if record {
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                logBytesPerSecond.append(Double(size) / Double(iperfSeconds))
                try? FileManager.default.removeItem(atPath: path)
            }
            return rate
        }
    }
    let plain = through(record: false)
    let recorded = through(record: true)
    report.add("linkcond none", plain, "bit/s")
    report.add("linkcond none --record", recorded, "bit/s", versus: [("without", plain)],
               target: "≥ 0.9× without", met: recorded.flatMap { value in plain.map { value >= 0.9 * $0 } })
    report.add("log written per second of transfer", logBytesPerSecond.sorted().dropFirst(logBytesPerSecond.count / 2).first, "B/s")
    try recordedDatagrams(port: port)
}

/// What `run --record` costs the UDP relay, which records every datagram's read and delivery (coalesced per 20 ms):
/// 1200-byte datagrams offered at 100 000 a second, delivered per second with and without recording.
private func recordedDatagrams(port: UInt16) throws {
    let seconds = quick ? 1 : 5
    let extra = ["-u", "-l", "1200", "-b", String(1200 * 8 * 100_000)]
    var logBytesPerSecond: [Double] = []
    func delivered(record: Bool) -> Double? {
        medianOf {
            let path = scratch + "/bench-record-udp-\(UInt32.random(in: 0...UInt32.max)).jsonl"
            let peer = try LinkcondPeer(profile: "", upstream: port, udp: true, record: record ? path : nil)
            let result: IperfResult
            do {
                result = try runIperfClient(port: peer.relayPort, seconds: seconds, extra: extra)
            } catch {
                peer.stop()
                throw error
            }
            peer.stop()
            if record {
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                logBytesPerSecond.append(Double(size) / Double(seconds))
                try? FileManager.default.removeItem(atPath: path)
            }
            return (result.datagrams - result.lostDatagrams) / max(result.seconds, 0.001)
        }
    }
    let plain = delivered(record: false)
    let recorded = delivered(record: true)
    report.add("UDP 1200 B linkcond: delivered", plain, "/s")
    report.add("UDP 1200 B linkcond --record: delivered", recorded, "/s", versus: [("without", plain)],
               target: "≥ 0.9× without", met: recorded.flatMap { value in plain.map { value >= 0.9 * $0 } })
    report.add("UDP log written per second", logBytesPerSecond.sorted().dropFirst(logBytesPerSecond.count / 2).first, "B/s")
}
