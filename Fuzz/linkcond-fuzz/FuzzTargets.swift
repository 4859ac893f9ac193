/// Every fuzz target, by the name `scripts/fuzz` and the corpus folders use. Each hands the bytes to the function
/// production calls.
enum FuzzTargets {
    typealias Test = @Sendable (FuzzInput) -> Void

    static let all: [(name: String, test: Test)] = [
        ("profile", ProfileTextTarget.run),
        ("scenario", ScenarioTextTarget.run),
        ("socks5", SOCKS5Target.run),
        ("http-proxy", HTTPProxyTarget.run),
        ("control", ControlRequestTarget.run),
        ("control-parse", ControlParseTarget.run),
        ("dns-message", DNSMessageTarget.run),
        ("dns-tcp", DNSFramingTarget.run),
        ("trace", TraceFileTarget.run),
        ("ip-packet", IPPacketTarget.run),
        ("recording", RecordingTarget.run),
    ]

    /// The variable that names the target, so that libFuzzer's child processes (`-fork`, `-jobs`) run the same one.
    static let variable = "LINKCOND_FUZZ_TARGET"

    static func named(_ name: String) -> Test? { all.first { $0.name == name }?.test }

    static let usage = """
        usage: linkcond-fuzz TARGET [libFuzzer options] [CORPUS…]   (built by scripts/fuzz)
           or: linkcond-fuzz TARGET FILE|DIRECTORY…   (an ordinary build: runs each input once)
        targets: \(all.map(\.name).joined(separator: ", "))

        """
}
