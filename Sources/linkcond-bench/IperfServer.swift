import Foundation
import LoopbackPeers

/// An `iperf3 -s` on 127.0.0.1 for the throughput baseline, restarted for every measurement.
final class IperfServer {
    let path: String
    let port: UInt16
    private var process: Process?

    init(path: String) {
        self.path = path
        self.port = UInt16.random(in: 20000...39000)
        start()
    }

    private func start() {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-s", "-B", "127.0.0.1", "-p", String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
        self.process = process
        for _ in 0..<100 {
            if let probe = try? TestConnection.connect(port: port, timeout: 1) {
                probe.close()
                usleep(50_000)
                return
            }
            usleep(20_000)
        }
    }

    /// Runs `iperf3 -c` against `port` (the server itself, or a relay in front of it); payload bits per second
    /// received, or 0 when iperf3 failed.
    func measure(port target: UInt16, seconds: Double) -> Double {
        let client = Process()
        client.executableURL = URL(fileURLWithPath: path)
        client.arguments = ["-c", "127.0.0.1", "-p", String(target), "-t", String(Int(seconds.rounded(.up))), "-J"]
        let output = Pipe()
        client.standardOutput = output
        client.standardError = FileHandle.nullDevice
        guard (try? client.run()) != nil else { return 0 }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        client.waitUntilExit()
        guard let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let end = json["end"] as? [String: Any],
              let received = end["sum_received"] as? [String: Any],
              let bits = received["bits_per_second"] as? Double else { return 0 }
        return bits
    }

    func stop() {
        process?.terminate()
        process?.waitUntilExit()
    }
}
