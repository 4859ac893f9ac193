/// The SOCKS5 protocol (RFC 1928) with username/password authentication (RFC 1929), as bytes in and bytes out.
///
/// `SOCKS5Negotiation` reads a client's greeting, optional credentials and request from the bytes received so far
/// and says what to answer; it never touches a socket, so it is tested byte for byte.
enum SOCKS5 {
    static let version: UInt8 = 5

    /// The authentication methods of RFC 1928 section 3 that linkcond speaks.
    enum Method: UInt8 {
        case noAuthentication = 0x00
        case usernamePassword = 0x02
        case noneAcceptable = 0xFF
    }

    /// The commands of RFC 1928 section 4.
    enum Command: UInt8 {
        case connect = 0x01
        case bind = 0x02
        case udpAssociate = 0x03
    }

    /// The reply field of RFC 1928 section 6.
    enum Reply: UInt8, Sendable {
        case succeeded = 0x00
        case generalFailure = 0x01
        case notAllowed = 0x02
        case networkUnreachable = 0x03
        case hostUnreachable = 0x04
        case connectionRefused = 0x05
        case ttlExpired = 0x06
        case commandNotSupported = 0x07
        case addressTypeNotSupported = 0x08

        /// The reply for a failed upstream connection.
        init(connectError error: Errno) {
            switch error {
            case .connectionRefused: self = .connectionRefused
            case .networkUnreachable: self = .networkUnreachable
            case .hostUnreachable: self = .hostUnreachable
            case .timedOut: self = .ttlExpired
            case .permissionDenied, .notPermitted: self = .notAllowed
            default: self = .generalFailure
            }
        }
    }

    /// A destination as the client wrote it: a name or a numeric address, and a port.
    struct Destination: Equatable {
        var host: String
        var port: UInt16
        /// True when the client sent a name (address type 3), which costs a lookup.
        var isName: Bool
    }

    /// A reply to a request: `05 REP 00 ATYP BND.ADDR BND.PORT`, with `bound` (or 0.0.0.0:0) as the address.
    static func reply(_ code: Reply, bound: SocketAddress? = nil) -> [UInt8] {
        let bytes = bound?.addressBytes ?? []
        let port = bound?.port ?? 0
        let address: [UInt8] =
            bytes.count == 16 ? [0x04] + bytes : bytes.count == 4 ? [0x01] + bytes : [0x01, 0, 0, 0, 0]
        return [version, code.rawValue, 0x00] + address + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }
}

/// What a SOCKS5 client's bytes so far call for.
enum SOCKS5Step: Equatable {
    /// Wait for more bytes.
    case needMore
    /// Send these bytes and keep reading; `consumed` bytes of the input are used up.
    case answer([UInt8], consumed: Int)
    /// Send these bytes and close.
    case refuse([UInt8])
    /// The client asked to CONNECT to `destination`; `consumed` bytes are used up, the rest is pipelined data.
    case connect(SOCKS5.Destination, consumed: Int)
}

/// A SOCKS5 server's side of the negotiation before any upstream is contacted. Lives on the event loop thread.
struct SOCKS5Negotiation {
    enum Phase { case greeting, credentials, request, done }

    /// The credentials every client must give, or nil when no authentication is required.
    let credentials: ProxyCredentials?
    private(set) var phase = Phase.greeting

    init(credentials: ProxyCredentials?) { self.credentials = credentials }

    /// Reads the next message from `input` (the unconsumed bytes), if it is complete.
    mutating func advance(_ input: ArraySlice<UInt8>) -> SOCKS5Step {
        let bytes = Array(input)
        switch phase {
        case .greeting: return greeting(bytes)
        case .credentials: return usernamePassword(bytes)
        case .request: return request(bytes)
        case .done: return .needMore
        }
    }

