import CNetlink
import LinkConditioner

/// One direction's tree as read back from the kernel.
struct TreeReading {
    var shaping: KernelShaping
    var dnsDelay: Duration
    var match: TrafficMatch?
}

extension TrafficControl {
    /// The device's root egress qdisc, or `nil` when it has none (or only the kernel's default, handle 0).
    func rootQdisc(ifindex: Int32) throws(NetlinkError) -> Qdisc? {
        let cache = try NetlinkCache.qdiscs(socket)
        return cache.map(Qdisc.init(retaining:)).first {
            $0.ifindex == ifindex && $0.parent == cnetlink_tc_root()
        }
    }

    /// The device's ingress-side qdisc ("ingress" or "clsact"), if any.
    func ingressQdisc(ifindex: Int32) throws(NetlinkError) -> Qdisc? {
        let cache = try NetlinkCache.qdiscs(socket)
        return cache.map(Qdisc.init(retaining:)).first {
            $0.ifindex == ifindex && $0.parent == cnetlink_tc_ingress()
        }
    }

    /// Where ingress filters attach: the ingress qdisc, or clsact's ingress hook.
    private func ingressFilterParent(_ qdisc: Qdisc) -> UInt32 {
        qdisc.kind == "clsact" ? cnetlink_tc_clsact_ingress() : 0xffff_0000
    }

    /// linkcond's ingress redirect filter on the device, if present.
    func redirectFilter(on ifindex: Int32) throws(NetlinkError) -> Classifier? {
        guard let ingress = try ingressQdisc(ifindex: ifindex) else { return nil }
        let cache = try NetlinkCache.filters(socket, ifindex: ifindex, parent: ingressFilterParent(ingress))
        return cache.map(Classifier.init(retaining:)).first { $0.priority == TrafficHandle.redirectPriority }
    }

    /// Makes the egress of `link` carry `tree` (or nothing of linkcond's when `tree` is `nil`), changing objects in place.
    func reconcile(_ tree: DirectionTree?, on link: NetworkLink, journal: inout Journal) throws(NetlinkError) {
        let ifindex = link.ifindex
        let root = try rootQdisc(ifindex: ifindex)
        let ours = root?.handle == TrafficHandle.root
        guard let tree else {
            if ours, let root { try root.delete(socket) }
            return
        }
        if !ours {
            let htb = try Qdisc(kind: "htb", ifindex: ifindex, parent: cnetlink_tc_root(), handle: TrafficHandle.root)
            try netlinkCall("set htb default class") { rtnl_htb_set_defcls(htb.raw, 1) }
            try htb.add(socket, flags: cnetlink_flags_create_exclusive())
            let socket = socket
            journal.created { try? htb.delete(socket) }
        }
        let existingClasses = Set(
            try NetlinkCache.classes(socket, ifindex: ifindex)
                .map { TrafficClass(retaining: $0).handle })
        for shapingClass in tree.classes {
            try addClass(shapingClass, on: link)
        }
        let existingFilters = try readFilters(ifindex: ifindex)
        if Set(existingFilters.map(\.spec)) != Set(tree.filters) {
            for filter in existingFilters { try? filter.classifier.delete(socket) }
            for filter in tree.filters { try addFilter(filter, ifindex: ifindex) }
        }
        let wanted = Set(tree.classes.map(\.handle))
        for handle in existingClasses where handle >> 16 == TrafficHandle.rootMajor && !wanted.contains(handle) {
            let stale = try TrafficClass(kind: "htb", ifindex: ifindex, parent: TrafficHandle.root, handle: handle)
            try stale.delete(socket)
        }
    }

