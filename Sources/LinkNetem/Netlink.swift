import CNetlink
import Glibc

/// A connected NETLINK_ROUTE socket; every request linkcond makes goes through one.
///
/// The socket belongs to the network namespace it was opened in, so opening it inside a namespace
/// lets one process program devices there without moving its threads.
final class NetlinkSocket {
    let raw: OpaquePointer

    /// Allocates (and adopts) a socket and connects it, in the named namespace (`ip netns` name) or the current one.
    init(networkNamespace: String? = nil) throws(TrafficControlError) {
        guard let socket = nl_socket_alloc() else {
            throw .netlink(NetlinkError(code: NLE_NOMEM, operation: "allocate netlink socket"))
        }
        raw = socket
        if let networkNamespace {
            try Self.connect(socket, inNamespace: networkNamespace)
        } else {
            do { try netlinkCall("connect to rtnetlink") { nl_connect(socket, NETLINK_ROUTE) } } catch {
                throw TrafficControlError(error)
            }
        }
    }

    deinit { nl_socket_free(raw) }

    /// Connects `socket` from inside namespace `name`, then returns the calling thread to its own namespace.
    private static func connect(_ socket: OpaquePointer, inNamespace name: String) throws(TrafficControlError) {
        let own = cnetlink_open_readonly("/proc/thread-self/ns/net")
        let target = cnetlink_open_readonly("/var/run/netns/\(name)")
        defer {
            if own >= 0 { close(own) }
            if target >= 0 { close(target) }
        }
        guard own >= 0, target >= 0 else {
            throw .namespaceUnavailable(name: name, reason: String(cString: strerror(errno)))
        }
        guard cnetlink_enter_network_namespace(target) == 0 else {
            if errno == EPERM { throw .needsSysAdmin(namespace: name) }
            throw .namespaceUnavailable(name: name, reason: String(cString: strerror(errno)))
        }
        let result = nl_connect(socket, NETLINK_ROUTE)
        guard cnetlink_enter_network_namespace(own) == 0 else {
            fatalError("cannot return to this thread's own network namespace: \(String(cString: strerror(errno)))")
        }
        if result < 0 {
            throw TrafficControlError(
                NetlinkError(code: result, operation: "connect to rtnetlink in \(name)"), namespace: name)
        }
    }
}

/// A snapshot of the kernel's objects of one kind (links, qdiscs, classes or filters), freed with the cache.
final class NetlinkCache {
    let raw: OpaquePointer

    /// Adopts a cache that a libnl `*_alloc_cache` call returned.
    private init(adopting raw: OpaquePointer) { self.raw = raw }

    deinit { nl_cache_free(raw) }

    /// Every network device in the socket's namespace.
    static func links(_ socket: NetlinkSocket) throws(NetlinkError) -> NetlinkCache {
        var cache: OpaquePointer?
        try netlinkCall("list network devices") { rtnl_link_alloc_cache(socket.raw, AF_UNSPEC, &cache) }
        return NetlinkCache(adopting: cache!)
    }

    /// Every qdisc on every device.
    static func qdiscs(_ socket: NetlinkSocket) throws(NetlinkError) -> NetlinkCache {
        var cache: OpaquePointer?
        try netlinkCall("list qdiscs") { rtnl_qdisc_alloc_cache(socket.raw, &cache) }
        return NetlinkCache(adopting: cache!)
    }

    /// Every class on device `ifindex`.
    static func classes(_ socket: NetlinkSocket, ifindex: Int32) throws(NetlinkError) -> NetlinkCache {
        var cache: OpaquePointer?
        try netlinkCall("list classes") { rtnl_class_alloc_cache(socket.raw, ifindex, &cache) }
        return NetlinkCache(adopting: cache!)
    }

    /// Every filter attached to `parent` on device `ifindex`.
    static func filters(_ socket: NetlinkSocket, ifindex: Int32, parent: UInt32) throws(NetlinkError) -> NetlinkCache {
        var cache: OpaquePointer?
        try netlinkCall("list filters") { rtnl_cls_alloc_cache(socket.raw, ifindex, parent, &cache) }
        return NetlinkCache(adopting: cache!)
    }

