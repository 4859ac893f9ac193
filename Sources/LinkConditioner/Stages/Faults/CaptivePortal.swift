/// The captive portal's answers to plain-HTTP requests, as bytes.
enum CaptivePortal {
    /// The portal's own host; `.invalid` never resolves, so only the portal answers it.
    static let host = "portal.linkcond.invalid"
    /// The form's path; a POST to it on any host logs in.
    static let loginPath = "/linkcond-portal/login"

    /// Whether `byte` may start a plain-HTTP request (a method's first letter); a TLS ClientHello starts with 0x16.
    static func mayBeginHTTPRequest(_ byte: UInt8) -> Bool { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) }

    /// What the portal answers to `head`, and whether the answer lets traffic through.
    ///
    /// - Parameter host: The host the client asked for (the proxy request's or the tunnel's), for a request whose
    ///   target is a path only.
    static func answer(to head: HTTPRequestHead, host asked: String, style: CaptivePortalSetting.Style) -> (
        bytes: [UInt8], releases: Bool
    ) {
        if head.method == "POST", path(of: head.target) == loginPath {
            return (
                response(
                    status: "200 OK", fields: [],
                    body: page(title: "You are online", content: "<p>You are now online.</p>")), true
            )
        }
        if style == .redirect, asked.lowercased() != host {
            let location = "http://\(host)\(loginPath)"
            return (
                response(
                    status: "302 Found", fields: ["Location: \(location)"],
                    body: page(title: "Redirecting", content: "<p><a href=\"\(location)\">Log in</a></p>")), false
            )
        }
        let form =
            "<form method=\"post\" action=\"http://\(host)\(loginPath)\">"
            + "<label>Room number <input name=\"room\"></label> <button type=\"submit\">Log in</button></form>"
        return (
            response(status: "200 OK", fields: [], body: page(title: "Log in to the network", content: form)), false
        )
    }

    private static func path(of target: String) -> String {
        guard let scheme = target.range(of: "://") else { return String(target.prefix { $0 != "?" }) }
        let rest = target[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return String(rest[slash...].prefix { $0 != "?" })
    }

    private static func page(title: String, content: String) -> String {
        "<!DOCTYPE html><html><head><title>\(title)</title></head><body><h1>\(title)</h1>\(content)</body></html>\n"
    }

    private static func response(status: String, fields: [String], body: String) -> [UInt8] {
        let lines =
            ["HTTP/1.1 \(status)"] + fields + [
                "Content-Type: text/html; charset=utf-8", "Content-Length: \(body.utf8.count)",
                "Cache-Control: no-store", "Connection: close", "", body,
            ]
        return Array(lines.joined(separator: "\r\n").utf8)
    }
}
