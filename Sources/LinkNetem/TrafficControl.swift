import CNetlink
import Glibc
import LinkConditioner

/// The kernel backend: conditions a device with tc qdiscs programmed through libnl, reads them back, and removes them.
///
/// Uplink is the device's egress: an htb tree rooted at 1c0d:. Downlink is the device's ingress, redirected by a
/// u32 match-all filter (priority 0x1c0d) with a mirred action to the ifb device `lc-ifb-<ifindex>`, whose egress
/// carries the same kind of tree. Only objects with these marks are ever changed or deleted.
/// Not thread-safe: use one instance from one thread.
public final class TrafficControl {
    let socket: NetlinkSocket
    /// The network namespace the socket was opened in, as `ip netns` names it; nil for the process's own.
    let networkNamespace: String?

    /// Opens a netlink socket in the named network namespace (as `ip netns` names it), or in the current one.
    public init(networkNamespace: String? = nil) throws(TrafficControlError) {
        socket = try NetlinkSocket(networkNamespace: networkNamespace)
        self.networkNamespace = networkNamespace
    }

    /// What `apply` did, for the user.
    public struct ApplyReport: Sendable {
        /// The conditioning now in the kernel.
        public var applied: KernelConditioning
        /// The ifb device carrying the downlink, if the downlink is conditioned.
        public var ifbDevice: String?
        /// What `rateOnly` removed from the request, in words; `nil` if nothing.
        public var leftOut: String?
        /// Whether an earlier linkcond conditioning on the device was replaced.
        public var replacedPrevious: Bool
    }

    /// Conditions `device`, replacing whatever linkcond applied there before; on failure the device is as it was.
    ///
    /// Without `rateOnly`, a conditioning that needs netem is refused with `.noNetem`, before anything changes,
    /// when the kernel has no netem qdisc. With `rateOnly`, delay, jitter, loss and DNS delay are left out.
    public func apply(
        _ requested: KernelConditioning, to device: String, rateOnly: Bool = false
    ) throws(TrafficControlError) -> ApplyReport {
        var conditioning = requested
        var leftOut: String?
        if rateOnly {
            (conditioning, leftOut) = requested.rateOnly
        }
        let link = try self.device(device)
        let upTree = conditioning.tree(for: .uplink)
        let downTree = conditioning.tree(for: .downlink)
        try wrap { () throws in
            if upTree != nil, let root = try rootQdisc(ifindex: link.ifindex), root.handle != 0,
                root.handle != TrafficHandle.root
            {
                throw TrafficControlError.foreignRootQdisc(
                    device: device, kind: root.kind, handle: TrafficHandle.text(root.handle))
            }
        }
        if conditioning.needsNetem, try !kernelHasNetem() {
            throw .noNetem
        }
        let previous = try readBack(device)
        var journal = Journal()
        do {
            try wrap { () throws in
                try reconcile(upTree, on: link, journal: &journal)
                try reconcileDownlink(downTree, of: link, journal: &journal)
            }
        } catch {
            journal.rollBack()
            if let previous {
                var ignored = Journal()
                _ = try? wrap { () throws in
                    try reconcile(previous.tree(for: .uplink), on: link, journal: &ignored)
                    try reconcileDownlink(previous.tree(for: .downlink), of: link, journal: &ignored)
                }
            }
            throw error
        }
        return ApplyReport(
            applied: conditioning,
            ifbDevice: downTree == nil ? nil : TrafficHandle.ifbName(forIfindex: link.ifindex),
            leftOut: leftOut, replacedPrevious: previous != nil)
    }

    /// What linkcond applied to `device`, read back from the kernel; `nil` when linkcond applied nothing there.
    public func readBack(_ device: String) throws(TrafficControlError) -> KernelConditioning? {
        let link = try self.device(device)
        return try wrap { () throws -> KernelConditioning? in
            let uplink = try readTree(ifindex: link.ifindex)
            var downlink: TreeReading?
            let links = try NetlinkCache.links(socket)
            if let ifb = NetworkLink.named(TrafficHandle.ifbName(forIfindex: link.ifindex), in: links),
                try redirectFilter(on: link.ifindex) != nil
            {
                downlink = try readTree(ifindex: ifb.ifindex)
            }
            guard uplink != nil || downlink != nil else { return nil }
            return KernelConditioning(
                uplink: uplink?.shaping ?? KernelShaping(), downlink: downlink?.shaping ?? KernelShaping(),
                dnsDelay: uplink?.dnsDelay ?? .zero, match: uplink?.match ?? downlink?.match)
        }
    }

    /// Removes exactly what linkcond created on `device` and leaves every other qdisc and filter alone.
    ///
    /// - Returns: the objects removed, in words; empty when there was nothing of linkcond's.
    public func clear(_ device: String) throws(TrafficControlError) -> [String] {
        let link = try self.device(device)
        return try wrap { () throws -> [String] in
            var removed: [String] = []
            if let root = try rootQdisc(ifindex: link.ifindex), root.handle == TrafficHandle.root {
                try root.delete(socket)
                removed.append("root qdisc \(root.kind) \(TrafficHandle.text(root.handle)) on \(device)")
            }
            removed += try removeDownlink(of: link)
            return removed
        }
    }

    /// Whether this kernel can create a netem qdisc, tried on a throwaway ifb device so no real device changes.
    public func kernelHasNetem() throws(TrafficControlError) -> Bool {
        let name = "lc-probe-\(getpid() % 100_000)"
        return try wrap { () throws -> Bool in
            do {
                try NetworkLink.addIntermediateFunctionalBlock(
                    named: name, alias: "linkcond netem probe", socket: socket)
            } catch let error as NetlinkError where error.isNotFound || error.code == NLE_OPNOTSUPP {
                return true
            }
            defer { try? NetworkLink.delete(named: name, socket: socket) }
            let links = try NetlinkCache.links(socket)
            guard let probe = NetworkLink.named(name, in: links) else { return true }
            let netem = try Qdisc(
                kind: "netem", ifindex: probe.ifindex, parent: cnetlink_tc_root(), handle: TrafficHandle.root)
            rtnl_netem_set_delay(netem.raw, 1000)
            do {
                try netem.add(socket, flags: cnetlink_flags_create_exclusive())
            } catch let error as NetlinkError where error.isNotFound {
                return false
            }
            return true
        }
    }

    private func device(_ name: String) throws(TrafficControlError) -> NetworkLink {
        let links = try wrap { () throws in try NetlinkCache.links(socket) }
        guard let link = NetworkLink.named(name, in: links) else { throw .noSuchDevice(name) }
        return link
    }

    /// Runs `body`, turning libnl errors into the user's terms and letting `TrafficControlError`s through.
    private func wrap<T>(_ body: () throws -> T) throws(TrafficControlError) -> T {
        do {
            return try body()
        } catch let error as TrafficControlError {
            throw error
        } catch let error as NetlinkError {
            throw TrafficControlError(error, namespace: networkNamespace)
        } catch {
            fatalError("unexpected error \(error)")
        }
    }
}

/// Undo steps for the objects one `apply` created, run newest first when it fails.
struct Journal {
    private var undo: [() -> Void] = []

    mutating func created(_ step: @escaping () -> Void) { undo.append(step) }

    mutating func rollBack() {
        for step in undo.reversed() { step() }
        undo.removeAll()
    }
}
