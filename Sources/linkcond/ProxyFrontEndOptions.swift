import ArgumentParser
import LinkConditioner

/// The SOCKS5 and HTTP proxy part of `linkcond run`: its default listener, credentials, exclusions and advice.
extension RunCommand {
    /// Whether no listener option was given, so the proxy front end starts on loopback by default.
    var startsDefaultProxy: Bool {
        listen.isEmpty && upstream.isEmpty && udpListen.isEmpty && dns.isEmpty && proxy.isEmpty && toxiproxy == nil
    }

    /// Checks `--proxy-user`, `--exclude`, and that a proxy off loopback was asked for with `--allow-remote`.
    func validateProxyFrontEnd() throws {
        for address in proxy where !allowRemote {
            if let endpoint = Endpoint(parsing: address), !Self.isLoopbackHost(endpoint.host) {
                throw ValidationError(
                    "--proxy \(address) would accept connections from other hosts and relay them anywhere: an open "
                        + "proxy others can use to reach your network or hide behind your address. Listen on 127.0.0.1, or add "
                        + "--allow-remote (with --proxy-user USER:PASS) if that is what you want.")
            }
        }
        if let proxyUser, ProxyCredentials(parsing: proxyUser) == nil {
            throw ValidationError(
                "--proxy-user \"\(proxyUser)\" is not USER:PASS (a user name, a colon, then the password).")
        }
        do {
            _ = try exclusions()
        } catch {
            throw ValidationError("--exclude: \(error.explanation)")
        }
    }

    /// The host patterns of every `--exclude`.
    func exclusions() throws(ProfileError) -> [HostPattern] {
        var patterns: [HostPattern] = []
        for list in exclude {
            try patterns += Profile.none.setting("exclude", to: list).exclude
        }
        return patterns
    }

    /// One proxy listener per `--proxy`, or one on 127.0.0.1:0 when no listener option was given.
    var proxyListenerSpecs: [ListenerSpec] {
        let settings = ProxyFrontEndSettings(
            credentials: proxyUser.flatMap(ProxyCredentials.init(parsing:)),
            exclude: (try? exclusions()) ?? [])
        let addresses =
            startsDefaultProxy ? [Endpoint(host: "127.0.0.1", port: 0)] : proxy.compactMap(Endpoint.init(parsing:))
        return addresses.map { ListenerSpec(listen: $0, kind: .proxy(settings)) }
    }

    /// Tells the user on stderr how to point apps at each proxy listener, and warns when one is reachable from other hosts.
    /// The proxy variables are the lower-case ones: every client that reads proxy variables reads those, while curl
    /// ignores an upper-case `HTTP_PROXY` (a CGI server sets that from a request's `Proxy:` field).
    func explainProxyFrontEnds(_ listeners: [BoundListener]) {
        for listener in listeners where listener.kind == "proxy" {
            let address = listener.address.description
            for line in [
                "linkcond: SOCKS5 and HTTP proxy on \(address); point an app at it with",
                "  ALL_PROXY=socks5h://\(address)   (names resolved by linkcond, paying dns.delay)",
                "  https_proxy=http://\(address) http_proxy=http://\(address)",
                "  curl --socks5-hostname \(address) URL   or   curl -x http://\(address) URL",
            ] { printError(line) }
            if !listener.address.isLoopback {
                printError(
                    "linkcond: warning: the proxy on \(address) is reachable from other hosts and relays to anywhere (an open relay)"
                        + (proxyUser == nil ? "; give --proxy-user USER:PASS or listen on 127.0.0.1" : ""))
            }
        }
    }

    /// Whether `host` is a loopback address or `localhost`, as written on the command line.
    static func isLoopbackHost(_ host: String) -> Bool {
        host == "localhost" || AddressBytes.parse(host).map(AddressBytes.isLoopback) ?? false
    }
}
