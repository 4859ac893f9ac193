import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers

/// A minimal authoritative DNS server on 127.0.0.1 for tests: answers every A query with `address`, over UDP
/// and over TCP (pipelined frames too) on the same port.
final class DNSTestServer: @unchecked Sendable {
    let port: UInt16
    let address: [UInt8]
    private let udp: TestDatagramSocket
    private let tcp: TestServer
    private let stopped = LockedBox(false)
    private let done = DispatchSemaphore(value: 0)
    /// When the last query reached the server, over either transport, on the monotonic clock.
    let lastQueryAt = LockedBox<Instant?>(nil)

    init(address: [UInt8] = [192, 0, 2, 53]) throws {
        self.address = address
        let lastQueryAt = self.lastQueryAt
        let tcp = try TestServer { connection in
            defer { connection.close() }
            while let header = try? connection.receive(exactly: 2) {
                let length = Int(header[0]) << 8 | Int(header[1])
                guard let query = try? connection.receive(exactly: length),
                    let answer = DNSTestServer.answer(to: query, address: address)
                else { return }
                lastQueryAt.value = MonotonicClock().now()
                try? connection.send([UInt8(answer.count >> 8), UInt8(answer.count & 0xFF)] + answer)
            }
        }
        self.tcp = tcp
        self.port = tcp.port
        do {
            udp = try TestDatagramSocket(port: tcp.port, timeout: 0.05)
        } catch {
            tcp.stop()
            throw error
        }
        let udp = self.udp
        let stopped = self.stopped
        let done = self.done
        Thread.detachNewThread {
            while !stopped.value {
                guard let (query, from) = udp.receive() else { continue }
                lastQueryAt.value = MonotonicClock().now()
                if let answer = DNSTestServer.answer(to: query, address: address) { try? udp.send(answer, to: from) }
            }
            done.signal()
        }
    }

    /// The answer to one query: its ID and question, one A record (TTL 60) for the queried name; nil for a
    /// message that is not a query with one question.
    static func answer(to query: [UInt8], address: [UInt8]) -> [UInt8]? {
        guard query.count >= 12, query[2] & 0x80 == 0, query[4] == 0, query[5] == 1 else { return nil }
        var end = 12
        while end < query.count, query[end] != 0 { end += Int(query[end]) + 1 }
        end += 5
        guard end <= query.count else { return nil }
        var answer = Array(query[0..<2]) + [0x85, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]
        answer += query[12..<end]
        answer += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
        return answer
    }

    func stop() {
        stopped.value = true
        done.wait()
        udp.close()
        tcp.stop()
    }
}

/// The outcome of one `dig` run: its answer section, the query time it measured itself, and when it was started.
struct DigResult {
    var answers: [String]
    var queryTime: Duration
    /// Just before the process started: no query of this run can have left before it.
    var launchedAt: Instant
}

enum Dig {
    static let path = ["/usr/bin/dig", "/bin/dig", "/usr/local/bin/dig"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs `dig @127.0.0.1 -p port name A` with one try and a timeout of `seconds`; `tcp` adds +tcp.
    static func query(_ name: String, port: UInt16, tcp: Bool = false, seconds: Int = 3) throws -> DigResult {
        guard let path else { throw TestError("dig is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments =
            ["@127.0.0.1", "-p", "\(port)", name, "A", "+tries=1", "+time=\(seconds)", "+noall", "+answer", "+stats"]
            + (tcp ? ["+tcp"] : [])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        let launchedAt = MonotonicClock().now()
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        let answers = lines.filter { !$0.hasPrefix(";") && !$0.isEmpty }
        guard let timeLine = lines.first(where: { $0.contains("Query time:") }),
            let milliseconds = timeLine.split(separator: " ").compactMap({ Int($0) }).first
        else {
            throw TestError("dig gave no query time: \(text)")
        }
        return DigResult(answers: answers, queryTime: .milliseconds(milliseconds), launchedAt: launchedAt)
    }
}
