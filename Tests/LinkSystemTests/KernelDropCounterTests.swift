import Testing

@testable import LinkSystem

/// Turning the kernel's running drop total (SO_RXQ_OVFL), attached to some datagrams, into new drops.
struct KernelDropCounterTests {
    @Test func countsTheGrowthOfTheRunningTotalOnce() {
        var counter = KernelDropCounter()

        let drops = [nil, 3, 3, nil, 10, 10].map { counter.newDrops(reported: $0) }

        #expect(drops == [0, 3, 0, 0, 7, 0])
    }

    @Test func followsTheTotalAcrossItsWrapAround() {
        var counter = KernelDropCounter()
        _ = counter.newDrops(reported: UInt32.max - 1)

        #expect(counter.newDrops(reported: 2) == 4)
    }
}
