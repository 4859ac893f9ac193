import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What one client of the Toxiproxy API can make linkcond hold: proxies and toxics up to stated limits, and
/// answers it does not read up to a stated sum. Driven against the real binary.
@Suite(.serialized)
struct ToxiproxyBoundsTests {
    /// Proxy 257 and toxic 33 are refused with Toxiproxy's error naming the limit, and change nothing; so is a
    /// populate that would pass the limit.
    @Test func theProxyAndToxicLimitsAreRefusedAndChangeNothing() throws {
        let linkcond = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1:0"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let api = ToxiproxyClient(port: try linkcond.readReadyPort())
        let proxies = (0..<256).map {
            #"{"name":"p\#($0)","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}"#
        }
        #expect(try api.send("POST", "/populate", "[" + proxies.joined(separator: ",") + "]").status == 201)
        for index in 0..<32 {
            #expect(
                try api.send("POST", "/proxies/p0/toxics", #"{"name":"t\#(index)","type":"latency"}"#).status == 200)
        }

        let proxy = try api.send(
            "POST", "/proxies", #"{"name":"one-more","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#)
        let populate = try api.send(
            "POST", "/populate",
            #"[{"name":"p1","upstream":"127.0.0.1:9","enabled":false},{"name":"new","upstream":"127.0.0.1:9","enabled":false}]"#
        )
        let toxic = try api.send("POST", "/proxies/p0/toxics", #"{"name":"t32","type":"latency"}"#)

        #expect(proxy.status == 400)
        #expect(
            proxy.object?["error"] as? String
                == #"linkcond serves at most 256 proxies; delete one before creating "one-more""#, "\(proxy.text)")
        #expect(proxy.object?["status"] as? Int == 400)
        #expect(populate.status == 400)
        #expect((populate.object?["error"] as? String)?.contains("at most 256 proxies") == true, "\(populate.text)")
        #expect(toxic.status == 400)
        #expect(
            toxic.object?["error"] as? String
                == #"proxy "p0" has 32 toxics, the most linkcond keeps per proxy; delete one before adding "t32""#,
            "\(toxic.text)")
        let listing = try #require(
            try JSONSerialization.jsonObject(with: Data(try api.send("GET", "/proxies").text.utf8))
                as? [String: [String: Any]])
        #expect(listing.count == 256)
        #expect(listing["one-more"] == nil && listing["new"] == nil)
        #expect((listing["p0"]?["toxics"] as? [Any])?.count == 32)
    }

    /// Clients that ask for the listing of every proxy and never read it (each with more requests pipelined behind)
    /// leave linkcond's memory within a bound: the answers they hold are closed to make room once they pass 16 MiB
    /// together (24 unread listings of 3.5 MB held 84 MB before). Another client still gets the whole listing, byte for byte the one it got before.
    @Test func unreadListingsLeaveMemoryBoundedAndOthersServed() throws {
        let linkcond = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1:0"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let api = ToxiproxyClient(port: try linkcond.readReadyPort())
        // Names and addresses near their limits: 256 proxies of 32 toxics list about 3.5 MB.
        let wide = String(repeating: "w", count: 250)
        let address = String(repeating: "a", count: 300)
        let proxies = (0..<256).map {
            #"{"name":"\#(wide)\#($0)","listen":"\#(address)","upstream":"\#(address)","enabled":false}"#
        }
        #expect(try api.send("POST", "/populate", "[" + proxies.joined(separator: ",") + "]").status == 201)
        try concurrentlyForEach(Array(0..<256)) { proxy in
            for toxic in 0..<32 {
                let created = try api.send(
                    "POST", "/proxies/\(wide)\(proxy)/toxics", #"{"name":"\#(wide)\#(toxic)","type":"latency"}"#)
                guard created.status == 200 else {
                    throw TestError("toxic \(toxic) of proxy \(proxy): \(created.status) \(created.text)")
                }
            }
        }
        let before = try api.send("GET", "/proxies")
        #expect(before.status == 200 && before.text.utf8.count > 3_000_000, "\(before.text.utf8.count) bytes")
        let baseline = try residentBytes(of: linkcond.process.processIdentifier)

        let listing = api.request("GET", "/proxies")
        let unread = try (0..<24).map { _ in
            let connection = try TestConnection.connect(port: api.port, receiveBuffer: 4096)
            try connection.send(Array(repeating: listing, count: 4).flatMap { $0 })
            return connection
        }
        defer { for connection in unread { connection.close() } }
        // The API renders answers in the order it read their requests, so this one comes after every unread one.
        let after = try api.send("GET", "/proxies")
        let grown = try residentBytes(of: linkcond.process.processIdentifier) - baseline

        #expect(after.status == 200)
        #expect(after.text == before.text)
        #expect(linkcond.stderrText.contains("closing the one waiting longest to make room"), "\(linkcond.stderrText)")
        // 24 listings held are 84 MB; the bound holds five (18 MB), plus what rendering them leaves allocated, which
        // the allocator returns lazily: under two CPU hogs it grew by 41 MiB once. Two thirds of the unbounded
        // figure still tells the two apart. The address sanitizer keeps freed memory in quarantine, so its resident
        // size says nothing of the bound.
        if ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil {
            #expect(grown < 56 << 20, "resident memory grew by \(grown >> 20) MiB")
        }
    }
}

/// The resident set size of process `pid`, from `/proc/PID/status`.
func residentBytes(of pid: Int32) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else {
        throw TestError("no VmRSS in /proc/\(pid)/status")
    }
    return kilobytes << 10
}

/// Runs `body` for each element on four threads at once, and rethrows the first error.
func concurrentlyForEach<Element: Sendable>(_ elements: [Element], _ body: @escaping @Sendable (Element) throws -> Void)
    throws
{
    let failure = LockedBox<Error?>(nil)
    DispatchQueue.concurrentPerform(iterations: 4) { lane in
        for element in elements.enumerated().filter({ $0.offset % 4 == lane }).map(\.element) {
            do { try body(element) } catch {
                failure.mutate { $0 = $0 ?? error }
                return
            }
        }
    }
    if let error = failure.value { throw error }
}

extension TestConnection {
    /// Connects to 127.0.0.1:`port` with a receive buffer of `receiveBuffer` bytes, set before the handshake so the
    /// window it advertises stays that small: a client that reads nothing takes little of an answer into the kernel.
    static func connect(port: UInt16, receiveBuffer: Int32) throws -> TestConnection {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket: \(errno)") }
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw TestError("connect to port \(port): \(String(cString: strerror(errno)))")
        }
        return TestConnection(fd: fd)
    }
}
