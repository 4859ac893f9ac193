// The namespaces `linkcond exec` runs a program in, and the single-threaded helper that builds them.
//
// linkcond cannot unshare a user namespace once its threads run, so it starts itself again as a helper
// (`linkcond __exec-namespace`), as slirp4netns and pasta keep setup in a small process of its own. The helper
// unshares network and mount namespaces (and a user namespace mapping the caller to root when not root), then
// builds one of two modes:
//   - tun (faithful): the program's namespace has loopback up and a TUN device `lc0` (198.18.0.1, fd0c:1c0d::1) as
//     default route for IPv4 and IPv6; a second network namespace, the gateway, has TUN device `lc1` (198.18.0.2,
//     fd0c:1c0d::2), a TCP listener per family, and an nftables rule redirecting every TCP connection arriving on
//     `lc1` to them. tcp_congestion_control is set in both. linkcond moves packets between the TUN devices.
//   - proxy (where /dev/net/tun cannot be opened): the program's namespace has a veth pair whose end `lc0` carries
//     the same addresses and default routes, so that connect() to any address is routed; nftables redirects every
//     TCP connection not to the program's own addresses to a listener per family, and UDP to port 53 to a DNS
//     socket, both opened in the namespace on its loopback; everything else routed out of `lc0` is dropped, so a
//     send fails at once with EPERM ("Operation not permitted"). linkcond relays the redirected connections
//     through the proxy's TCP model.
// Then it bind-mounts a resolv.conf naming 198.18.0.2 over /etc/resolv.conf, unshares a PID namespace (last: the
// configuration programs it runs must not become the namespace's init), sends the descriptors to linkcond over a
// Unix socket (SCM_RIGHTS), waits for "go", and runs the program under the namespace's init (`ProgramTree`), so
// that nothing the program starts outlives linkcond.

