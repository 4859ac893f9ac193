import Foundation
import Logging
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A listener accepts one client a wake while clients arrive one at a time, so none costs an accept that finds
/// nobody waiting, and drains clients that arrive faster than that in a few wakes.
@Suite(.serialized)
struct AcceptBudgetTests {
    @Test func clientsArrivingOneAtATimeCostNoAcceptThatFindsNobody() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer {
            proxy.stop()
            echo.stop()
        }

        for _ in 0..<5 {
            let client = try TestConnection.connect(port: proxy.port, timeout: 10)
            try client.send([0x42])
            #expect(try client.receive(exactly: 1) == [0x42])
            client.close()
        }

        let tally = proxy.acceptTally()
        #expect(proxy.status()[0].connectionsAccepted == 5)
        #expect(tally.emptyAccepts == 0)
    }

    @Test func clientsWaitingTogetherAreTakenInFewerWakesThanClients() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let accepted = LockedBox<[Socket]>([])
        let acceptor = try loop.submitAndWait {
            let acceptor = try TCPAcceptor(
                address: SocketAddress(numericHost: "127.0.0.1", port: 0)!, loop: loop,
                logger: Logger(label: "test"))
            try acceptor.start { client, _ in accepted.mutate { $0.append(client) } }
            acceptor.hold(true)
            return LoopBound(acceptor)
        }
        defer {
            try? loop.submitAndWait {
                acceptor.value.close()
                for socket in accepted.value { socket.close() }
            }
        }
        let port = try loop.submitAndWait { acceptor.value.localAddress.port }
        // Every client's handshake completes in the kernel while the acceptor holds, so all of them wait at once.
        let clients = try (0..<20).map { _ in try TestConnection.connect(port: port, timeout: 10) }
        defer { for client in clients { client.close() } }

        try loop.submitAndWait { acceptor.value.hold(false) }
        let all = waitUntil(seconds: 20) { accepted.value.count == clients.count }

        let (wakes, emptyAccepts) = try loop.submitAndWait { (acceptor.value.wakes, acceptor.value.emptyAccepts) }
        #expect(all, "\(accepted.value.count) of \(clients.count) clients accepted")
        #expect(wakes < clients.count, "\(wakes) wakes for \(clients.count) waiting clients")
        #expect(emptyAccepts <= 1)
    }
}
