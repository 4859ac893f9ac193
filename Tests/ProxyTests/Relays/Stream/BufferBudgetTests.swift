import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The cap on bytes held across every TCP connection (`--max-buffered`): readers stop when it is reached and
/// resume as it drains, and nothing is lost.
@Suite(.serialized)
struct BufferBudgetTests {
    @Test func connectionsWhoseClientsDoNotReadHoldNoMoreThanTheCapAndDeliverByteExactOnceTheyRead() throws {
        let size = 2 << 20
        let payload = Payload(size: size, seed: 0xB0D6E7)
        let server = try TestServer { connection in
            try? payload.forEachBlock { try connection.send($0) }
            connection.shutdownWrite()
            _ = try? connection.receive()
            connection.close()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.delay = .milliseconds(300)
        let cap = 1 << 20
        let proxy = try ConditionedProxy.inFront(
            of: server.port, profile: profile,
            options: ProxyOptions(connectionBuffer: 4 << 20, maximumBuffered: cap))
        defer { proxy.stop() }

        let clients = try (0..<8).map { _ in try TestConnection.connect(port: proxy.port, timeout: 30) }
        defer { for client in clients { client.close() } }
        let deadline = Date().addingTimeInterval(10)
        while proxy.bufferedBytes().peak < cap - 64 * 1024 && Date() < deadline { usleep(10_000) }
        usleep(500_000)
        let heldWhileNobodyRead = proxy.bufferedBytes()

        let results = LockedBox<[Int: (Int, UInt64)]>([:])
        let group = DispatchGroup()
        for (index, client) in clients.enumerated() {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                if let drained = try? client.drain() { results.mutate { $0[index] = drained } }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)

        #expect(
            heldWhileNobodyRead.peak >= cap - 64 * 1024, "the readers never reached the cap: \(heldWhileNobodyRead)")
        #expect(heldWhileNobodyRead.peak <= cap, "held \(heldWhileNobodyRead.peak) bytes for a cap of \(cap)")
        #expect(proxy.bufferedBytes().peak <= cap)
        for index in clients.indices {
            let received = results.value[index]
            #expect(received?.0 == size, "client \(index) got \(String(describing: received?.0)) of \(size) bytes")
            #expect(received?.1 == payload.digest.value, "client \(index): bytes differ")
        }
        #expect(proxy.bufferedBytes().now == 0)
    }
}