    /// The cache's objects, each wrapped by `retain` (a retaining initializer) while the cache is still alive.
    func map<T>(_ retain: (OpaquePointer) -> T) -> [T] {
        withExtendedLifetime(self) {
            var result: [T] = []
            var object = nl_cache_get_first(raw)
            while let current = object {
                result.append(retain(current))
                object = nl_cache_get_next(current)
            }
            return result
        }
    }

    var isEmpty: Bool { withExtendedLifetime(self) { nl_cache_get_first(raw) == nil } }
}

/// One network device, as libnl's `rtnl_link`.
final class NetworkLink {
    let raw: OpaquePointer

    /// Adopts a reference the caller already holds (from `rtnl_link_alloc` or `rtnl_link_get_by_name`).
    init(adopting raw: OpaquePointer) { self.raw = raw }

    deinit { rtnl_link_put(raw) }

    /// The device named `name` in `cache`, or `nil`.
    static func named(_ name: String, in cache: NetlinkCache) -> NetworkLink? {
        rtnl_link_get_by_name(cache.raw, name).map(NetworkLink.init(adopting:))
    }

    var ifindex: Int32 { rtnl_link_get_ifindex(raw) }
    var name: String { rtnl_link_get_name(raw).map { String(cString: $0) } ?? "" }
    var kind: String? { rtnl_link_get_type(raw).map { String(cString: $0) } }
    var alias: String? { rtnl_link_get_ifalias(raw).map { String(cString: $0) } }

    /// Creates an ifb device that is up from the start and carries `alias`.
    static func addIntermediateFunctionalBlock(
        named name: String, alias: String, socket: NetlinkSocket
    ) throws(NetlinkError) {
        guard let link = rtnl_link_alloc() else { throw NetlinkError(code: NLE_NOMEM, operation: "allocate link") }
        let request = NetworkLink(adopting: link)
        try netlinkCall("set link type ifb") { rtnl_link_set_type(request.raw, "ifb") }
        rtnl_link_set_name(request.raw, name)
        rtnl_link_set_flags(request.raw, UInt32(IFF_UP))
        try netlinkCall("create ifb device \(name)") {
            rtnl_link_add(socket.raw, request.raw, cnetlink_flags_create_exclusive())
        }
        guard let created = NetworkLink.named(name, in: try NetlinkCache.links(socket)),
            let change = rtnl_link_alloc()
        else { throw NetlinkError(code: NLE_OBJ_NOTFOUND, operation: "find \(name) after creating it") }
        let changes = NetworkLink(adopting: change)
        rtnl_link_set_ifalias(changes.raw, alias)
        try netlinkCall("set alias of \(name)") { rtnl_link_change(socket.raw, created.raw, changes.raw, 0) }
    }

    /// Deletes the device named `name`.
    static func delete(named name: String, socket: NetlinkSocket) throws(NetlinkError) {
        guard let link = rtnl_link_alloc() else { throw NetlinkError(code: NLE_NOMEM, operation: "allocate link") }
        let request = NetworkLink(adopting: link)
        rtnl_link_set_name(request.raw, name)
        try netlinkCall("delete device \(name)") { rtnl_link_delete(socket.raw, request.raw) }
    }
}

/// Allocates a qdisc, class or filter (`noun`) with `allocate` and sets, through its `rtnl_tc` `view`, the kind
/// (which libnl needs before any kind-specific setter), device and parent. The caller adopts the returned reference;
/// if the kind is refused, the object is freed with `release` before the error is thrown.
private func newTrafficControlObject(
    _ noun: String, kind: String, ifindex: Int32, parent: UInt32,
    allocate: () -> OpaquePointer?, view: (OpaquePointer) -> OpaquePointer?, release: (OpaquePointer) -> Void
) throws(NetlinkError) -> OpaquePointer {
    guard let object = allocate() else { throw NetlinkError(code: NLE_NOMEM, operation: "allocate \(noun)") }
    let tc = view(object)
    do { try netlinkCall("set \(noun) kind \(kind)") { rtnl_tc_set_kind(tc, kind) } } catch {
        release(object)
        throw error
    }
    rtnl_tc_set_ifindex(tc, ifindex)
    rtnl_tc_set_parent(tc, parent)
    return object
}

