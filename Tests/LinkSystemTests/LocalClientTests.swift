import Foundation
import Glibc
import Testing

@testable import LinkSystem

/// Who the kernel says holds the other end of an accepted loopback connection: one of linkcond's own sockets is
/// told apart from its user's programs, though the kernel lists both as that user's.
@Suite(.serialized)
struct LocalClientTests {
    /// A listener on a loopback port the kernel picks, and the connection it accepted from `connecting`.
    static func accept(
        _ connecting: (Socket, SocketAddress) throws -> Void
    ) throws -> (listener: Socket, accepted: Socket) {
        let listener = try Socket.listening(on: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
        let client = try Socket.tcp(family: AF_INET)
        try connecting(client, try listener.localAddress())
        for _ in 0..<2000 {
            if case .processed(let (accepted, _)) = try listener.accept() {
                return (listener, accepted)
            }
            usleep(5000)
        }
        throw SystemError("accept: nothing to accept", .wouldBlock)
    }

    /// A socket linkcond connected (`Socket.connect`, as a relay's upstream) to its own listener is linkcond itself.
    @Test func aConnectionFromLinkcondsOwnSocketIsLinkcondItself() throws {
        var client: Socket?
        let (listener, accepted) = try Self.accept { socket, address in
            client = socket
            _ = try socket.connect(to: address)
        }
        defer { for socket in [listener, accepted, client].compactMap({ $0 }) { socket.close() } }

        #expect(accepted.localClient() == .linkcondItself)
    }

    /// The same connection made by a plain `connect(2)`, as another program of this user would, is the owner's.
    @Test func aConnectionFromAnotherSocketOfThisUserIsTheOwners() throws {
        var client: Socket?
        let (listener, accepted) = try Self.accept { socket, address in
            client = socket
            _ = try socket.startConnect(to: address)
        }
        defer { for socket in [listener, accepted, client].compactMap({ $0 }) { socket.close() } }

        #expect(accepted.localClient() == .owner(getuid()))
        #expect(accepted.localPeerUserIDFromKernel() == getuid())
    }
}
