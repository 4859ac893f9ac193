import Foundation
import LinkConditioner
import Testing

/// Which control addresses only this machine can reach, and so may go without a token and be sent this user's.
@Suite(.serialized)
struct ControlAddressLocalityTests {
    @Test(arguments: [
        "127.0.0.1:40123", "127.3.4.5:40123", "[::1]:40123", "localhost:40123", "http://127.0.0.1:40123/",
    ])
    func aLoopbackAddressOrLocalhostIsLocalOnly(text: String) throws {
        let address = try #require(ControlAddress(parsing: text))

        #expect(address.isLocalOnly)
    }

    @Test(arguments: [
        "127.evil.example:40123", "127.0.0.1.rebind.example:40123", "198.18.0.9:40123", "[2001:db8::1]:40123",
    ])
    func aNameThatOnlyLooksLikeLoopbackOrAnotherHostIsNotLocalOnly(text: String) throws {
        let address = try #require(ControlAddress(parsing: text))

        #expect(!address.isLocalOnly)
    }

    @Test func theTokenFileOfALocalPortIsOfferedToLoopbackAndNeverToAnotherHostOnThatPort() throws {
        let port: UInt16 = 1
        let file = ControlAddress.tokenFile(port: port)
        try FileManager.default.createDirectory(
            atPath: ControlAddress.privateDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try PrivateFiles.write("local-secret-token-0123456789\n", to: file)
        defer { try? FileManager.default.removeItem(atPath: file) }

        let local = try ControlClient.token(for: #require(ControlAddress(parsing: "127.0.0.1:\(port)")))
        let remote = try ControlClient.token(for: #require(ControlAddress(parsing: "198.18.0.9:\(port)")))
        let lookalike = try ControlClient.token(for: #require(ControlAddress(parsing: "127.evil.example:\(port)")))

        #expect(local == "local-secret-token-0123456789")
        #expect(remote == nil)
        #expect(lookalike == nil)
    }
}