/// Takes a reference of our own to an object a cache owns, for the wrapper's `deinit` to release.
private func retainedObject(_ raw: OpaquePointer) -> OpaquePointer {
    nl_object_get(raw)
    return raw
}

/// One queueing discipline, as libnl's `rtnl_qdisc`.
final class Qdisc {
    let raw: OpaquePointer

    /// Allocates (and adopts) an empty qdisc with its kind set, which libnl needs before any kind-specific setter.
    init(kind: String, ifindex: Int32, parent: UInt32, handle: UInt32) throws(NetlinkError) {
        raw = try newTrafficControlObject(
            "qdisc", kind: kind, ifindex: ifindex, parent: parent,
            allocate: rtnl_qdisc_alloc, view: cnetlink_qdisc_tc, release: rtnl_qdisc_put)
        rtnl_tc_set_handle(tc, handle)
    }

    /// Retains a qdisc that a cache owns.
    init(retaining raw: OpaquePointer) { self.raw = retainedObject(raw) }

    deinit { rtnl_qdisc_put(raw) }

    var tc: OpaquePointer { cnetlink_qdisc_tc(raw) }
    var ifindex: Int32 { rtnl_tc_get_ifindex(tc) }
    var handle: UInt32 { rtnl_tc_get_handle(tc) }
    var parent: UInt32 { rtnl_tc_get_parent(tc) }
    var kind: String { rtnl_tc_get_kind(tc).map { String(cString: $0) } ?? "" }

    /// Sends the qdisc to the kernel: created, or changed in place when one with its handle exists.
    func add(_ socket: NetlinkSocket, flags: Int32 = cnetlink_flags_create_replace()) throws(NetlinkError) {
        try netlinkCall("add qdisc \(kind) \(TrafficHandle.text(handle)) (parent \(TrafficHandle.text(parent)))") {
            rtnl_qdisc_add(socket.raw, raw, flags)
        }
    }

    func delete(_ socket: NetlinkSocket) throws(NetlinkError) {
        try netlinkCall("delete qdisc \(kind) \(TrafficHandle.text(handle))") { rtnl_qdisc_delete(socket.raw, raw) }
    }
}

/// One traffic class, as libnl's `rtnl_class`.
final class TrafficClass {
    let raw: OpaquePointer

    /// Allocates (and adopts) an empty class with its kind set.
    init(kind: String, ifindex: Int32, parent: UInt32, handle: UInt32) throws(NetlinkError) {
        raw = try newTrafficControlObject(
            "class", kind: kind, ifindex: ifindex, parent: parent,
            allocate: rtnl_class_alloc, view: cnetlink_class_tc, release: rtnl_class_put)
        rtnl_tc_set_handle(tc, handle)
    }

    /// Retains a class that a cache owns.
    init(retaining raw: OpaquePointer) { self.raw = retainedObject(raw) }

    deinit { rtnl_class_put(raw) }

    var tc: OpaquePointer { cnetlink_class_tc(raw) }
    var handle: UInt32 { rtnl_tc_get_handle(tc) }

    func add(_ socket: NetlinkSocket) throws(NetlinkError) {
        try netlinkCall("add class \(TrafficHandle.text(handle))") {
            rtnl_class_add(socket.raw, raw, cnetlink_flags_create_replace())
        }
    }

    func delete(_ socket: NetlinkSocket) throws(NetlinkError) {
        try netlinkCall("delete class \(TrafficHandle.text(handle))") { rtnl_class_delete(socket.raw, raw) }
    }
}

/// One filter (classifier), as libnl's `rtnl_cls`.
final class Classifier {
    let raw: OpaquePointer

