import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// `ProxyOptions.realtimePriority` as a test suite embedding the proxy sets it.
@Suite(.serialized)
struct RealtimePriorityOptionTests {
    @Test(arguments: [Int32(0), 100])
    func aPriorityOutsideOneToNinetyNineIsRefusedWithTheReason(priority: Int32) throws {
        var options = ProxyOptions()
        options.realtimePriority = priority

        #expect {
            _ = try ConditionedProxy.inFront(of: 9, profile: .none, options: options)
        } throws: { error in
            "\(error)".contains("realtimePriority must be a SCHED_FIFO priority from 1 to 99, not \(priority)")
        }
    }

    @Test func withoutItTheStatusReportsNoRealtimePriority() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        defer { proxy.stop() }

        #expect(proxy.report().mainLoopRealtimePriority == nil)
    }
}