    private mutating func greeting(_ bytes: [UInt8]) -> SOCKS5Step {
        guard bytes.count >= 2 else { return .needMore }
        guard bytes[0] == SOCKS5.version, bytes[1] > 0 else {
            return .refuse([SOCKS5.version, SOCKS5.Method.noneAcceptable.rawValue])
        }
        let length = 2 + Int(bytes[1])
        guard bytes.count >= length else { return .needMore }
        let offered = Set(bytes[2..<length])
        let wanted: SOCKS5.Method = credentials == nil ? .noAuthentication : .usernamePassword
        guard offered.contains(wanted.rawValue) else {
            phase = .done
            return .refuse([SOCKS5.version, SOCKS5.Method.noneAcceptable.rawValue])
        }
        phase = wanted == .noAuthentication ? .request : .credentials
        return .answer([SOCKS5.version, wanted.rawValue], consumed: length)
    }

    /// RFC 1929: `01 ULEN UNAME PLEN PASSWD`, answered `01 00` (success) or `01 01` (failure, then close).
    private mutating func usernamePassword(_ bytes: [UInt8]) -> SOCKS5Step {
        guard bytes.count >= 2 else { return .needMore }
        guard bytes[0] == 0x01 else { return .refuse([0x01, 0x01]) }
        let userLength = Int(bytes[1])
        guard bytes.count >= 2 + userLength + 1 else { return .needMore }
        let passwordLength = Int(bytes[2 + userLength])
        let length = 3 + userLength + passwordLength
        guard bytes.count >= length else { return .needMore }
        let user = Array(bytes[2..<(2 + userLength)])
        let password = Array(bytes[(3 + userLength)..<length])
        if let credentials, !credentials.accepts(user: user, password: password) {
            phase = .done
            return .refuse([0x01, 0x01])
        }
        phase = .request
        return .answer([0x01, 0x00], consumed: length)
    }

    /// `05 CMD 00 ATYP DST.ADDR DST.PORT`.
    private mutating func request(_ bytes: [UInt8]) -> SOCKS5Step {
        guard bytes.count >= 4 else { return .needMore }
        guard bytes[0] == SOCKS5.version else { return .refuse(SOCKS5.reply(.generalFailure)) }
        let addressLength: Int
        switch bytes[3] {
        case 0x01: addressLength = 4
        case 0x04: addressLength = 16
        case 0x03:
            guard bytes.count >= 5 else { return .needMore }
            addressLength = 1 + Int(bytes[4])
        default:
            phase = .done
            return .refuse(SOCKS5.reply(.addressTypeNotSupported))
        }
        let length = 4 + addressLength + 2
        guard bytes.count >= length else { return .needMore }
        phase = .done
        guard bytes[1] == SOCKS5.Command.connect.rawValue else { return .refuse(SOCKS5.reply(.commandNotSupported)) }
        let port = UInt16(bytes[length - 2]) << 8 | UInt16(bytes[length - 1])
        let address = Array(bytes[4..<(4 + addressLength)])
        switch bytes[3] {
        case 0x03:
            let name = String(decoding: address.dropFirst(), as: UTF8.self)
            guard AddressBytes.parse(name) != nil || HostPattern(parsing: name) == .host(name.lowercased()) else {
                return .refuse(SOCKS5.reply(.hostUnreachable))
            }
            return .connect(
                SOCKS5.Destination(host: name, port: port, isName: AddressBytes.parse(name) == nil), consumed: length)
        default:
            return .connect(
                SOCKS5.Destination(host: AddressBytes.format(address), port: port, isName: false), consumed: length)
        }
    }
}

/// A user name and password a proxy front end requires (`--proxy-user USER:PASS`).
public struct ProxyCredentials: Hashable, Sendable {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Reads `USER:PASS` (the password may contain colons); nil without a colon or with an empty user.
    public init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        self.init(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// Compares in time independent of where the first difference is, so timing does not reveal a prefix.
    func accepts(user: [UInt8], password: [UInt8]) -> Bool {
        let userMatches = SecretComparison.equal(user, Array(self.user.utf8))
        let passwordMatches = SecretComparison.equal(password, Array(self.password.utf8))
        return userMatches && passwordMatches
    }
}