/// Addresses and names shared by the helper and linkcond's packet path.
public enum ExecNamespace {
    public static let programAddressV4: [UInt8] = [198, 18, 0, 1]
    public static let gatewayAddressV4: [UInt8] = [198, 18, 0, 2]
    public static let programAddressV6: [UInt8] = [0xfd, 0x0c, 0x1c, 0x0d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    public static let gatewayAddressV6: [UInt8] = [0xfd, 0x0c, 0x1c, 0x0d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    /// The hidden subcommand that runs the helper.
    public static let helperCommand = "__exec-namespace"

    /// How the program's traffic leaves its namespace: `auto` is `tun` when /dev/net/tun opens, else `proxy`.
    public enum Mode: String, Sendable, CaseIterable {
        case auto
        /// TUN devices: every packet crosses the link model, so the program's own kernel TCP runs over it.
        case tun
        /// nftables redirects TCP and DNS to linkcond's sockets in the namespace; the proxy's TCP model shapes the
        /// bytes, and other UDP is not carried.
        case proxy
    }

    /// What the helper hands over.
    public enum Plumbing: Sendable, Hashable {
        /// The program's and the gateway's TUN devices, and the gateway's TCP listeners.
        case tunnel(programTun: Int32, gatewayTun: Int32, listenerV4: Int32, listenerV6: Int32)
        /// The TCP listeners and the DNS socket in the program's namespace; `tunRefusal` says why TUN could not be
        /// used, nil when proxy mode was asked for.
        case redirect(listenerV4: Int32, listenerV6: Int32, dnsQueries: Int32, tunRefusal: String?)
        /// `linkcond attach`'s sockets in the namespace it conditions, made by linkcond itself; no IPv6 listener
        /// when the namespace has no IPv6 loopback, no DNS socket when DNS is not redirected (no resolver to
        /// forward to).
        case attached(listenerV4: Int32, listenerV6: Int32?, dnsQueries: Int32?)

        var descriptors: [Int32] {
            switch self {
            case .tunnel(let a, let b, let c, let d): [a, b, c, d]
            case .redirect(let a, let b, let c, _): [a, b, c]
            case .attached(let a, let b, let c): [a] + (b.map { [$0] } ?? []) + (c.map { [$0] } ?? [])
            }
        }

        /// The helper's message to linkcond: `ok tun`, or `ok proxy` and the reason TUN was not used.
        var message: String {
            switch self {
            case .tunnel: "ok tun"
            case .redirect(_, _, _, let refusal): "ok proxy" + (refusal.map { "\n" + $0 } ?? "")
            case .attached: "ok attached"
            }
        }

        /// The plumbing a helper's `message` and descriptors describe, nil when they do not match.
        init?(message: String, descriptors fds: [Int32]) {
            let lines = message.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            switch lines.first {
            case "ok tun" where fds.count == 4:
                self = .tunnel(programTun: fds[0], gatewayTun: fds[1], listenerV4: fds[2], listenerV6: fds[3])
            case "ok proxy" where fds.count == 3:
                self = .redirect(
                    listenerV4: fds[0], listenerV6: fds[1], dnsQueries: fds[2],
                    tunRefusal: lines.count > 1 ? String(lines[1]) : nil)
            default:
                return nil
            }
        }
    }

    /// Runs the helper: `__exec-namespace SOCKET CONGESTION FORWARDS MODE -- PROGRAM ARGS…`, FORWARDS being ports
    /// joined by commas or `-`. Never returns: it runs the program in a PID namespace of its own (`ProgramTree`)
    /// and exits with its status, or exits 1 after telling linkcond what failed (126/127 when the program cannot
    /// run).
    public static func runHelper(_ arguments: [String]) -> Never {
        guard arguments.count >= 6, let socket = Int32(arguments[0]), arguments[4] == "--",
            let forwards = parseForwards(arguments[2]), let mode = Mode(rawValue: arguments[3])
        else {
            Namespaces.writeErrorLine("linkcond: \(helperCommand) is internal to linkcond exec")
            Namespaces.exit(2)
        }
        let program = Array(arguments[5...])
        do {
            try Namespaces.dieWithParent()
            let plumbing = try build(mode: mode, congestion: arguments[1], forwards: forwards)
            do {
                try Namespaces.unshare(.pid)
            } catch {
                throw SetupFailure(
                    description:
                        "cannot create a PID namespace (\(error)), which ends everything the program starts with linkcond: the kernel needs CONFIG_PID_NS, and user.max_pid_namespaces > 0"
                )
            }
            try Namespaces.send(Array(plumbing.message.utf8), descriptors: plumbing.descriptors, over: socket)
            plumbing.descriptors.forEach(Namespaces.close)
        } catch {
            try? Namespaces.send(Array("\(error)".utf8), descriptors: [], over: socket)
            Namespaces.exit(1)
        }
        guard let (go, _) = try? Namespaces.receive(over: socket), go == Array("go".utf8) else { Namespaces.exit(1) }
        Namespaces.close(socket)
        ProgramTree.run(program)
    }

    /// A step of the set-up that failed, said in the user's words.
    struct SetupFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// `--forward`'s ports as the helper receives them: comma-separated, or `-` for none.
    public static func parseForwards(_ text: String) -> [UInt16]? {
        if text == "-" { return [] }
        let ports = text.split(separator: ",").map { UInt16($0.trimmingCharacters(in: .whitespaces)) }
        guard !ports.isEmpty, ports.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
        return ports.compactMap { $0 }
    }

    private static func build(mode: Mode, congestion: String, forwards: [UInt16]) throws -> Plumbing {
        let root = Namespaces.effectiveUserID == 0
        let (uid, gid) = (Namespaces.effectiveUserID, Namespaces.effectiveGroupID)
        do {
            try Namespaces.unshare(root ? [.network, .mount] : [.user, .network, .mount])
        } catch {
            throw SetupFailure(
                description:
                    "cannot create a user and network namespace (\(error)). Unprivileged user namespaces must be allowed: sysctl kernel.unprivileged_userns_clone=1 (Debian), user.max_user_namespaces > 0; on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for linkcond"
            )
        }
        if !root {
            try Namespaces.writeFile("/proc/self/setgroups", "deny")
            try Namespaces.writeFile("/proc/self/uid_map", "0 \(uid) 1")
            try Namespaces.writeFile("/proc/self/gid_map", "0 \(gid) 1")
        }
        try forwardNothing()
        var tunRefusal: String?
        if mode != .proxy {
            var programTun: Int32?
            do {
                programTun = try Namespaces.openTun(named: "lc0")
            } catch {
                guard mode == .auto else {
                    throw SetupFailure(
                        description:
                            "cannot create a TUN device (\(error)): /dev/net/tun must exist and be readable and writable by you (modprobe tun; chmod 0666 /dev/net/tun), or use --mode proxy"
                    )
                }
                tunRefusal = "\(error)"
            }
            if let programTun {
                return try buildTunnel(programTun: programTun, congestion: congestion, forwards: forwards)
            }
        }
        return try buildRedirect(forwards: forwards, tunRefusal: tunRefusal)
    }

    /// The faithful mode, in the program's namespace whose TUN device `programTun` is open.
    private static func buildTunnel(programTun: Int32, congestion: String, forwards: [UInt16]) throws -> Plumbing {
        let programNetwork = try Namespaces.openCurrentNetwork()
        defer { Namespaces.close(programNetwork) }
        try run("ip", "link", "set", "lo", "up")
        try configure("lc0", v4: programAddressV4, v6: programAddressV6)
        try run("ip", "route", "add", "default", "dev", "lc0")
        try run("ip", "-6", "route", "add", "default", "dev", "lc0")
        setCongestion(congestion, report: true)
        if !forwards.isEmpty { try forward(forwards) }
        try Namespaces.unshare(.network)
        let gatewayTun = try Namespaces.openTun(named: "lc1")
        try run("ip", "link", "set", "lo", "up")
        try configure("lc1", v4: gatewayAddressV4, v6: gatewayAddressV6)
        setCongestion(congestion, report: false)
        let listenerV4 = try Socket.listening(on: SocketAddress(numericHost: "0.0.0.0", port: 0)!)
        let listenerV6 = try Socket.listening(on: SocketAddress(numericHost: "::", port: 0)!)
        let (portV4, portV6) = (try listenerV4.localAddress().port, try listenerV6.localAddress().port)
        try runNft(
            """
            add table inet linkcond
            add chain inet linkcond divert { type nat hook prerouting priority dstnat; }
            add rule inet linkcond divert iifname "lc1" meta nfproto ipv4 meta l4proto tcp redirect to :\(portV4)
            add rule inet linkcond divert iifname "lc1" meta nfproto ipv6 meta l4proto tcp redirect to :\(portV6)
            """)
        try Namespaces.enterNetwork(programNetwork)
        try Namespaces.bindText("nameserver \(AddressBytes.format(gatewayAddressV4))\n", over: "/etc/resolv.conf")
        return .tunnel(
            programTun: programTun, gatewayTun: gatewayTun,
            listenerV4: listenerV4.descriptor, listenerV6: listenerV6.descriptor)
    }

    /// The proxy mode: routes out of a veth end that leads nowhere, nftables redirecting TCP and DNS to sockets on
    /// the namespace's loopback, and everything else routed out dropped at once.
    private static func buildRedirect(forwards: [UInt16], tunRefusal: String?) throws -> Plumbing {
        try run("ip", "link", "set", "lo", "up")
        do {
            try run("ip", "link", "add", "lc0", "type", "veth", "peer", "name", "lc0p")
        } catch {
            throw SetupFailure(
                description: "cannot create the namespace's interface (\(error)): the kernel needs veth (modprobe veth)"
            )
        }
        try run("ip", "link", "set", "lc0p", "up")
        try configure("lc0", v4: programAddressV4, v6: programAddressV6)
        try run("ip", "route", "add", "default", "dev", "lc0")
        try run("ip", "-6", "route", "add", "default", "dev", "lc0")
        let listenerV4 = try Socket.listening(on: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
        let listenerV6 = try Socket.listening(on: SocketAddress(numericHost: "::1", port: 0)!)
        let dnsQueries = try Socket.datagram(boundTo: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
        let (portV4, portV6, portDNS) = (
            try listenerV4.localAddress().port, try listenerV6.localAddress().port,
            try dnsQueries.localAddress().port
        )
        let (program4, program6) = (AddressBytes.format(programAddressV4), AddressBytes.format(programAddressV6))
        var redirect = RedirectRules(table: "linkcond", tcpPortV4: portV4, tcpPortV6: portV6, dnsPort: portDNS)
        if !forwards.isEmpty {
            let list = forwards.map(String.init).joined(separator: ", ")
            redirect.leading = ["meta nfproto ipv4 ip daddr 127.0.0.1 tcp dport { \(list) } redirect to :\(portV4)"]
        }
        redirect.bypass = ["ip daddr { 127.0.0.0/8, \(program4) }", "ip6 daddr { ::1, \(program6) }"]
        let rules =
            redirect.commands + [
                "add chain inet linkcond seal { type filter hook output priority 0; }",
                "add rule inet linkcond seal oifname \"lc0\" ct status dnat accept",
                "add rule inet linkcond seal oifname \"lc0\" drop",
            ]
        try runNft(rules.joined(separator: "\n"))
        try Namespaces.bindText("nameserver \(AddressBytes.format(gatewayAddressV4))\n", over: "/etc/resolv.conf")
        return .redirect(
            listenerV4: listenerV4.descriptor, listenerV6: listenerV6.descriptor, dnsQueries: dnsQueries.descriptor,
            tunRefusal: tunRefusal)
    }

    /// Applies nftables `rules` (one command a line), saying what to install when nft is missing or fails.
    private static func runNft(_ rules: String, purpose: String? = nil) throws {
        do {
            try run("nft", rules.replacingOccurrences(of: "\n", with: "; "))
        } catch {
            throw SetupFailure(
                description:
                    "\(purpose.map { $0 + ": " } ?? "")nftables: \(error) (install the nftables package: apt-get install nftables)"
            )
        }
    }

    /// Makes 127.0.0.1:PORT inside reach the gateway's PORT (the host's 127.0.0.1:PORT) across the link: a DNAT
    /// on locally made packets, loopback-sourced packets allowed out of lc0 (route_localnet) and given lc0's
    /// address.
    private static func forward(_ ports: [UInt16]) throws {
        let list = ports.map(String.init).joined(separator: ", ")
        let rules = """
            add table ip linkcond
            add chain ip linkcond forward { type nat hook output priority -100; }
            add rule ip linkcond forward ip daddr 127.0.0.1 meta l4proto { tcp, udp } th dport { \(list) } dnat to \(AddressBytes.format(gatewayAddressV4))
            add chain ip linkcond source { type nat hook postrouting priority 100; }
            add rule ip linkcond source oifname "lc0" ip saddr 127.0.0.0/8 snat to \(AddressBytes.format(programAddressV4))
            """
        try runNft(rules, purpose: "--forward")
        for device in ["all", "lc0"] {
            try Namespaces.writeFile("/proc/sys/net/ipv4/conf/\(device)/route_localnet", "1")
        }
    }

    /// Turns IP forwarding off in the program's namespace. A new namespace copies the host's IPv4 settings, and a
    /// host running a container engine forwards, so the namespace would route between its interfaces.
    /// Where /proc/sys cannot be written (a container's is read-only) but forwarding is off already, that is enough.
    private static func forwardNothing() throws {
        for path in ["/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"] {
            do {
                try Namespaces.writeFile(path, "0")
            } catch {
                guard Namespaces.readLine(path) != "0" else { continue }
                throw SetupFailure(
                    description:
                        "cannot turn IP forwarding off in the program's namespace: \(path): \(error). In a container, /proc/sys is read-only: run it with --security-opt unmask=/proc/sys (podman), --security-opt systempaths=unconfined (Docker)"
                )
            }
        }
    }

    private static func configure(_ device: String, v4: [UInt8], v6: [UInt8]) throws {
        try run("ip", "addr", "add", AddressBytes.format(v4) + "/30", "dev", device)
        try run("ip", "-6", "addr", "add", AddressBytes.format(v6) + "/64", "dev", device, "nodad")
        try run("ip", "link", "set", device, "txqueuelen", "4096", "up")
    }

    /// Sets the namespace's TCP congestion control. A kernel that does not allow it in new namespaces
    /// (net.ipv4.tcp_allowed_congestion_control) keeps its default, and the helper says which on stderr.
    private static func setCongestion(_ name: String, report: Bool) {
        let path = "/proc/sys/net/ipv4/tcp_congestion_control"
        if Namespaces.readLine(path) == name { return }
        do {
            try Namespaces.writeFile(path, name)
        } catch {
            guard report else { return }
            let allowed = Namespaces.readLine("/proc/sys/net/ipv4/tcp_allowed_congestion_control") ?? "?"
            let current = Namespaces.readLine(path) ?? "?"
            Namespaces.writeErrorLine(
                "linkcond exec: tcp.congestion \(name) is not allowed in new namespaces here (net.ipv4.tcp_allowed_congestion_control = \(allowed)); the program's TCP uses \(current)"
            )
        }
    }

    /// Runs a configuration program (iproute2's `ip`, `nft`) found in the usual system directories and waits.
    private static func run(_ arguments: String...) throws {
        let directories = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        guard let path = directories.map({ $0 + "/" + arguments[0] }).first(where: Namespaces.isExecutable) else {
            throw SetupFailure(
                description: "\(arguments[0]) is not installed (looked in \(directories.joined(separator: ", ")))")
        }
        let pid = try Namespaces.spawn(path, arguments)
        let status = Namespaces.waitForChild(pid) ?? -1
        guard status == 0 else {
            throw SetupFailure(description: "\(arguments.joined(separator: " ")) exited with status \(status)")
        }
    }
}

/// The nftables commands that send a network namespace's new TCP connections and DNS queries to linkcond's sockets
/// on its loopback, for `exec`'s proxy mode and for `attach`.
///
/// One chain in the nat `output` hook, since the connections are made by the namespace's own programs (prerouting
/// sees only packets arriving from elsewhere): first the `leading` rules, then a `return` for each `bypass` match
/// (those connections go their own way), then a redirect of every other TCP connection to the listener of its
/// family, and of UDP to port 53 over IPv4 to the DNS socket. The kernel keeps each redirected connection's
/// original destination in conntrack, where linkcond reads it (SO_ORIGINAL_DST).
public struct RedirectRules: Sendable, Hashable {
    /// The table's name, in the `inet` family.
    public var table: String
    public var tcpPortV4: UInt16
    /// nil when the namespace has no IPv6 loopback to listen on: IPv6 connections are then not redirected.
    public var tcpPortV6: UInt16?
    /// nil when DNS is not redirected (`attach` without a resolver to forward to): it then flows unconditioned.
    public var dnsPort: UInt16?
    /// Rules (without `add rule …`) that come before the bypass.
    public var leading: [String] = []
    /// nftables matches whose connections are not redirected, such as `ip daddr 10.0.0.0/8` or `meta mark 0x1`.
    public var bypass: [String] = []
    /// Whether the kernel removes the table when the nft process that made it ends (`flags owner`, Linux 5.12):
    /// `attach` keeps that process running for as long as it runs, so the rules cannot outlive linkcond.
    public var ownedByItsMaker = false

    public init(table: String, tcpPortV4: UInt16, tcpPortV6: UInt16?, dnsPort: UInt16?) {
        self.table = table
        self.tcpPortV4 = tcpPortV4
        self.tcpPortV6 = tcpPortV6
        self.dnsPort = dnsPort
    }

    /// The commands, one per element, that add the table (which must not exist) and its rules.
    public var commands: [String] {
        let rule = "add rule inet \(table) divert "
        var commands = [
            "add table inet \(table)" + (ownedByItsMaker ? " { flags owner; }" : ""),
            "add chain inet \(table) divert { type nat hook output priority -100; }",
        ]
        commands += leading.map { rule + $0 }
        commands += bypass.map { rule + $0 + " return" }
        commands.append(rule + "meta nfproto ipv4 meta l4proto tcp redirect to :\(tcpPortV4)")
        if let tcpPortV6 { commands.append(rule + "meta nfproto ipv6 meta l4proto tcp redirect to :\(tcpPortV6)") }
        if let dnsPort { commands.append(rule + "meta nfproto ipv4 udp dport 53 redirect to :\(dnsPort)") }
        return commands
    }
}
