import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The dashboard in a real browser: headless chromium, driven over the DevTools protocol by
/// Tests/dashboard/browser_check.py, reads what the instance sampled before it opened and steers the instance while a
/// download runs through it.
@Suite(.serialized)
struct DashboardBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("dashboard/browser_check.py").path
    /// Where the screenshots are kept after the run.
    static let artefacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/test-artefacts/dashboard").path

    @Test(
        .enabled(
            if: chromium != nil && PythonScript.canImport("websocket"),
            "needs chromium (apt-get install chromium) and websocket-client (pip install websocket-client)"))
    func aPersonInChromiumSeesTheHistoryAndCapacityTheChartsMoveSwitchesTheProfileAndGoesOfflineAndBack() throws {
        let download = try SteadyDownload(profile: Profile.builtIn(named: "3g")!)
        defer { download.stop() }
        try download.waitForBytes(16 * 1024)
        // The instance has sampled seconds of the download before the page opens, which the page must draw.
        let sampled = try waitUntil(seconds: 20) {
            try JSONDecoder().decode(HistoryReport.self, from: Data(download.body(of: "/history").utf8)).points.count
                >= 2
        }
        #expect(sampled)

        let output = try PythonScript.run(
            "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
            input: "",
            arguments: [
                Self.script, "--url", "http://127.0.0.1:\(download.controlPort)/",
                "--token", download.token, "--profile", "edge",
                "--artefacts", Self.artefacts, "--chromium", Self.chromium!,
            ],
            timeout: 240)

        #expect(output.contains("picked profile edge"), "\(output)")
        #expect(download.proxy.profile.name == "edge")
        #expect(download.proxy.conditions.offline == nil)
        #expect(FileManager.default.fileExists(atPath: Self.artefacts + "/dashboard-offline.png"))
    }
}
