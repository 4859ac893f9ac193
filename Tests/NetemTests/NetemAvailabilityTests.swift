import Foundation
import LinkConditioner
import Testing

@testable import LinkNetem

/// Whether the running kernel has sch_netem, probed once through the backend in a scratch namespace.
enum KernelNetem {
    static let isAvailable: Bool = {
        guard NamespacePair.isSupported, let pair = try? NamespacePair() else { return false }
        defer { pair.remove() }
        return (try? TrafficControl(networkNamespace: pair.near).kernelHasNetem()) ?? false
    }()
}

/// What happens when a profile needs netem: this machine's kernel has none, so the refusal is what can be tested here.
///
/// A real netem run is in Tests/netem-qemu/run.sh (a stock Debian kernel under qemu).
@Suite(
    "Profiles that need netem", .serialized,
    .enabled(if: NamespacePair.isSupported, "needs root, network namespaces, ip, tc and iperf3")
)
struct NetemAvailabilityTests {
    static let delayed = KernelConditioning(
        uplink: KernelShaping(rate: .mbps(10), delay: .milliseconds(100), loss: Percentage(1)),
        downlink: KernelShaping(rate: .mbps(10), delay: .milliseconds(100)))

    @Test(.enabled(if: !KernelNetem.isAvailable, "this kernel has sch_netem, so there is no refusal to observe"))
    func aKernelWithoutNetemRefusesWithTheExactMessageAndChangesNothing() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)
        let before = try pair.snapshot()

        #expect(throws: TrafficControlError.noNetem) { try control.apply(Self.delayed, to: pair.nearDevice) }

        #expect(try pair.snapshot() == before)
        #expect(!(try pair.exec(pair.near, "ip", "link", "show")).contains("lc-"), "the probe device is gone too")
        #expect(
            TrafficControlError.noNetem.description.hasPrefix(
                "this kernel has no netem qdisc: delay, jitter and loss cannot be applied in the kernel; load sch_netem, or use the proxy"
            ))
    }

    @Test func rateOnlyAppliesTheBandwidthAndNamesWhatWasLeftOut() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)

        let report = try control.apply(Self.delayed, to: pair.nearDevice, rateOnly: true)

        #expect(report.leftOut == "left out (needs netem): uplink delay 100 ms, loss 1 %; downlink delay 100 ms")
        let read = try #require(try control.readBack(pair.nearDevice))
        #expect(read.uplink.rate == .mbps(10) && read.downlink.rate == .mbps(10))
        #expect(read.uplink.delay == .zero && read.uplink.loss == .zero)
        #expect(!(try pair.exec(pair.near, "tc", "qdisc", "show")).contains("netem"))
    }

    @Test func aRateOnlyProfileNeedsNoNetemAndNoFlag() throws {
        let pair = try NamespacePair()
        defer { pair.remove() }
        let control = try TrafficControl(networkNamespace: pair.near)

        let report = try control.apply(KernelConditioning(uplink: KernelShaping(rate: .mbps(5))), to: pair.nearDevice)

        #expect(report.leftOut == nil)
        #expect(try control.readBack(pair.nearDevice)?.uplink.rate == .mbps(5))
    }
}
