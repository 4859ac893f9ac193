import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// A real browser loading a hostile page cannot steer linkcond, even with no token configured.
@Suite(.serialized)
struct ControlEndpointBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The page: no-cors fetches and a form post against the control port, then a line saying it ran.
    static func hostilePage(controlPort: UInt16) -> String {
        """
        <!doctype html><html><body><iframe name="sink"></iframe>
        <form id="form" method="POST" action="http://127.0.0.1:\(controlPort)/offline" enctype="text/plain" target="sink">
        <input type="hidden" name="refuse" value=""></form>
        <script>
        (async () => {
          const base = "http://127.0.0.1:\(controlPort)";
          const log = [];
          const attempt = async (name, path, init) => {
            try { await fetch(base + path, init); log.push(name + ": sent"); } catch (e) { log.push(name + ": " + e); }
          };
          await attempt("offline", "/offline", { method: "POST", mode: "no-cors" });
          await attempt("settings", "/settings", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: "downlink.delay = 1 ms\\n" });
          await attempt("profile", "/profile", { method: "PUT", headers: { "Content-Type": "text/x-linkcond" }, body: "3g" });
          await attempt("scenario", "/scenario", { method: "PUT", mode: "no-cors", body: "0s offline\\n" });
          document.getElementById("form").submit();
          await new Promise(resolve => setTimeout(resolve, 500));
          document.body.insertAdjacentHTML("beforeend", "<pre>attempts done\\n" + log.join("\\n") + "</pre>");
        })();
        </script></body></html>
        """
    }

    @Test(.enabled(if: chromium != nil, "needs chromium (apt-get install chromium)"))
    func aPageInHeadlessChromiumCannotChangeAnythingThroughTheControlPort() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let site = try Self.serving(Self.hostilePage(controlPort: endpoint.port))
        defer { site.stop() }

        let dom = try Self.runHeadless(Self.chromium!, url: "http://127.0.0.1:\(site.port)/")

        #expect(dom.contains("attempts done"), "the page's script did not run: \(dom.prefix(2000))")
        #expect(endpoint.proxy.conditions.offline == nil, "\(dom)")
        #expect(endpoint.proxy.profile.name == "edge")
        #expect(endpoint.proxy.profile.downlink.delay == .milliseconds(400))
        #expect(endpoint.proxy.report().scenario == nil)
    }

    /// A web server on loopback that answers every request with `page`, as the attacker's site.
    static func serving(_ page: String) throws -> TestServer {
        let body = Array(page.utf8)
        return try TestServer { connection in
            defer { connection.close() }
            var request: [UInt8] = []
            while !request.contains(13), let chunk = try? connection.receive(), !chunk.isEmpty { request += chunk }
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            try? connection.send(Array(head.utf8) + body)
        }
    }

    /// The page against the Toxiproxy API, which asks no token on loopback: JSON sent as no-cors `text/plain`, and
    /// the classic form whose `text/plain` encoding spells a JSON body (`NAME=VALUE` with the `=` inside a string).
    static func hostileToxiproxyPage(apiPort: UInt16) -> String {
        let create = #"{"name":"planted","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#
        return """
            <!doctype html><html><body><iframe name="sink"></iframe>
            <form id="form" method="POST" action="http://127.0.0.1:\(apiPort)/proxies" enctype="text/plain" target="sink">
            <input type="hidden" name='{"name":"formed","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","x":"' value='"}'></form>
            <script>
            (async () => {
              const base = "http://127.0.0.1:\(apiPort)";
              const log = [];
              const attempt = async (name, path, init) => {
                try { const r = await fetch(base + path, init); log.push(name + ": " + r.status); } catch (e) { log.push(name + ": " + e); }
              };
              await attempt("create", "/proxies", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '\(create)' });
              await attempt("populate", "/populate", { method: "POST", mode: "no-cors", body: '[\(create)]' });
              await attempt("cors", "/proxies", { method: "POST", headers: { "Content-Type": "application/json" }, body: '\(create)' });
              await attempt("read", "/proxies", {});
              document.getElementById("form").submit();
              await new Promise(resolve => setTimeout(resolve, 500));
              document.body.insertAdjacentHTML("beforeend", "<pre>attempts done\\n" + log.join("\\n") + "</pre>");
            })();
            </script></body></html>
            """
    }

    @Test(.enabled(if: chromium != nil, "needs chromium (apt-get install chromium)"))
    func aPageInHeadlessChromiumCannotCreateToxiproxyProxies() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let api = try endpoint.proxy.serveToxiproxy(at: Endpoint(host: "127.0.0.1", port: 0))
        let apiPort = try #require(api.split(separator: ":").last.flatMap { UInt16($0) })
        let site = try Self.serving(Self.hostileToxiproxyPage(apiPort: apiPort))
        defer { site.stop() }

        let dom = try Self.runHeadless(Self.chromium!, url: "http://127.0.0.1:\(site.port)/")

        #expect(dom.contains("attempts done"), "the page's script did not run: \(dom.prefix(2000))")
        #expect(
            endpoint.proxy.status().count == 1, "a listener appeared: \(endpoint.proxy.status().map(\.address)) \(dom)")
    }

    /// Loads `url` in headless chromium and returns the DOM once the page settled (at most 60 s).
    static func runHeadless(_ executable: String, url: String) throws -> String {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-chromium-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: profile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)",
            "--virtual-time-budget=10000", "--dump-dom", url,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let dom = LockedBox(Data())
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            dom.value = output.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        if done.wait(timeout: .now() + 60) == .timedOut {
            process.terminate()
            throw TestError("chromium did not finish within 60 s")
        }
        process.waitUntilExit()
        return String(decoding: dom.value, as: UTF8.self)
    }
}
