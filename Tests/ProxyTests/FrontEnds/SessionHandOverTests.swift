import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A proxy front end's session reads its client as soon as it is accepted, and watches it as the relay will, so the
/// relay takes the registration over without an `epoll_ctl`; it passes on what the client reported that it left
/// unread: bytes and an end of stream sent with the request, or while its name was looked up, still cross.
@Suite(.serialized)
struct SessionHandOverTests {
    private static let payload = Array("pipelined after the request".utf8)

    /// `epoll_ctl` calls the front end's loop made for one connection that sends `request`, reads `replyLength`
    /// bytes of reply, has one byte echoed and closes.
    private func descriptorControls(request: (UInt16) -> [UInt8], replyLength: Int) throws -> Int {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.frontEnd()
        defer {
            proxy.stop()
            echo.stop()
        }
        let before = proxy.descriptorControls()
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        try client.send(request(echo.port))
        _ = try client.receive(exactly: replyLength)
        try client.send([0x42])
        #expect(try client.receive(exactly: 1) == [0x42])
        client.close()
        #expect(waitUntil(seconds: 10) { proxy.status()[0].activeConnections == 0 }, "the connection stayed open")
        return proxy.descriptorControls() - before
    }

    private func socksRequest(_ port: UInt16) -> [UInt8] {
        SOCKS5Client.greeting() + SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: port)
    }

    private func connectRequest(_ port: UInt16) -> [UInt8] {
        Array("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    }

    @Test func aSessionReadsItsClientAsSoonAsItIsAcceptedAndAClientThatHadSentNothingIsServedLater() throws {
        let echo = try TestServer.echo()
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
            echo.stop()
        }
        let firstReadFoundNothing = waitUntil(seconds: 10) { proxy.relayCalls().sessionFirstReadsEmpty == 1 }

        try client.send(socksRequest(echo.port))
        try readSOCKSReplies(client)
        try client.send([0x42])

        #expect(firstReadFoundNothing, "no read was made at the accept, or it found bytes the client had not sent")
        #expect(try client.receive(exactly: 1) == [0x42])
        #expect(proxy.relayCalls().sessionFirstReads == 1)
    }

    @Test func aRequestSentBeforeTheAcceptIsReadByTheReadAtTheAccept() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.frontEnd()
        defer {
            proxy.stop()
            echo.stop()
        }
        let release = proxy.holdLoop()
        let client: TestConnection
        do {
            client = try TestConnection.connect(port: proxy.port, timeout: 10)
            try client.send(socksRequest(echo.port))
        } catch {
            release()
            throw error
        }
        defer { client.close() }

        release()
        try readSOCKSReplies(client)

        #expect(proxy.relayCalls().sessionFirstReads == 1)
        #expect(
            proxy.relayCalls().sessionFirstReadsEmpty == 0,
            "the read at the accept found nothing of a request already sent")
    }

    @Test func aSOCKS5ConnectionRegistersItsTwoSocketsAndNothingMore() throws {
        let controls = try descriptorControls(request: socksRequest, replyLength: 2 + 10)

        #expect(controls == 2, "client and upstream added, no MOD at the hand-over, no DEL at the close")
    }

    @Test func anHTTPConnectConnectionRegistersItsTwoSocketsAndNothingMore() throws {
        let controls = try descriptorControls(
            request: connectRequest, replyLength: HTTPProxy.connectionEstablished.count)

        #expect(controls == 2, "client and upstream added, no MOD at the hand-over, no DEL at the close")
    }

    /// Reads a pipelined SOCKS5 client's method selection and request reply.
    private func readSOCKSReplies(_ client: TestConnection) throws {
        #expect(try client.receive(exactly: 2) == [0x05, 0x00])
        #expect(try SOCKS5Client.readReply(client) == 0x00)
    }

    private func readConnectReply(_ client: TestConnection) throws {
        #expect(try client.receive(exactly: HTTPProxy.connectionEstablished.count) == HTTPProxy.connectionEstablished)
    }

    /// Sends `request` with the payload behind it and then the end of stream, and expects the reply `readReply`
    /// reads, the payload echoed, and the upstream's end of stream; `separately`, the payload once the session
    /// looks the destination's name up.
    private func expectPayloadAndEndOfStreamCross(
        request: (UInt16) -> [UInt8], readReply: (TestConnection) throws -> Void,
        separately: Bool = false, profile: Profile = .none
    ) throws {
        let echo = try TestServer.echo()
        let (proxy, client) = try connectedFrontEnd(profile: profile, timeout: 20)
        defer {
            client.close()
            proxy.stop()
            echo.stop()
        }

        if separately {
            try client.send(request(echo.port))
            #expect(waitUntil(seconds: 10) { proxy.sessionsResolving() == 1 }, "the session never started its lookup")
            try client.send(Self.payload)
        } else {
            try client.send(request(echo.port) + Self.payload)
        }
        client.shutdownWrite()

        try readReply(client)
        #expect(try client.receive(exactly: Self.payload.count) == Self.payload)
        #expect(try client.receive().isEmpty, "the client's end of stream never reached the upstream")
    }

    @Test func bytesAndTheEndOfStreamSentWithASOCKS5RequestCross() throws {
        try expectPayloadAndEndOfStreamCross(request: socksRequest, readReply: readSOCKSReplies)
    }

    @Test func bytesAndTheEndOfStreamSentWithAnHTTPConnectRequestCross() throws {
        try expectPayloadAndEndOfStreamCross(request: connectRequest, readReply: readConnectReply)
    }

    @Test func bytesAndTheEndOfStreamSentWhileTheNameIsLookedUpCross() throws {
        // The 300 ms DNS delay holds the session resolving while the payload and the end of stream arrive.
        try expectPayloadAndEndOfStreamCross(
            request: { SOCKS5Client.greeting() + SOCKS5Client.connect(name: "localhost", port: $0) },
            readReply: readSOCKSReplies,
            separately: true, profile: delayProfile(.zero, dnsDelay: .milliseconds(300)))
    }
}
