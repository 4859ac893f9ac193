import Foundation
import LinkConditioner
import LoopbackPeers

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
    report.add(
        "linkcond none --record", recorded, "bit/s", versus: [("without", plain)],
        target: "≥ 0.9× without", met: recorded.flatMap { value in plain.map { value >= 0.9 * $0 } })
    report.add(
        "log written per second of transfer", logBytesPerSecond.sorted().dropFirst(logBytesPerSecond.count / 2).first,
        "B/s")
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
    report.add(
        "UDP 1200 B linkcond --record: delivered", recorded, "/s", versus: [("without", plain)],
        target: "≥ 0.9× without", met: recorded.flatMap { value in plain.map { value >= 0.9 * $0 } })
    report.add(
        "UDP log written per second", logBytesPerSecond.sorted().dropFirst(logBytesPerSecond.count / 2).first, "B/s")
}
