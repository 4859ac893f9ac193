/// `captive-portal`: until the user logs in, plain-HTTP requests through the proxy front end get the portal's
/// login page instead of the origin's answer (`form`: a 200 with the form; `redirect`: a 302 to it), whether sent
/// to the HTTP proxy or inside a SOCKS5 or CONNECT tunnel; tunnels carrying anything else (TLS) open and then end
/// before the handshake. A POST to the form,
/// or `linkcond online`, lets traffic through; a profile that turns the portal on again holds it back again.
public enum CaptivePortalSetting: DirectionSetting {
    public static let isConnectionWide = true
    public enum Style: String, Hashable, Sendable, CaseIterable {
        case off, form, redirect
    }

    public static let keys = ["captive-portal"]

    public static func expected(for key: String) -> String { "one of \(Style.allCases.map(\.rawValue).joined(separator: ", "))" }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        guard let style = Style(rawValue: value.lowercased()) else { throw .invalidValue(expected: expected(for: key)) }
        return { $0.faults.captivePortal = style }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.faults.captivePortal == .off ? [] : [("captive-portal", direction.faults.captivePortal.rawValue)]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        rendered(uplink).first.map { "captive portal (\($0.value))" }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }
}
