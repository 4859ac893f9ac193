import CNetlink

/// An error reported by libnl, named by the operation that failed.
///
/// Its codes are NLE_* values (libnl's own numbering), not errno values; `nl_geterror` gives their text.
public struct NetlinkError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The NLE_* code, always positive.
    public var code: Int32
    /// What linkcond was doing, such as "add qdisc htb 1c0d: on eth0".
    public var operation: String

    public init(code: Int32, operation: String) {
        self.code = code < 0 ? -code : code
        self.operation = operation
    }

    /// NLE_PERM: the kernel refused because the caller lacks CAP_NET_ADMIN.
    public var isPermissionDenied: Bool { code == NLE_PERM }
    /// NLE_OBJ_NOTFOUND (ENOENT): no such object, or no such qdisc kind in this kernel.
    public var isNotFound: Bool { code == NLE_OBJ_NOTFOUND }

    public var description: String {
        let reason = String(cString: nl_geterror(code))
        if isPermissionDenied { return "\(operation): \(reason): needs CAP_NET_ADMIN (run as root)" }
        return "\(operation): \(reason)"
    }
}

/// Runs one libnl call that returns 0 or a negative NLE_* code, throwing the code with `operation`'s name.
@discardableResult
func netlinkCall(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(NetlinkError) -> Int32 {
    let result = call()
    if result < 0 { throw NetlinkError(code: result, operation: operation()) }
    return result
}

/// Why `linkcond tc` could not condition, inspect or clear a device, in the user's words.
public enum TrafficControlError: Error, Equatable, CustomStringConvertible, Sendable {
    /// No network device has this name in the namespace linkcond runs in.
    case noSuchDevice(String)
    /// The kernel refused a change: the process lacks CAP_NET_ADMIN in the network namespace named `namespace`
    /// (nil: its own).
    case needsNetAdmin(operation: String, namespace: String? = nil)
    /// The kernel refused to let the process enter the named network namespace: it lacks CAP_SYS_ADMIN.
    case needsSysAdmin(namespace: String)
    /// The kernel has no sch_netem, and the profile needs delay, jitter or loss.
    case noNetem
    /// The device's root qdisc was installed by someone else; linkcond will not replace it.
    case foreignRootQdisc(device: String, kind: String, handle: String)
    /// A named network namespace could not be entered.
    case namespaceUnavailable(name: String, reason: String)
    /// Any other libnl failure.
    case netlink(NetlinkError)

    public var description: String {
        switch self {
        case .noSuchDevice(let name):
            return "no network device named \"\(name)\" (see `ip link show`)"
        case .needsNetAdmin(let operation, nil):
            return "\(operation): permission denied: linkcond needs CAP_NET_ADMIN to change qdiscs (run as root)"
        case .needsNetAdmin(let operation, let namespace?):
            return "\(operation): permission denied: linkcond needs CAP_NET_ADMIN in network namespace "
                + "\"\(namespace)\" to change its qdiscs (run as root)"
        case .needsSysAdmin(let namespace):
            return
                "cannot enter network namespace \"\(namespace)\": permission denied: linkcond needs CAP_SYS_ADMIN to "
                + "enter it, then CAP_NET_ADMIN in it to change its qdiscs (run as root)"
        case .noNetem:
            return "this kernel has no netem qdisc: delay, jitter and loss cannot be applied in the kernel; "
                + "load sch_netem, or use the proxy (or pass --rate-only to apply only the bandwidth)"
        case .foreignRootQdisc(let device, let kind, let handle):
            return "\(device) already has a root qdisc linkcond did not create (\(kind) \(handle)); linkcond leaves it "
                + "alone. Remove it with `tc qdisc del dev \(device) root`, or use a profile that leaves the uplink unshaped"
        case .namespaceUnavailable(let name, let reason):
            return "cannot enter network namespace \"\(name)\": \(reason)"
        case .netlink(let error):
            return error.description
        }
    }

    /// Translates a libnl failure into the user's terms: missing permission (in the named network namespace, or
    /// nil for the process's own), or the raw libnl message.
    init(_ error: NetlinkError, namespace: String? = nil) {
        if error.isPermissionDenied {
            self = .needsNetAdmin(operation: error.operation, namespace: namespace)
        } else {
            self = .netlink(error)
        }
    }
}
