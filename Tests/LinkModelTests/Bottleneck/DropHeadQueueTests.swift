import LinkModel
import LinkProfiles
import Testing

struct DropHeadQueueTests {
    @Test func aProfileNamesItAndAFullQueueLosesItsOldestDatagrams() throws {
        let profile = try Profile(
            parsing: "queue.discipline = drophead\nqueue = 3 packets\nbandwidth = 12 Mbit/s\nburst = 1500 B\n")
        let link = DatagramLink(profile: profile.uplink, seed: 1)
        let flow = link.makeFlow()

        for _ in 0..<6 { link.enqueue(1500, on: flow, at: .zero) }
        _ = link.advance(to: .s(1))
        let outcomes = flow.takeDeliverableDatagrams(at: .s(1))

        // Datagram 0 leaves at once on the one-datagram burst and 1 is on the wire; of 2...5 the queue keeps the
        // newest three.
        #expect(outcomes.filter { $0.copies > 0 }.map(\.index) == [0, 1, 3, 4, 5])
        #expect(outcomes.filter { $0.copies == 0 }.map(\.index) == [2])
        #expect(profile.rendered.contains("uplink.queue.discipline = drophead\n"))
    }
}
