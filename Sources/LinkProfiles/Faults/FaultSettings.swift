/// The connection faults a profile sets for one direction (the `cut.*`, `close.delay`, `slice.*`,
/// `first-byte.delay`, `connect.stall`, `blocked.*` and `captive-portal` keys), each declared by its own setting.
///
/// Faults that concern the whole connection (connect stall, blocked ports, captive portal) are read from the
/// uplink, the direction a connection is opened in; an unprefixed key sets both directions alike.
public struct FaultSettings: Hashable, Sendable {
    public var cutAfter: CutPoint?
    public var cutMode: CutSetting.Mode = .reset
    public var closeDelay: Duration = .zero
    public var sliceSize: Int?
    public var sliceVariation = 0
    public var sliceDelay: Duration = .zero
    public var firstByteDelay: Duration = .zero
    public var connectStall: Duration = .zero
    public var blockedPorts: [ClosedRange<UInt16>] = []
    public var blockedMode: BlockedPortsSetting.Mode = .refuse
    public var captivePortal: CaptivePortalSetting.Style = .off

    public init() {}

    /// Every fault's setting, for `DirectionSettings.all`: the stream faults first, in the order the
    /// composition applies them (its `StreamFaultSettings.all`), then the connection-wide ones.
    static let directionSettings: [any DirectionSetting.Type] = [
        CutSetting.self, FirstByteDelaySetting.self, SliceSetting.self, SlowCloseSetting.self,
        ConnectStallSetting.self, BlockedPortsSetting.self, CaptivePortalSetting.self,
    ]
}