    private func addClass(_ spec: DirectionTree.ShapingClass, on link: NetworkLink) throws(NetlinkError) {
        let ifindex = link.ifindex
        let htbClass = try TrafficClass(kind: "htb", ifindex: ifindex, parent: TrafficHandle.root, handle: spec.handle)
        rtnl_tc_set_link(htbClass.tc, link.raw)
        let bytesPerSecond = UInt64((spec.rate.bitsPerSecond / 8).rounded())
        try netlinkCall("set htb rate") { rtnl_htb_set_rate64(htbClass.raw, bytesPerSecond) }
        try netlinkCall("set htb ceil") { rtnl_htb_set_ceil64(htbClass.raw, bytesPerSecond) }
        try netlinkCall("set htb burst") { rtnl_htb_set_rbuffer(htbClass.raw, UInt32(spec.burstBytes)) }
        try netlinkCall("set htb cburst") { rtnl_htb_set_cbuffer(htbClass.raw, UInt32(spec.burstBytes)) }
        try htbClass.add(socket)

        let leaf: Qdisc
        switch spec.leaf {
        case .netem(let delay, let jitter, let loss, let limitPackets):
            leaf = try Qdisc(kind: "netem", ifindex: ifindex, parent: spec.handle, handle: spec.leafHandle)
            rtnl_netem_set_delay(leaf.raw, Int32(clamping: delay.microseconds))
            rtnl_netem_set_jitter(leaf.raw, Int32(clamping: jitter.microseconds))
            rtnl_netem_set_loss(leaf.raw, Int32(bitPattern: NetemProbability.raw(loss)))
            rtnl_netem_set_limit(leaf.raw, Int32(clamping: limitPackets))
        case .fifo(let limitBytes):
            leaf = try Qdisc(kind: "bfifo", ifindex: ifindex, parent: spec.handle, handle: spec.leafHandle)
            try netlinkCall("set bfifo limit") { rtnl_qdisc_fifo_set_limit(leaf.raw, Int32(clamping: limitBytes)) }
        }
        try leaf.add(socket)
    }

    private func addFilter(_ spec: DirectionTree.Filter, ifindex: Int32) throws(NetlinkError) {
        let filter = try Classifier(
            kind: "u32", ifindex: ifindex, parent: TrafficHandle.root, priority: spec.priority,
            protocolNumber: spec.protocolNumber)
        for key in spec.keys { try filter.addU32Key(key) }
        try netlinkCall("set u32 flowid") { rtnl_u32_set_classid(filter.raw, spec.flowid) }
        try netlinkCall("set u32 terminal") { rtnl_u32_set_cls_terminal(filter.raw) }
        try filter.add(socket)
    }

    /// linkcond's filters in the tree on `ifindex`, one per u32 node that carries keys.
    private func readFilters(ifindex: Int32) throws(NetlinkError) -> [(
        classifier: Classifier, spec: DirectionTree.Filter
    )] {
        let cache = try NetlinkCache.filters(socket, ifindex: ifindex, parent: TrafficHandle.root)
        var result: [(Classifier, DirectionTree.Filter)] = []
        for filter in cache.map(Classifier.init(retaining:)) {
            guard filter.kind == "u32" else { continue }
            let keys = filter.u32Keys
            var flowid: UInt32 = 0
            guard !keys.isEmpty, rtnl_u32_get_classid(filter.raw, &flowid) == 0 else { continue }
            let spec = DirectionTree.Filter(
                priority: filter.priority, protocolNumber: rtnl_cls_get_protocol(filter.raw), keys: keys, flowid: flowid
            )
            result.append((filter, spec))
        }
        return result
    }

    /// linkcond's tree on `ifindex` in profile terms, or `nil` if its root qdisc is not there.
    func readTree(ifindex: Int32) throws(NetlinkError) -> TreeReading? {
        guard let root = try rootQdisc(ifindex: ifindex), root.handle == TrafficHandle.root else { return nil }
        let qdiscs = try NetlinkCache.qdiscs(socket).map(Qdisc.init(retaining:)).filter { $0.ifindex == ifindex }
        let classes = try NetlinkCache.classes(socket, ifindex: ifindex).map(TrafficClass.init(retaining:))
        var shaping = KernelShaping()
        var mainDelay = Duration.zero
        var dnsDelay = Duration.zero
        for htbClass in classes {
            var rate: UInt64 = 0
            _ = rtnl_htb_get_rate64(htbClass.raw, &rate)
            let leaf = qdiscs.first { $0.parent == htbClass.handle }
            switch htbClass.handle {
            case TrafficHandle.shapingClass:
                let bitRate = BitRate(bitsPerSecond: Double(rate) * 8)
                shaping.rate = bitRate >= TrafficHandle.unlimitedRate ? nil : bitRate
                let burst = Int(rtnl_htb_get_rbuffer(htbClass.raw))
                let defaultBurst = KernelShaping(rate: shaping.rate).effectiveBurst
                shaping.burst = abs(burst - defaultBurst) <= max(16, defaultBurst / 100) ? nil : ByteCount(bytes: burst)
                if let leaf { Self.read(leaf, into: &shaping) }
                mainDelay = shaping.delay
            case TrafficHandle.dnsClass:
                if let leaf, leaf.kind == "netem" {
                    dnsDelay = .microseconds(Int64(rtnl_netem_get_delay(leaf.raw)))
                }
            default:
                continue
            }
        }
        let filters = try readFilters(ifindex: ifindex)
        let matchKeys = filters.filter { $0.spec.flowid == TrafficHandle.shapingClass }.map(\.spec.keys)
        let direction: TrafficDirection = matchKeys.first?.first?.offset == 12 ? .downlink : .uplink
        return TreeReading(
            shaping: shaping, dnsDelay: dnsDelay > mainDelay ? dnsDelay - mainDelay : .zero,
            match: TrafficMatch(keySets: matchKeys, direction: direction))
    }

