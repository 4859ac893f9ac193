/// `captive-portal`: until the user logs in, plain-HTTP requests through the proxy front end get the portal's
/// login page instead of the origin's answer (`form`: a 200 with the form; `redirect`: a 302 to it), whether sent
/// to the HTTP proxy or inside a SOCKS5 or CONNECT tunnel; tunnels carrying anything else (TLS) open and then end
/// before the handshake. A POST to the form,
/// or `linkcond online`, lets traffic through; a profile that turns the portal on again holds it back again.
public enum CaptivePortalSetting: ConnectionSetting {
    public enum Style: String, Hashable, Sendable, CaseIterable {
        case off, form, redirect
    }

    public static let reference = [
        KeyReference(
            "captive-portal", value: "`off`, `form`, `redirect`", default: "off",
            meaning: "plain-HTTP requests through the proxy front end (HTTP proxy or SOCKS5) get a login page (a 200 "
                + "with a form, or a 302 to `http://portal.linkcond.invalid/linkcond-portal/login`) instead of the "
                + "origin's answer",
            example: "redirect")
    ]

    public static func expected(for key: String) -> String {
        "one of \(Style.allCases.map(\.rawValue).joined(separator: ", "))"
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout ConnectionSettings) -> Void {
        guard let style = Style(rawValue: value.lowercased()) else { throw .invalidValue(expected: expected(for: key)) }
        return { $0.captivePortal = style }
    }

    public static func rendered(_ connection: ConnectionSettings) -> [(key: String, value: String)] {
        connection.captivePortal == .off ? [] : [("captive-portal", connection.captivePortal.rawValue)]
    }

    public static func summary(_ connection: ConnectionSettings) -> String? {
        rendered(connection).first.map { "captive portal (\($0.value))" }
    }
}
