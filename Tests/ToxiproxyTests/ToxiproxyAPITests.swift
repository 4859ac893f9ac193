import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The Toxiproxy API as its client libraries call it: routes, JSON shapes, status codes and error shapes.
@Suite(.serialized)
struct ToxiproxyAPITests {
    @Test func createdProxyAnswers201WithTheBoundPortAndNoToxics() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send(
            "POST", "/proxies", #"{"name":"redis","listen":"127.0.0.1:0","upstream":"127.0.0.1:6379"}"#)

        let proxy = try #require(json as? [String: Any])
        #expect(status == 201)
        #expect(proxy.string("name") == "redis")
        #expect(proxy.string("upstream") == "127.0.0.1:6379")
        #expect(proxy["enabled"] as? Bool == true)
        #expect((proxy["toxics"] as? [Any])?.isEmpty == true)
        let listen = try #require(proxy.string("listen"))
        #expect(listen.hasPrefix("127.0.0.1:") && listen != "127.0.0.1:0")
    }

    @Test func proxiesAreListedByName() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("one", upstreamPort: 9)
        _ = try api.createProxy("two", upstreamPort: 9)

        let (status, json) = try api.send("GET", "/proxies", as: .node)

        let proxies = try #require(json as? [String: [String: Any]])
        #expect(status == 200)
        #expect(Set(proxies.keys) == ["one", "two"])
        #expect(proxies["two"]?.string("name") == "two")
    }

    @Test func aSecondProxyWithTheSameNameIsAConflictAndChangesNothing() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("db", upstreamPort: 5432)

        let (status, json) = try api.send("POST", "/proxies", #"{"name":"db","upstream":"127.0.0.1:1"}"#)

        #expect(status == 409)
        #expect(errorShape(json) == ErrorShape(error: "proxy already exists", status: 409))
        let (_, shown) = try api.send("GET", "/proxies/db")
        #expect((shown as? [String: Any])?.string("upstream") == "127.0.0.1:5432")
    }

    @Test(arguments: [
        (#"{"name":"x""#, "bad request body"),
        (#"{"upstream":"127.0.0.1:1"}"#, "missing required field: name"),
        (#"{"name":"x"}"#, "missing required field: upstream"),
        (#"{"name":"x","upstream":"127.0.0.1:1","enabled":"yes"}"#, "bad request body"),
        (#"{"name":"x","upstream":"no port here"}"#, "bad request body"),
    ])
    func badProxyBodiesAre400AndCreateNothing(_ body: String, _ message: String) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send("POST", "/proxies", body)

        #expect(status == 400)
        let error = try #require(json as? [String: Any])
        #expect(error.string("error")?.hasPrefix(message) == true, "\(error)")
        #expect(error["status"] as? Int == 400)
        #expect((try api.send("GET", "/proxies").json as? [String: Any])?.isEmpty == true)
    }

    @Test func aListenAddressInUseIs500WithTheReason() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let taken = try api.createProxy("first", upstreamPort: 9)

        let (status, json) = try api.send(
            "POST", "/proxies", #"{"name":"second","listen":"127.0.0.1:\#(taken)","upstream":"127.0.0.1:9"}"#)

        #expect(status == 500)
        #expect((json as? [String: Any])?.string("error")?.contains("in use") == true, "\(String(describing: json))")
        #expect(try api.send("GET", "/proxies/second").status == 404)
    }

    @Test func javaStyleOneFieldUpdatesMergeOntoTheProxy() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("svc", upstreamPort: 9)

        let disabled = try api.send("POST", "/proxies/svc", #"{"enabled":false}"#, as: .java)
        let refused = Result { try TestConnection.connect(port: port, timeout: 2).receive(max: 1) }
        let enabled = try api.send("PATCH", "/proxies/svc", #"{"enabled":true}"#, as: .go)

        #expect(disabled.status == 200)
        #expect((disabled.json as? [String: Any])?["enabled"] as? Bool == false)
        #expect((disabled.json as? [String: Any])?.string("upstream") == "127.0.0.1:9")
        #expect(throws: (any Error).self) { try refused.get() }
        #expect((enabled.json as? [String: Any])?["enabled"] as? Bool == true)
        #expect((enabled.json as? [String: Any])?.string("listen") == "127.0.0.1:\(port)")
    }

    @Test func aNewUpstreamTakesEffectForNewConnections() throws {
        let first = try TestServer { connection in try? connection.send(Array("first".utf8)) }
        let second = try TestServer { connection in try? connection.send(Array("second".utf8)) }
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            first.stop()
            second.stop()
        }
        let port = try api.createProxy("moving", upstreamPort: first.port)

        let (status, _) = try api.send(
            "PATCH", "/proxies/moving", #"{"upstream":"127.0.0.1:\#(second.port)"}"#, as: .node)
        let client = try TestConnection.connect(port: port)
        defer { client.close() }

        #expect(status == 200)
        #expect(try client.receive(exactly: 6) == Array("second".utf8))
    }

    @Test func aNewUpstreamKeepsTheListeningSocketSoItsAddressIsNeverFree() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("moving", upstreamPort: 9)
        let before = try #require(listeningSocketInode(port: port))

        let (status, _) = try api.send("PATCH", "/proxies/moving", #"{"upstream":"127.0.0.1:7"}"#)

        #expect(status == 200)
        #expect(listeningSocketInode(port: port) == before)
    }

    @Test func toxicsGetToxiproxyDefaultsAndAreListedUpstreamFirst() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("p", upstreamPort: 9)

        let created = try api.send("POST", "/proxies/p/toxics", #"{"type":"latency","attributes":{"latency":100}}"#)
        _ = try api.send(
            "POST", "/proxies/p/toxics", #"{"type":"limit_data","stream":"upstream","attributes":{"bytes":10}}"#)
        let listed = try api.send("GET", "/proxies/p/toxics", as: .java)

        #expect(created.status == 200)
        let toxic = try #require(created.json as? [String: Any])
        #expect(toxic.string("name") == "latency_downstream")
        #expect(toxic.string("stream") == "downstream")
        #expect(toxic["toxicity"] as? Double == 1)
        #expect(toxic["attributes"] as? [String: Int] == ["latency": 100, "jitter": 0])
        let names = (listed.json as? [[String: Any]])?.compactMap { $0.string("name") }
        #expect(names == ["limit_data_upstream", "latency_downstream"])
    }

    @Test func javaStyleToxicUpdatesMergeOneAttribute() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("p", upstreamPort: 9)
        _ = try api.send(
            "POST", "/proxies/p/toxics",
            #"{"name":"lag","type":"latency","stream":"upstream","toxicity":1.0,"attributes":{"latency":100}}"#,
            as: .java)

        let updated = try api.send("POST", "/proxies/p/toxics/lag", #"{"attributes":{"jitter":20}}"#, as: .java)
        let patched = try api.send("PATCH", "/proxies/p/toxics/lag", #"{"toxicity":0.5}"#, as: .go)

        #expect(updated.status == 200)
        #expect((updated.json as? [String: Any])?["attributes"] as? [String: Int] == ["latency": 100, "jitter": 20])
        #expect((patched.json as? [String: Any])?["toxicity"] as? Double == 0.5)
        #expect((patched.json as? [String: Any])?["attributes"] as? [String: Int] == ["latency": 100, "jitter": 20])
    }

    @Test(arguments: [
        (#"{"type":"teleport"}"#, 400, "invalid toxic type"),
        (#"{"type":"latency","stream":"sideways"}"#, 400, "stream was invalid, can be either upstream or downstream"),
        (#"{"type":"latency","attributes":{"latency":-1}}"#, 400, "bad request body"),
        (#"{"type":"latency","attributes":{"latency":1e30}}"#, 400, "bad request body"),
        (#"{"type":"bandwidth","attributes":{"rate":"fast"}}"#, 400, "bad request body"),
        (#"{"type":"slicer","attributes":{"average_size":10,"size_variation":10}}"#, 400, "bad request body"),
        (#"{"type":"latency","toxicity":1.5}"#, 400, "bad request body"),
        (#"[1,2"#, 400, "bad request body"),
        (#"{"type":"timeout","name":"taken"}"#, 409, "toxic already exists"),
    ])
    func badToxicsGetToxiproxysErrorAndChangeNothing(_ body: String, _ status: Int, _ message: String) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("p", upstreamPort: 9)
        _ = try api.send("POST", "/proxies/p/toxics", #"{"type":"latency","name":"taken","attributes":{"latency":5}}"#)

        let answer = try api.send("POST", "/proxies/p/toxics", body, as: .node)

        #expect(answer.status == status)
        let error = try #require(answer.json as? [String: Any])
        #expect(error.string("error")?.hasPrefix(message) == true, "\(error)")
        #expect(error["status"] as? Int == status)
        let listed = try api.send("GET", "/proxies/p/toxics").json as? [[String: Any]]
        #expect(listed?.count == 1)
        #expect(listed?.first?["attributes"] as? [String: Int] == ["latency": 5, "jitter": 0])
    }

    @Test func unknownProxiesAndToxicsAre404() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("p", upstreamPort: 9)

        let noProxy = try api.send("GET", "/proxies/nope/toxics")
        let noToxic = try api.send("DELETE", "/proxies/p/toxics/nope")
        let deleteNoProxy = try api.send("DELETE", "/proxies/nope")

        #expect(errorShape(noProxy.json) == ErrorShape(error: "proxy not found", status: 404))
        #expect(errorShape(noToxic.json) == ErrorShape(error: "toxic not found", status: 404))
        #expect(deleteNoProxy.status == 404)
    }

    @Test func populateCreatesReplacesChangedAndLeavesOthersAlone() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let keptPort = try api.createProxy("kept", upstreamPort: 9)
        _ = try api.createProxy("changed", upstreamPort: 9)
        _ = try api.createProxy("untouched", upstreamPort: 9)
        _ = try api.send("POST", "/proxies/kept/toxics", #"{"type":"latency"}"#)

        let (status, json) = try api.send(
            "POST", "/populate",
            """
            [{"name":"kept","listen":"127.0.0.1:\(keptPort)","upstream":"127.0.0.1:9"},
             {"name":"changed","listen":"127.0.0.1:0","upstream":"127.0.0.1:10"},
             {"name":"new","upstream":"127.0.0.1:11","enabled":false}]
            """)

        #expect(status == 201)
        let populated = try #require((json as? [String: Any])?["proxies"] as? [[String: Any]])
        #expect(populated.compactMap { $0.string("name") } == ["kept", "changed", "new"])
        #expect((populated[0]["toxics"] as? [Any])?.count == 1)
        #expect(populated[1].string("upstream") == "127.0.0.1:10")
        #expect(populated[2]["enabled"] as? Bool == false)
        let all = try #require(try api.send("GET", "/proxies").json as? [String: Any])
        #expect(Set(all.keys) == ["kept", "changed", "untouched", "new"])
    }

    @Test func populateWithOneBadProxyChangesNothing() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send("POST", "/populate", #"[{"name":"a","upstream":"127.0.0.1:1"},{"name":"b"}]"#)

        #expect(status == 400)
        #expect((json as? [String: Any])?.string("error") == "missing required field: upstream at proxy 2")
        #expect((try api.send("GET", "/proxies").json as? [String: Any])?.isEmpty == true)
    }

    @Test func resetEnablesEveryProxyAndRemovesEveryToxic() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.createProxy("p", upstreamPort: 9)
        _ = try api.send("POST", "/proxies/p/toxics", #"{"type":"timeout"}"#)
        _ = try api.send("POST", "/proxies/p", #"{"enabled":false}"#)

        let reset = try api.send("POST", "/reset")
        let shown = try #require(try api.send("GET", "/proxies/p").json as? [String: Any])

        #expect(reset.status == 204)
        #expect(shown["enabled"] as? Bool == true)
        #expect((shown["toxics"] as? [Any])?.isEmpty == true)
    }

    /// A disabled proxy whose listen host resolves beyond loopback refuses the whole reset: no proxy is enabled
    /// and every toxic stays. `0` is a name to the creation check (not an IP address as written) and 0.0.0.0 to
    /// the resolver (glibc reads it as inet_aton does), so no DNS is involved.
    @Test func aResetRefusedForAListenerBeyondLoopbackChangesNothing() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        _ = try api.send(
            "POST", "/proxies", #"{"name":"kept","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}"#)
        _ = try api.send("POST", "/proxies/kept/toxics", #"{"name":"slow","type":"latency"}"#)
        let created = try api.send(
            "POST", "/proxies", #"{"name":"open","listen":"0:0","upstream":"127.0.0.1:9","enabled":false}"#)

        let (status, json) = try api.send("POST", "/reset")
        let all = try #require(try api.send("GET", "/proxies").json as? [String: [String: Any]])

        #expect(created.status == 201, "\(String(describing: created.json))")
        #expect(status == 400)
        #expect(
            errorShape(json)?.error?.hasPrefix(#"proxy "open": listen "0:0" (0.0.0.0:0) is not a loopback address"#)
                == true, "\(String(describing: json))")
        #expect(all["kept"]?["enabled"] as? Bool == false)
        #expect((all["kept"]?["toxics"] as? [[String: Any]])?.map { $0["name"] as? String } == ["slow"])
        #expect(all["open"]?["enabled"] as? Bool == false)
        #expect(api.proxy.status().isEmpty)
    }

    /// A listen address taken since its proxy was disabled is found only by binding: the proxies the reset already
    /// enabled are disabled again, with the listen address they had, and every toxic stays.
    @Test func aResetThatCannotBindUndoesWhatItEnabled() throws {
        let holder = try TestServer.echo()
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            holder.stop()
        }
        _ = try api.send(
            "POST", "/proxies", #"{"name":"first","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}"#)
        _ = try api.send("POST", "/proxies/first/toxics", #"{"name":"slow","type":"latency"}"#)
        _ = try api.send(
            "POST", "/proxies",
            #"{"name":"taken","listen":"127.0.0.1:\#(holder.port)","upstream":"127.0.0.1:9","enabled":false}"#)

        let (status, json) = try api.send("POST", "/reset")
        let all = try #require(try api.send("GET", "/proxies").json as? [String: [String: Any]])

        #expect(status == 500)
        #expect(errorShape(json)?.error?.contains("in use") == true, "\(String(describing: json))")
        #expect(all["first"]?["enabled"] as? Bool == false)
        #expect(all["first"]?.string("listen") == "127.0.0.1:0")
        #expect((all["first"]?["toxics"] as? [[String: Any]])?.map { $0["name"] as? String } == ["slow"])
        #expect(all["taken"]?["enabled"] as? Bool == false)
        #expect(api.proxy.status().isEmpty)
    }

    @Test func deletedProxyStopsListening() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("gone", upstreamPort: 9)

        let deleted = try api.send("DELETE", "/proxies/gone")

        #expect(deleted.status == 204)
        #expect(throws: (any Error).self) { try TestConnection.connect(port: port, timeout: 2).receive(max: 1) }
        #expect(api.proxy.status().isEmpty)
    }

    @Test func aToxiproxyProxyIsAListenerTheProfileAndStatusSee() throws {
        let echo = try TestServer.echo()
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            echo.stop()
        }
        let port = try api.createProxy("seen", upstreamPort: echo.port)

        api.proxy.apply(Profile.builtIn(named: "edge")!)
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        let start = MonotonicClock().now()
        try client.send([1])
        _ = try client.receive(exactly: 1)

        #expect(secondsSince(start) >= 0.8, "edge's 400 + 440 ms apply beneath the toxics")
        #expect(api.proxy.status().map(\.address.port) == [port])
        #expect(api.proxy.status().map(\.toxiproxy) == ["seen"])
    }

    @Test(arguments: [
        (ToxiproxyUnderTest.Client.go, ["Origin: http://evil.example"]),
        (ToxiproxyUnderTest.Client.go, ["Sec-Fetch-Site: cross-site"]),
        (ToxiproxyUnderTest.Client.browser, []),
    ])
    func whatAWebPageCouldSendIsRefused(_ client: ToxiproxyUnderTest.Client, _ headers: [String]) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, _) = try api.send(
            "POST", "/proxies", #"{"name":"x","upstream":"127.0.0.1:9"}"#, as: client, headers: headers)

        #expect(status == 403)
        #expect((try api.send("GET", "/proxies").json as? [String: Any])?.isEmpty == true)
    }

    /// A page on a name the attacker rebinds to 127.0.0.1 sends that name as `Host`; a name that merely starts
    /// with `127.` and ends with the port is a name all the same.
    @Test(arguments: ["rebind.example:PORT", "127.rebind.example:PORT", "127.0.0.1.rebind.example:PORT", "127.0.0.1:1"])
    func aForeignHostIsRefusedAndChangesNothing(_ host: String) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: api.port)!, timeout: .seconds(20))
        defer { stream.close() }
        let body = #"{"name":"x","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#

        try stream.write(
            Array(
                ("POST /proxies HTTP/1.1\r\nHost: \(host.replacingOccurrences(of: "PORT", with: "\(api.port)"))\r\n"
                    + "User-Agent: \(ToxiproxyUnderTest.Client.go.rawValue)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                    .utf8))

        #expect(String(decoding: try stream.readToEnd(), as: UTF8.self).hasPrefix("HTTP/1.1 403 "))
        #expect((try api.send("GET", "/proxies").json as? [String: Any])?.isEmpty == true)
    }

    /// Every interface, the IPv6 wildcard and another host's address: a loopback API's client (any local program,
    /// no token) cannot open the upstream to the network, not even for a proxy created disabled.
    @Test(arguments: [
        (#"{"name":"db","listen":"0.0.0.0:0","upstream":"127.0.0.1:9"}"#, "0.0.0.0:0"),
        (#"{"name":"db","listen":"[::]:0","upstream":"127.0.0.1:9"}"#, "[::]:0"),
        (#"{"name":"db","listen":"198.18.0.1:0","upstream":"127.0.0.1:9"}"#, "198.18.0.1:0"),
        (#"{"name":"db","listen":"0.0.0.0:0","upstream":"127.0.0.1:9","enabled":false}"#, "0.0.0.0:0"),
    ])
    func aListenerBeyondLoopbackIsRefusedAndCreatesNothing(_ body: String, _ listen: String) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send("POST", "/proxies", body)

        #expect(status == 400)
        let error = try #require(errorShape(json))
        #expect(error.status == 400)
        #expect(
            error.error?.hasPrefix(#"proxy "db": listen "\#(listen)" is not a loopback address"#) == true, "\(error)")
        #expect(error.error?.contains("--allow-remote") == true, "\(error)")
        #expect((try api.send("GET", "/proxies").json as? [String: Any])?.isEmpty == true)
        #expect(api.proxy.status().isEmpty)
    }

    @Test func anUpdateToAListenerBeyondLoopbackChangesNothing() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("db", upstreamPort: 9)

        let (status, json) = try api.send("PATCH", "/proxies/db", #"{"listen":"0.0.0.0:0"}"#)
        let shown = try #require(try api.send("GET", "/proxies/db").json as? [String: Any])

        #expect(status == 400)
        #expect(
            errorShape(json)?.error?.hasPrefix(#"proxy "db": listen "0.0.0.0:0" is not a loopback address"#) == true,
            "\(String(describing: json))")
        #expect(shown.string("listen") == "127.0.0.1:\(port)")
        #expect(shown["enabled"] as? Bool == true)
        #expect(api.proxy.status().map(\.address.port) == [port])
    }

    @Test func populateWithOneListenerBeyondLoopbackChangesNothing() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("kept", upstreamPort: 9)

        let (status, json) = try api.send(
            "POST", "/populate",
            """
            [{"name":"kept","listen":"127.0.0.1:0","upstream":"127.0.0.1:10"},
             {"name":"open","listen":"0.0.0.0:0","upstream":"127.0.0.1:9"}]
            """)

        #expect(status == 400)
        #expect(
            (json as? [String: Any])?.string("error")?.hasPrefix(#"proxy "open": listen "0.0.0.0:0""#) == true,
            "\(String(describing: json))")
        let all = try #require(try api.send("GET", "/proxies").json as? [String: [String: Any]])
        #expect(Set(all.keys) == ["kept"])
        #expect(all["kept"]?.string("upstream") == "127.0.0.1:9")
        #expect(api.proxy.status().map(\.address.port) == [port])
    }

    /// `localhost` and an empty host are loopback: `:PORT` means 127.0.0.1 here, as for `--listen`, where
    /// Toxiproxy would listen on every interface.
    @Test(arguments: ["localhost:0", ":0", "127.0.0.2:0", "[::1]:0"])
    func loopbackListenersAreAllowed(_ listen: String) throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send(
            "POST", "/proxies", #"{"name":"local","listen":"\#(listen)","upstream":"127.0.0.1:9"}"#)

        #expect(status == 201, "\(String(describing: json))")
        let bound = try #require(api.proxy.status().first?.address)
        #expect(bound.isLoopback)
        if listen == ":0" { #expect((json as? [String: Any])?.string("listen") == "127.0.0.1:\(bound.port)") }
    }

    /// With `--allow-remote` the choice is made: a proxy may listen on every interface. It is created disabled,
    /// so that the test itself listens on loopback only.
    @Test func allowRemoteLetsAProxyListenBeyondLoopback() throws {
        let api = try ToxiproxyUnderTest(remoteListeners: true)
        defer { api.stop() }

        let (status, json) = try api.send(
            "POST", "/proxies", #"{"name":"db","listen":"0.0.0.0:0","upstream":"127.0.0.1:9","enabled":false}"#)

        #expect(status == 201, "\(String(describing: json))")
        #expect((json as? [String: Any])?.string("listen") == "0.0.0.0:0")
    }

    @Test func versionNamesTheCompatibleToxiproxyVersion() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let (status, json) = try api.send("GET", "/version")

        #expect(status == 200)
        #expect((json as? [String: Any])?.string("version") == "2.12.0")
    }
}

/// The inode of the socket listening on 127.0.0.1:`port`, from /proc/net/tcp: the same inode is the same socket.
private func listeningSocketInode(port: UInt16) -> String? {
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return nil }
    let local = "0100007F:" + String(format: "%04X", port)
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        if fields.count > 9, fields[1] == local, fields[3] == "0A" { return String(fields[9]) }
    }
    return nil
}
