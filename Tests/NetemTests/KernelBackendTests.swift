import Foundation
import LinkConditioner
import Testing

@testable import LinkNetem

/// The kernel backend against the real kernel, in namespaces each test creates and deletes.
///
/// Serialized so throughput measurements do not compete for the CPU. Skipped, with the reason shown,
/// where the process is not root or cannot create network namespaces.
@Suite(
    "Kernel backend on a veth pair", .serialized,
    .enabled(if: NamespacePair.isSupported, "needs root, network namespaces, ip, tc and iperf3")
)
struct KernelBackendTests {
    /// A profile with bandwidth only, which this kernel can apply without netem.
    static func rateOnly(up: Double?, down: Double?) -> KernelConditioning {
        KernelConditioning(
            uplink: KernelShaping(rate: up.map { BitRate.mbps($0) }),
            downlink: KernelShaping(rate: down.map { BitRate.mbps($0) }))
    }

    /// The kernel never lets more through than the rate (plus `slack` for its burst and iperf3's interval edges);
    /// a busy machine may deliver less, so below the rate only "shaped, not stalled" (half of it) is asked.
    static func expectShaped(_ frames: Double, to rate: Double, slack: Double, _ what: String) {
        #expect(
            frames <= rate * (1 + slack), "\(what) carried \(frames / 1e6) Mbit/s of frames for \(rate / 1e6) asked")
        #expect(frames >= rate / 2, "\(what) carried only \(frames / 1e6) Mbit/s of frames for \(rate / 1e6) asked")
    }

    @Test func uplinkThroughputNeverExceedsTheRateInFrameBits() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        _ = try control.apply(Self.rateOnly(up: 20, down: nil), to: pair.nearDevice)

        let payload = try pair.tcpThroughput()

        Self.expectShaped(frameRate(ofPayloadRate: payload), to: 20e6, slack: 0.03, "uplink")
    }

    @Test func downlinkThroughputNeverExceedsTheRateInFrameBits() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        _ = try control.apply(Self.rateOnly(up: nil, down: 30), to: pair.nearDevice)

        let payload = try pair.tcpThroughput(reverse: true)

        Self.expectShaped(frameRate(ofPayloadRate: payload), to: 30e6, slack: 0.03, "downlink")
    }

    @Test func portMatchShapesOnlyThatPort() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        var conditioning = Self.rateOnly(up: 5, down: 5)
        conditioning.match = .port(5201)
        _ = try control.apply(conditioning, to: pair.nearDevice)

        let matched = try pair.tcpThroughput(port: 5201, seconds: 2)
        let other = try pair.tcpThroughput(port: 5202, seconds: 2)

        Self.expectShaped(frameRate(ofPayloadRate: matched), to: 5e6, slack: 0.05, "port 5201")
        #expect(other > 50e6, "port 5202 should pass unshaped, got \(other / 1e6) Mbit/s")
    }

    @Test func readBackEqualsWhatWasApplied() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        var asked = KernelConditioning(
            uplink: KernelShaping(rate: .kbps(330), queue: .kib(64)),
            downlink: KernelShaping(rate: .kbps(780), queue: .kib(128), burst: ByteCount(bytes: 3000)))
        asked.match = TrafficMatch(network: "198.18.0.0/15")

        _ = try control.apply(asked, to: pair.nearDevice)
        let read = try #require(try control.readBack(pair.nearDevice))

        #expect(read.uplink.rate == asked.uplink.rate)
        #expect(read.downlink.rate == asked.downlink.rate)
        #expect(read.uplink.queue == asked.uplink.queue)
        #expect(read.downlink.queue == asked.downlink.queue)
        #expect(read.uplink.burst == nil, "the default burst reads back as the default")
        #expect(abs((read.downlink.burst?.bytes ?? 0) - 3000) <= 16)
        #expect(read.match == asked.match)
        #expect(read.dnsDelay == .zero)
    }

    @Test func reapplyReplacesThePreviousConditioningInPlace() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        var first = Self.rateOnly(up: 10, down: 10)
        first.match = .port(8080)
        _ = try control.apply(first, to: pair.nearDevice)

        let second = Self.rateOnly(up: 20, down: nil)
        let report = try control.apply(second, to: pair.nearDevice)

        #expect(report.replacedPrevious)
        let read = try #require(try control.readBack(pair.nearDevice))
        #expect(read.uplink.rate == .mbps(20))
        #expect(read.downlink.rate == nil)
        #expect(read.match == nil)
        #expect(try pair.exec(pair.near, "tc", "filter", "show", "dev", pair.nearDevice).isEmpty)
        #expect(!(try pair.exec(pair.near, "ip", "link", "show")).contains("lc-ifb-"))
    }

    @Test func clearRestoresAnUntouchedDeviceExactly() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        let before = try pair.snapshot()
        _ = try control.apply(Self.rateOnly(up: 10, down: 10), to: pair.nearDevice)

        let removed = try control.clear(pair.nearDevice)

        #expect(removed.count == 4, "root, redirect filter, ingress qdisc, ifb: \(removed)")
        #expect(try pair.snapshot() == before)
        #expect(try control.readBack(pair.nearDevice) == nil)
    }

    @Test func clearLeavesQdiscsAndFiltersLinkcondDidNotCreate() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        try pair.exec(
            pair.near, "tc", "qdisc", "add", "dev", pair.nearDevice, "root", "handle", "8:", "tbf",
            "rate", "900mbit", "burst", "64kb", "latency", "50ms")
        try pair.exec(pair.near, "tc", "qdisc", "add", "dev", pair.nearDevice, "ingress")
        try pair.exec(
            pair.near, "tc", "filter", "add", "dev", pair.nearDevice, "ingress", "pref", "5", "protocol", "ip",
            "u32", "match", "ip", "dport", "22", "0xffff", "classid", "1:1")
        let before = try pair.snapshot()
        let control = try TrafficControl(networkNamespace: pair.near)
        _ = try control.apply(Self.rateOnly(up: nil, down: 10), to: pair.nearDevice)

        _ = try control.clear(pair.nearDevice)

        let after = try pair.snapshot()
        #expect(after == before, "before:\n\(before)\nafter:\n\(after)")
    }

    @Test func applyRefusesAForeignRootQdiscAndChangesNothing() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        try pair.exec(
            pair.near, "tc", "qdisc", "add", "dev", pair.nearDevice, "root", "handle", "1:", "tbf",
            "rate", "900mbit", "burst", "64kb", "latency", "50ms")
        let before = try pair.snapshot()
        let control = try TrafficControl(networkNamespace: pair.near)

        #expect(throws: TrafficControlError.foreignRootQdisc(device: pair.nearDevice, kind: "tbf", handle: "1:")) {
            try control.apply(Self.rateOnly(up: 10, down: 10), to: pair.nearDevice)
        }
        #expect(try pair.snapshot() == before)
    }

    @Test func failureMidwayRollsBackWhatTheCallCreated() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        let before = try pair.snapshot()
        let rejected = KernelConditioning(
            uplink: KernelShaping(rate: .mbps(10)), downlink: KernelShaping(rate: BitRate(bitsPerSecond: 0)))

        #expect(throws: TrafficControlError.self) { try control.apply(rejected, to: pair.nearDevice) }

        #expect(try pair.snapshot() == before)
    }

    @Test func failedReapplyLeavesThePreviousConditioning() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        _ = try control.apply(Self.rateOnly(up: 10, down: nil), to: pair.nearDevice)
        let applied = try control.readBack(pair.nearDevice)
        let rejected = KernelConditioning(
            uplink: KernelShaping(rate: .mbps(20)), downlink: KernelShaping(rate: BitRate(bitsPerSecond: 0)))

        #expect(throws: TrafficControlError.self) { try control.apply(rejected, to: pair.nearDevice) }

        let after = try control.readBack(pair.nearDevice)
        #expect(after == applied, "before: \(String(describing: applied)), after: \(String(describing: after))")
        #expect(!(try pair.exec(pair.near, "ip", "link", "show")).contains("lc-ifb-"))
    }

    @Test func unknownDeviceIsNamedInTheError() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)

        #expect(throws: TrafficControlError.noSuchDevice("lc-nosuch0")) {
            try control.apply(Self.rateOnly(up: 1, down: nil), to: "lc-nosuch0")
        }
        #expect(
            TrafficControlError.noSuchDevice("lc-nosuch0").description
                == "no network device named \"lc-nosuch0\" (see `ip link show`)")
    }
}
