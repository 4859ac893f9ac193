import Logging

/// What a relay needs from whoever accepted its client: the loop, the shared link, limits, and a way to say it closed.
///
/// Lives on the event loop thread.
protocol RelayHost: AnyObject {
    var loop: EventLoop { get }
    var logger: Logger { get }
    var uplink: ShapedLink { get }
    var downlink: ShapedLink { get }
    var options: ProxyOptions { get }
    var readBuffer: ReadBuffer { get }
    /// The profile's connection faults (stall, blocked ports), or nil for a link that has none.
    var connectionFaults: ListenerFaults? { get }
    /// Where pass-through connections are handed to be carried by splice(2) on other cores; nil keeps every
    /// connection on the main loop.
    var spliceLoops: SpliceLoops? { get }
    /// Every address linkcond listens on, told of upstream connections that could come back to one (a loop);
    /// nil for a host whose upstreams never reach linkcond's namespace (an exec'd program's).
    var ownListeners: OwnListeners? { get }
    func relayClosed(_ relay: TCPRelay)
}

extension RelayHost {
    var ownListeners: OwnListeners? { nil }
    /// A host without faults of its own: an excluded destination's direct link.
    var connectionFaults: ListenerFaults? { nil }
    /// A host whose connections all stay on the main loop.
    var spliceLoops: SpliceLoops? { nil }
}

/// A front end's part in a relay whose upstream was chosen by a proxy protocol (SOCKS5, HTTP CONNECT).
///
/// Its replies go to the client through the downlink, so they pay the link's delay like any upstream byte.
protocol UpstreamHandshake: AnyObject {
    /// Whether the front end answers the client once the upstream accepted, which plays the TCP handshake's part.
    var repliesOnConnect: Bool { get }
    /// Bytes for the client once the upstream accepted (a SOCKS or HTTP success reply); `local` reads linkcond's
    /// end, a `getsockname` only a reply that names it pays for.
    func replyOnConnect(local: () -> SocketAddress?) -> [UInt8]
    /// Bytes for the client, before closing, when no upstream address accepted (the protocol's error reply).
    func replyOnFailure(_ error: Errno) -> [UInt8]
}
