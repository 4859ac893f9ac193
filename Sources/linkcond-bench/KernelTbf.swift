import Foundation
import LoopbackPeers

/// Two network namespaces joined by a veth pair on 198.18.0.0/30, the sender's side shaped by the kernel's tbf: the
/// reference for shaped rates. Removed by `remove()` and, on failure or a signal, by the benchmark's clean-up.
final class TbfLink {
    let sender: String
    let receiver: String
    static let receiverAddress = "198.18.0.2"
    private var cleanupID = 0

    /// Creates the namespaces and shapes the sender's egress with `tbf rate RATE` (frames, as tc counts).
    init(rate: String) throws {
        guard Tools.ip != nil, Tools.tc != nil else {
            throw TestError("ip and tc (iproute2) are needed for the tbf reference")
        }
        sender = "lcbench-\(getpid())-a"
        receiver = "lcbench-\(getpid())-b"
        let (sender, receiver) = (self.sender, self.receiver)
        cleanupID = BenchCleanup.shared.add { TbfLink.delete(sender, receiver) }
        let commands: [[String]] = [
            ["netns", "add", sender], ["netns", "add", receiver],
            [
                "link", "add", "lcb\(getpid())a", "netns", sender, "type", "veth", "peer", "name", "lcb\(getpid())b",
                "netns", receiver,
            ],
            ["-n", sender, "addr", "add", "198.18.0.1/30", "dev", "lcb\(getpid())a"],
            ["-n", receiver, "addr", "add", "\(TbfLink.receiverAddress)/30", "dev", "lcb\(getpid())b"],
            ["-n", sender, "link", "set", "lcb\(getpid())a", "up"],
            ["-n", receiver, "link", "set", "lcb\(getpid())b", "up"],
            ["-n", sender, "link", "set", "lo", "up"], ["-n", receiver, "link", "set", "lo", "up"],
        ]
        for arguments in commands { try TbfLink.run(Tools.ip!, arguments) }
        try TbfLink.run(
            Tools.tc!,
            [
                "-n", sender, "qdisc", "add", "dev", "lcb\(getpid())a", "root", "tbf", "rate", rate,
                "burst", "256kb", "latency", "20ms",
            ])
    }

    func remove() {
        BenchCleanup.shared.remove(cleanupID)
        TbfLink.delete(sender, receiver)
    }

    private static func delete(_ sender: String, _ receiver: String) {
        try? run(Tools.ip!, ["netns", "delete", sender])
        try? run(Tools.ip!, ["netns", "delete", receiver])
    }

    private static func run(_ path: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestError(
                "\(path) \(arguments.joined(separator: " ")) failed (root and network namespaces are needed)")
        }
    }
}
