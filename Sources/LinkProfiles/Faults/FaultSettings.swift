/// The connection faults a profile sets for one direction (the `cut.*`, `close.delay`, `slice.*` and
/// `first-byte.delay` keys), each declared by its own setting.
public struct FaultSettings: Hashable, Sendable {
    public var cutAfter: CutPoint?
    public var cutMode: CutSetting.Mode = .reset
    public var closeDelay: Duration = .zero
    public var sliceSize: Int?
    public var sliceVariation = 0
    public var sliceDelay: Duration = .zero
    public var firstByteDelay: Duration = .zero

    public init() {}
}

/// The settings of a whole connection (the `connect.stall`, `blocked.*` and `captive-portal` keys), stored once per
/// profile, each declared by its own `ConnectionSetting`.
public struct ConnectionSettings: Hashable, Sendable {
    public var connectStall: Duration = .zero
    public var blockedPorts: [ClosedRange<UInt16>] = []
    public var blockedMode: BlockedPortsSetting.Mode = .refuse
    public var captivePortal: CaptivePortalSetting.Style = .off

    public init() {}
}
