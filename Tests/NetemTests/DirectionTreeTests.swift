import LinkConditioner
import Testing

@testable import LinkNetem

/// The qdisc layout linkcond plans for a conditioning, as pure data: no kernel needed.
struct DirectionTreeTests {
    @Test func dnsDelayGetsItsOwnClassForUDPAndTCPPort53OnTheUplinkOnly() throws {
        let conditioning = KernelConditioning(dnsDelay: .seconds(3))

        let uplink = try #require(conditioning.tree(for: .uplink))

        #expect(uplink.classes.map(\.handle) == [TrafficHandle.dnsClass])
        guard case .netem(let delay, _, _, _) = uplink.classes.first?.leaf else {
            Issue.record("the DNS class has no netem leaf")
            return
        }
        #expect(delay == .seconds(3))
        let ports = uplink.filters.map { $0.keys.map(\.offset) }
        #expect(ports == [[8, 20], [8, 20]])
        #expect(uplink.filters.map { $0.keys[0].value >> 16 } == [17, 6])
        #expect(uplink.filters.allSatisfy { $0.keys[1].value == 53 && $0.flowid == TrafficHandle.dnsClass })
        #expect(conditioning.tree(for: .downlink) == nil)
    }

    @Test func aMatchSendsOtherTrafficToTheUnshapedDirectQueue() throws {
        let conditioning = KernelConditioning(uplink: KernelShaping(rate: .mbps(1)), match: .port(22))

        let tree = try #require(conditioning.tree(for: .uplink))

        #expect(tree.filters.map(\.priority) == [10, 11, 100])
        #expect(tree.filters.last?.flowid == TrafficHandle.root)
        #expect(tree.filters.last?.protocolNumber == EthernetProtocol.all)
    }

    @Test func rateOnlyUsesAByteFifoAsDeepAsTheQueue() throws {
        let tree = try #require(
            KernelConditioning(uplink: KernelShaping(rate: .mbps(1), queue: .kib(64))).tree(for: .uplink))

        #expect(tree.classes.first?.leaf == .fifo(limitBytes: 65536))
        #expect(tree.classes.first?.leafHandle == TrafficHandle.shapingFifo)
    }

    @Test func netemLimitHoldsTheQueueAndTwiceTheDelayLine() throws {
        let shaping = KernelShaping(rate: .mbps(100), delay: .milliseconds(100), queue: .kib(256))

        let tree = try #require(KernelConditioning(uplink: shaping).tree(for: .uplink))

        // 256 KiB is 174 frames; 100 Mbit/s for 100 ms is 826 frames, doubled.
        #expect(
            tree.classes.first?.leaf
                == .netem(delay: .milliseconds(100), jitter: .zero, loss: .zero, limitPackets: 174 + 2 * 826))
    }

    @Test func anUnimpairedProfileTouchesNoDirection() {
        let conditioning = KernelConditioning(profile: .none)

        #expect(conditioning.tree(for: .uplink) == nil && conditioning.tree(for: .downlink) == nil)
    }

    @Test func matchesParseAndReadBackFromTheirKeys() throws {
        let network = try #require(TrafficMatch(network: "198.19.7.9/15"))
        let host = try #require(TrafficMatch(network: "198.18.0.2"))

        #expect(network == .network(address: 0xc612_0000, prefixLength: 15))
        #expect(host.description == "host 198.18.0.2")
        #expect(TrafficMatch(network: "198.18.0.300") == nil)
        #expect(TrafficMatch(port: "0") == nil)
        for match in [network, host, TrafficMatch.port(5201)] {
            for direction in [TrafficDirection.uplink, .downlink] {
                #expect(TrafficMatch(keySets: match.keySets(for: direction), direction: direction) == match)
            }
        }
    }

    @Test func netemProbabilitiesRoundTripToTheMillionthOfAPercent() {
        for percent in [0.0, 0.1, 1, 10, 33.333333, 100] {
            #expect(NetemProbability.percentage(NetemProbability.raw(Percentage(percent))).percent == percent)
        }
    }
}
