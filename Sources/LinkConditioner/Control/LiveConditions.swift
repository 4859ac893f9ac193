/// How new connections are treated while a proxy is offline.
public enum OfflineMode: String, Sendable, Codable, CaseIterable {
    /// New connections are reset at once, as an app in airplane mode sees "no connection".
    case refuse
    /// New connections are accepted and hang, as in a tunnel with no signal.
    case blackhole
}

/// The conditions a proxy applies: the profile the user chose, with the offline switch laid over it.
///
/// Offline keeps the chosen profile so `online` restores it exactly. While offline both directions carry
/// nothing (queued bytes wait, in order, for `online`) and new connections are refused or blackholed.
public struct LiveConditions: Sendable, Hashable {
    public var profile: Profile
    public var offline: OfflineMode?

    public init(profile: Profile, offline: OfflineMode? = nil) {
        self.profile = profile
        self.offline = offline
    }

    /// What the listeners apply.
    public var effective: Profile {
        guard let offline else { return profile }
        var stalled = profile
        stalled.uplink.bandwidth = BitRate(bitsPerSecond: 0)
        stalled.downlink.bandwidth = BitRate(bitsPerSecond: 0)
        stalled.fault = offline == .refuse ? .refuse : .blackhole
        return stalled
    }
}
