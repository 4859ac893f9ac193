/// Request framings an origin may read differently from linkcond (RFC 9112 sections 6 and 7.1, RFC 9110 section 5),
/// which the HTTP proxy front end must answer 400 without forwarding anything: one list for the in-process test and
/// the one against the binary. Each is a description and the request's text after its request line and `Host`
/// line; `ORIGIN` stands for the origin's port.
public enum LooseHTTPFramings {
    public static let all: [(String, String)] = [
        (
            "a chunk size of -0",
            "Transfer-Encoding: chunked\r\n\r\n-0\r\n\r\nGET http://127.0.0.1:ORIGIN/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        ),
        ("a chunk size of +5", "Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n"),
        ("chunk data not followed by CRLF", "Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"),
        ("bare LFs on the chunk lines", "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\n\n"),
        ("a chunk size too large for 64 bits", "Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n"),
        ("a control character in a trailer name", "Transfer-Encoding: chunked\r\n\r\n0\r\nX\u{01}Y: 1\r\n\r\n"),
        ("Content-Length: +4", "Content-Length: +4\r\n\r\nbody"),
        ("Content-Length: -0", "Content-Length: -0\r\n\r\n"),
        ("a control character in a field name", "X-\u{01}Foo: 1\r\nContent-Length: 4\r\n\r\nbody"),
        ("a lone CR in a field value", "X-Foo: a\rb\r\nContent-Length: 4\r\n\r\nbody"),
    ]

    /// The whole request for `rest`, a POST to the origin at 127.0.0.1:`originPort` through the proxy.
    public static func request(_ rest: String, originPort: UInt16) -> String {
        "POST http://127.0.0.1:\(originPort)/first HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + rest.replacingOccurrences(of: "ORIGIN", with: String(originPort))
    }
}