    private static func read(_ leaf: Qdisc, into shaping: inout KernelShaping) {
        switch leaf.kind {
        case "netem":
            shaping.delay = .microseconds(Int64(max(0, rtnl_netem_get_delay(leaf.raw))))
            shaping.jitter = .microseconds(Int64(max(0, rtnl_netem_get_jitter(leaf.raw))))
            let loss = rtnl_netem_get_loss(leaf.raw)
            shaping.loss = loss == -NLE_NOATTR ? .zero : NetemProbability.percentage(UInt32(bitPattern: loss))
            shaping.netemLimit = Int(max(0, rtnl_netem_get_limit(leaf.raw)))
        case "bfifo":
            shaping.queue = ByteCount(bytes: Int(max(0, rtnl_qdisc_fifo_get_limit(leaf.raw))))
        default:
            break
        }
    }

    /// Makes the downlink of `link` carry `tree`: ifb device, its tree, the ingress qdisc and the redirect filter.
    func reconcileDownlink(_ tree: DirectionTree?, of link: NetworkLink, journal: inout Journal) throws(NetlinkError) {
        guard let tree else {
            _ = try removeDownlink(of: link)
            return
        }
        let socket = socket
        let ifbName = TrafficHandle.ifbName(forIfindex: link.ifindex)
        var ifb = NetworkLink.named(ifbName, in: try NetlinkCache.links(socket))
        let existingIngress = try ingressQdisc(ifindex: link.ifindex)
        if ifb == nil {
            let ownership = existingIngress == nil ? IngressOwnership.created : .shared
            try NetworkLink.addIntermediateFunctionalBlock(
                named: ifbName, alias: ownership.alias(device: link.name), socket: socket)
            journal.created { try? NetworkLink.delete(named: ifbName, socket: socket) }
            ifb = NetworkLink.named(ifbName, in: try NetlinkCache.links(socket))
        }
        guard let ifb else {
            throw NetlinkError(code: NLE_OBJ_NOTFOUND, operation: "find \(ifbName) after creating it")
        }
        try reconcile(tree, on: ifb, journal: &journal)

        let ingress: Qdisc
        if let existingIngress {
            ingress = existingIngress
        } else {
            ingress = try Qdisc(
                kind: "ingress", ifindex: link.ifindex, parent: cnetlink_tc_ingress(), handle: 0xffff_0000)
            try ingress.add(socket, flags: cnetlink_flags_create_exclusive())
            journal.created { try? ingress.delete(socket) }
        }
        if try redirectFilter(on: link.ifindex) == nil {
            let filter = try Classifier(
                kind: "u32", ifindex: link.ifindex, parent: ingressFilterParent(ingress),
                priority: TrafficHandle.redirectPriority, protocolNumber: EthernetProtocol.all)
            try filter.addU32Key(U32Key(value: 0, mask: 0, offset: 0))
            try netlinkCall("set u32 terminal") { rtnl_u32_set_cls_terminal(filter.raw) }
            let redirect = try RedirectAction(toIfindex: ifb.ifindex)
            try netlinkCall("attach redirect to \(ifbName)") { rtnl_u32_add_action(filter.raw, redirect.raw) }
            try filter.add(socket)
            journal.created { try? filter.delete(socket) }
        }
    }

