import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A SOCKS5 client that sends its request without waiting for the method selection gets both answers in one write,
/// in protocol order; a client that waits gets the method selection at once.
@Suite(.serialized)
struct SOCKS5PipelinedAnswerTests {
    @Test func aPipelinedRequestGetsTheMethodSelectionWithItsReplyAndNoWriteOfItsOwn() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting() + SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        let method = try client.receive(exactly: 2)
        let reply = try SOCKS5Client.readReply(client)
        try client.send([0x42])

        #expect(method == [0x05, 0x00])
        #expect(reply == 0x00)
        #expect(try client.receive(exactly: 1) == [0x42])
        #expect(proxy.relayCalls().sessionWrites == 0, "the method selection was written on its own")
    }

    @Test func aClientWaitingForTheMethodSelectionGetsItAtOnce() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting())

        #expect(try client.receive(exactly: 2) == [0x05, 0x00])
        #expect(proxy.relayCalls().sessionWrites == 1)
    }

    @Test func aPipelinedRequestRefusedByTheFrontEndGetsTheMethodSelectionFirstInTheSameWrite() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting() + SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: proxy.port))
        let method = try client.receive(exactly: 2)
        let reply = try SOCKS5Client.readReply(client)

        #expect(method == [0x05, 0x00])
        #expect(reply == 0x02, "a connect to the proxy itself is not allowed")
        #expect(proxy.relayCalls().sessionWrites == 1)
    }

    @Test func aFailedUpstreamReplyFollowsTheHeldMethodSelection() {
        let replies = ProxyReplies(style: .socks5, upstreamName: "127.0.0.1:9", answersFirst: [0x05, 0x00])

        #expect(Array(replies.replyOnFailure(.connectionRefused).prefix(4)) == [0x05, 0x00, 0x05, 0x05])
    }
}
