import Foundation
import Testing

@testable import LinkSystem

/// The descriptors a reserve holds go back to the process whether its owner closes it or only drops it.
struct DescriptorReserveTests {
    @Test func aDroppedReserveClosesItsPlaceholders() throws {
        let before = try placeholderDescriptors()
        var reserve: DescriptorReserve? = DescriptorReserve(capacity: 3)
        let held = try placeholderDescriptors().subtracting(before)
        #expect(held.count == 3)

        reserve = nil

        _ = reserve
        #expect(try placeholderDescriptors().intersection(held).isEmpty)
    }

    @Test func aClosedReserveHoldsNothing() {
        let reserve = DescriptorReserve(capacity: 3)

        reserve.close()

        #expect(reserve.count == 0)
    }

    /// This process's descriptors open on /dev/null, the file a reserve's placeholders are opened on.
    private func placeholderDescriptors() throws -> Set<Int32> {
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        return Set(
            names.compactMap { name in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                    target == "/dev/null"
                else { return nil }
                return Int32(name)
            })
    }
}