    /// Removes the redirect filter, the ingress qdisc if linkcond created it and nothing else uses it, and the ifb device.
    func removeDownlink(of link: NetworkLink) throws(NetlinkError) -> [String] {
        var removed: [String] = []
        let ifbName = TrafficHandle.ifbName(forIfindex: link.ifindex)
        let ifb = NetworkLink.named(ifbName, in: try NetlinkCache.links(socket))
        if let filter = try redirectFilter(on: link.ifindex) {
            try filter.delete(socket)
            removed.append("ingress redirect filter (prio \(TrafficHandle.redirectPriority)) on \(link.name)")
        }
        if let ifb, ifb.kind == "ifb" {
            if IngressOwnership(alias: ifb.alias) == .created, let ingress = try ingressQdisc(ifindex: link.ifindex) {
                let others = try NetlinkCache.filters(
                    socket, ifindex: link.ifindex, parent: ingressFilterParent(ingress))
                if others.isEmpty {
                    try ingress.delete(socket)
                    removed.append("ingress qdisc on \(link.name)")
                }
            }
            try NetworkLink.delete(named: ifbName, socket: socket)
            removed.append("ifb device \(ifbName)")
        }
        return removed
    }
}

/// Whether linkcond created a device's ingress qdisc, recorded in the ifb device's alias so `clear` knows.
enum IngressOwnership: Equatable {
    case created
    case shared

    func alias(device: String) -> String {
        "linkcond downlink of \(device); ingress qdisc " + (self == .created ? "created by linkcond" : "shared")
    }

    init?(alias: String?) {
        guard let alias, alias.hasPrefix("linkcond downlink") else { return nil }
        self = alias.hasSuffix("created by linkcond") ? .created : .shared
    }
}

/// netem's probabilities are fractions of 2³² − 1.
enum NetemProbability {
    static func raw(_ percentage: Percentage) -> UInt32 {
        UInt32((min(max(percentage.probability, 0), 1) * Double(UInt32.max)).rounded())
    }

    static func percentage(_ raw: UInt32) -> Percentage {
        Percentage((Double(raw) / Double(UInt32.max) * 100 * 1_000_000).rounded() / 1_000_000)
    }
}

/// Counters of the qdiscs linkcond built for one direction, summed over its leaves.
public struct DirectionCounters: Hashable, Sendable {
    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    /// Packets dropped by netem's loss or by a full queue.
    public var drops: UInt64 = 0
}

extension TrafficControl {
    /// The packets, bytes and drops of linkcond's leaf qdiscs on `device` (uplink) and its ifb (downlink).
    public func counters(_ device: String) throws(TrafficControlError) -> (
        uplink: DirectionCounters?, downlink: DirectionCounters?
    ) {
        let links: NetlinkCache
        do { links = try NetlinkCache.links(socket) } catch {
            throw TrafficControlError(error, namespace: networkNamespace)
        }
        guard let link = NetworkLink.named(device, in: links) else { throw .noSuchDevice(device) }
        let ifb = NetworkLink.named(TrafficHandle.ifbName(forIfindex: link.ifindex), in: links)
        do {
            let qdiscs = try NetlinkCache.qdiscs(socket).map(Qdisc.init(retaining:))
            func sum(_ ifindex: Int32?) -> DirectionCounters? {
                guard let ifindex, qdiscs.contains(where: { $0.ifindex == ifindex && $0.handle == TrafficHandle.root })
                else {
                    return nil
                }
                var counters = DirectionCounters()
                for leaf in qdiscs where leaf.ifindex == ifindex && leaf.parent >> 16 == TrafficHandle.rootMajor {
                    counters.packets += rtnl_tc_get_stat(leaf.tc, RTNL_TC_PACKETS)
                    counters.bytes += rtnl_tc_get_stat(leaf.tc, RTNL_TC_BYTES)
                    counters.drops += rtnl_tc_get_stat(leaf.tc, RTNL_TC_DROPS)
                }
                return counters
            }
            return (sum(link.ifindex), sum(ifb?.ifindex))
        } catch {
            throw TrafficControlError(error, namespace: networkNamespace)
        }
    }
}
