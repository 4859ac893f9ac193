@testable import LinkConditioner

/// A SOCKS5 client's greeting, credentials and request, arriving in reads of any size: `SOCKS5Negotiation`, driven
/// the way `ProxyClientSession` drives it.
enum SOCKS5Target {
    static let credentials = ProxyCredentials(user: "user", password: "secret")

    static func run(_ input: FuzzInput) {
        var negotiation = SOCKS5Negotiation(credentials: input.requiresCredentials ? credentials : nil)
        var received: [UInt8] = []
        var consumed = 0
        for read in input.reads {
            received += read
            while true {
                switch negotiation.advance(received[consumed...]) {
                case .needMore:
                    break
                case .answer(_, let used):
                    precondition(
                        used > 0 && consumed + used <= received.count,
                        "SOCKS5 answer consumed \(used) of \(received.count - consumed) bytes")
                    consumed += used
                    continue
                case .refuse:
                    return
                case .connect(let destination, let used):
                    precondition(
                        used > 0 && consumed + used <= received.count,
                        "SOCKS5 request consumed \(used) of \(received.count - consumed) bytes")
                    _ = SocketAddress(numericHost: destination.host, port: destination.port)
                    return
                }
                break
            }
        }
    }
}
