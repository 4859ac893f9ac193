import CLinuxShims
import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A stopped proxy leaves nothing it opened behind. Every check counts only what the proxy under test owns: its
/// loop threads by kernel id, its loops' own descriptors through a duplicate kept as a witness, its splice pipes
/// through its pools, its sockets by inode. So other tests may start and stop proxies meanwhile.
@Suite struct ProxyStopLeakTests {
    @Test func stopLeavesNoDescriptorOrThreadBehindAcrossAHundredCycles() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        var options = ProxyOptions()
        options.threads = 2
        var threadNamesSeen: Set<[String]> = []
        var socketsSeenWhileRunning: [Int] = []
        var onSpliceLoopsSeen: [Int] = []
        var pipesOpened = 0
        var leaks: [String] = []

        for cycle in 0..<100 {
            let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: options)
            let owned = proxy.ownedResources()
            threadNamesSeen.insert(owned.threadIDs.map(threadName))
            let witnesses = try owned.loopDescriptors.map(witness)
            defer { for descriptor in witnesses { close(descriptor) } }
            var sockets = proxySockets(port: proxy.port, upstreamPort: echo.port)
            if cycle % 10 == 0 {
                let client = try TestConnection.connect(port: proxy.port)
                // Enough to be handed to the splice loop, which then holds the connection when the proxy stops.
                let block = [UInt8](repeating: 1, count: 256 << 10)
                try client.send(block)
                _ = try client.receive(exactly: block.count)
                _ = waitUntil(seconds: 10) { proxy.status()[0].connectionsOnSpliceLoops == 1 }
                onSpliceLoopsSeen.append(proxy.status()[0].connectionsOnSpliceLoops)
                // The listener, the accepted client and the upstream socket: proof that the census sees them.
                sockets = proxySockets(port: proxy.port, upstreamPort: echo.port)
                socketsSeenWhileRunning.append(sockets.count)
                proxy.stop()
                client.close()
            } else {
                proxy.stop()
            }

            let open = Set(descriptorTargets())
            leaks += sockets.filter { open.contains($0) }.map { "cycle \(cycle): \($0) still open" }
            leaks += try zip(owned.loopDescriptors, witnesses).filter { try isOpenElsewhere(witness: $0.1) }
                .map { "cycle \(cycle): loop descriptor \($0.0) still open" }
            pipesOpened += owned.pipePools.reduce(0) { $0 + $1.pipesOpened }
            if owned.pipesOpen != 0 { leaks.append("cycle \(cycle): \(owned.pipesOpen) splice pipes still open") }
            // A loop thread may still be exiting when stop returns.
            if !waitUntil(seconds: 5, { owned.threadIDs.allSatisfy { !threadExists($0) } }) {
                leaks.append("cycle \(cycle): loop threads \(owned.threadIDs.filter(threadExists)) still running")
            }
        }

        #expect(threadNamesSeen == [["linkcond-loop", "linkcond-splice"]], "loop threads seen while running")
        #expect(
            socketsSeenWhileRunning.allSatisfy { $0 == 3 },
            "proxy sockets seen while running: \(socketsSeenWhileRunning)")
        #expect(
            onSpliceLoopsSeen.allSatisfy { $0 == 1 }, "connections on the splice loop before stop: \(onSpliceLoopsSeen)"
        )
        #expect(pipesOpened > 0, "the connections were spliced through pipes the pools opened")
        #expect(leaks.isEmpty, "\(leaks.prefix(10))")
    }
}

/// A duplicate of `descriptor`, which keeps its open file alive so that a later check can tell whether anything
/// else in this process still refers to it.
private func witness(_ descriptor: Int32) throws -> Int32 {
    let duplicate = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
    guard duplicate >= 0 else { throw SystemError("dup of descriptor \(descriptor)", Errno(rawValue: errno)) }
    return duplicate
}

/// Whether a descriptor of this process other than `witness` refers to the witness's open file (kcmp). Descriptors
/// other threads close meanwhile are skipped.
private func isOpenElsewhere(witness: Int32) throws -> Bool {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for descriptor in names.compactMap({ Int32($0) }) where descriptor != witness {
        switch clinux_same_open_file(descriptor, witness) {
        case 1: return true
        case 0: continue
        default:
            if errno == EBADF { continue }
            throw SystemError("kcmp KCMP_FILE", Errno(rawValue: errno))
        }
    }
    return false
}

/// The name of this process's thread `id`, from /proc; "" once it ended.
private func threadName(_ id: Int32) -> String {
    let comm = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)
    return comm?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
}

private func threadExists(_ id: Int32) -> Bool {
    FileManager.default.fileExists(atPath: "/proc/self/task/\(id)")
}

/// This process's TCP sockets that belong to the proxy on `port`, as /proc/self/fd names them ("socket:[INODE]"):
/// bound to `port` (its listener and accepted clients) or connected to `upstreamPort` (its upstream connections).
/// Socket inodes are never reused while a test runs, so a name seen here and open after `stop` is this proxy's.
private func proxySockets(port: UInt16, upstreamPort: UInt16) -> [String] {
    let open = Set(descriptorTargets())
    var found: [String] = []
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        // Read to the end: the table is generated as it is read and is longer than one page.
        guard let data = FileHandle(forReadingAtPath: table)?.readDataToEndOfFile() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, open.contains("socket:[\(fields[9])]"),
                let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) })
            else { continue }
            if local == port || remote == upstreamPort { found.append("socket:[\(fields[9])]") }
        }
    }
    return found
}

/// What each open descriptor of this process refers to ("socket:[1234]", "anon_inode:[eventpoll]", a path).
private func descriptorTargets() -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}