    /// Allocates (and adopts) an empty filter with its kind, priority and protocol (host order, e.g. ETH_P_IP) set.
    init(kind: String, ifindex: Int32, parent: UInt32, priority: UInt16, protocolNumber: UInt16) throws(NetlinkError) {
        raw = try newTrafficControlObject(
            "filter", kind: kind, ifindex: ifindex, parent: parent,
            allocate: rtnl_cls_alloc, view: cnetlink_cls_tc, release: rtnl_cls_put)
        rtnl_cls_set_prio(raw, priority)
        rtnl_cls_set_protocol(raw, protocolNumber)
    }

    /// Retains a filter that a cache owns.
    init(retaining raw: OpaquePointer) { self.raw = retainedObject(raw) }

    deinit { rtnl_cls_put(raw) }

    var tc: OpaquePointer { cnetlink_cls_tc(raw) }
    var priority: UInt16 { rtnl_cls_get_prio(raw) }
    var kind: String { rtnl_tc_get_kind(tc).map { String(cString: $0) } ?? "" }

    func add(_ socket: NetlinkSocket) throws(NetlinkError) {
        try netlinkCall("add filter u32 prio \(priority)") {
            rtnl_cls_add(socket.raw, raw, cnetlink_flags_create_exclusive())
        }
    }

    /// Deletes every filter at this filter's parent and priority (the whole u32 instance, hash tables included).
    func delete(_ socket: NetlinkSocket) throws(NetlinkError) {
        let request = try Classifier(
            kind: kind, ifindex: rtnl_tc_get_ifindex(tc), parent: rtnl_tc_get_parent(tc), priority: priority,
            protocolNumber: 0)
        try netlinkCall("delete filter prio \(priority)") { rtnl_cls_delete(socket.raw, request.raw, 0) }
    }

    /// The u32 selector's keys in host byte order: value, mask and offset from the network header.
    var u32Keys: [U32Key] {
        var keys: [U32Key] = []
        var index: UInt8 = 0
        while index < 64 {
            var value: UInt32 = 0
            var mask: UInt32 = 0
            var offset: Int32 = 0
            var offsetMask: Int32 = 0
            guard rtnl_u32_get_key(raw, index, &value, &mask, &offset, &offsetMask) == 0 else { break }
            keys.append(U32Key(value: UInt32(bigEndian: value), mask: UInt32(bigEndian: mask), offset: Int(offset)))
            index += 1
        }
        return keys
    }

    /// Adds one 32-bit u32 key (host byte order) at `offset` bytes into the IP header.
    func addU32Key(_ key: U32Key) throws(NetlinkError) {
        try netlinkCall("add u32 key") { rtnl_u32_add_key_uint32(raw, key.value, key.mask, Int32(key.offset), 0) }
    }
}

/// A mirred action that redirects packets to another device's egress, as libnl's `rtnl_act`.
final class RedirectAction {
    let raw: OpaquePointer

    /// Allocates (and adopts) a "mirred egress redirect" to device `ifindex`; the packet is consumed (stolen).
    init(toIfindex ifindex: Int32) throws(NetlinkError) {
        guard let act = rtnl_act_alloc() else { throw NetlinkError(code: NLE_NOMEM, operation: "allocate action") }
        raw = act
        try netlinkCall("set action kind mirred") { rtnl_tc_set_kind(cnetlink_act_tc(act), "mirred") }
        try netlinkCall("set mirred action") { rtnl_mirred_set_action(act, TCA_EGRESS_REDIR) }
        try netlinkCall("set mirred policy") { rtnl_mirred_set_policy(act, TC_ACT_STOLEN) }
        try netlinkCall("set mirred device") { rtnl_mirred_set_ifindex(act, UInt32(ifindex)) }
    }

    deinit { rtnl_act_put(raw) }
}

/// One u32 selector key in host byte order.
struct U32Key: Hashable, Sendable {
    var value: UInt32
    var mask: UInt32
    /// Bytes from the start of the IP header; a multiple of 4.
    var offset: Int
}
