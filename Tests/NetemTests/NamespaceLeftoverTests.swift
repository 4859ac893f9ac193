import Foundation
import Testing

/// The suite's sweep of namespaces that crashed test processes left behind.
struct NamespaceLeftoverTests {
    @Test func onlyTheTestsOwnNamespacesOfDeadProcessesAreLeftovers() {
        let listing = """
            lcn-near-4100-3 (id: 7)
            lcn-far-4100-3 (id: 8)
            lcn-near-4200-1
            lcn-probe-4300
            lcn-far-notapid-1
            linkcond-exec-4100
            blue
            """
        let running: Set<pid_t> = [4200]

        let leftovers = NamespacePair.leftoverNamespaces(in: listing, isRunning: { running.contains($0) })

        #expect(leftovers == ["lcn-near-4100-3", "lcn-far-4100-3", "lcn-probe-4300"])
    }
}
