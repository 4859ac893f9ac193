import LinkModel

// The link model takes a direction's `DirectionShape`; these entry points take a profile's `DirectionProfile` and
// pass on its shape, so code that holds a profile builds and updates the model without reaching into it.

extension Impairment {
    /// The impairment `profile`'s shape asks for, or nil when it leaves this effect off.
    public init?(profile: DirectionProfile) { self.init(profile: profile.shape) }
}

extension EntryImpairments {
    /// The entry impairments `profile`'s shape turns on.
    public init(profile: DirectionProfile) { self.init(profile: profile.shape) }
}

extension DepartureImpairments {
    /// The departure impairments `profile`'s shape turns on.
    public init(profile: DirectionProfile) { self.init(profile: profile.shape) }
}

extension DatagramLink {
    /// A direction shaped by `profile` that carries datagrams of `kind`; `seed` drives every random draw.
    public convenience init(profile: DirectionProfile, seed: UInt64, kind: DatagramKind = .udpPayload) {
        self.init(profile: profile.shape, seed: seed, kind: kind)
    }

    /// Live profile switch at `now` to `profile`'s shape.
    public func update(profile: DirectionProfile, now: Instant) { update(profile: profile.shape, now: now) }
}

extension StreamLink {
    /// A direction carrying `profile`, whose ACKs come back over `reverse`; `seed` drives every draw.
    public convenience init(
        side: Side, profile: DirectionProfile, reverse: DirectionProfile, settings: TCPSettings,
        seed: UInt64
    ) {
        self.init(side: side, profile: profile.shape, reverse: reverse.shape, settings: settings, seed: seed)
    }

    /// Live profile switch at `now` to the shapes of `profile` and `reverse`.
    public func update(profile: DirectionProfile, reverse: DirectionProfile, settings: TCPSettings, now: Instant) {
        update(profile: profile.shape, reverse: reverse.shape, settings: settings, now: now)
    }
}

extension VirtualConnection {
    /// A connection over `profile`'s two directions and TCP settings, connecting at `start`; `handshake` replaces
    /// the links' draw.
    public convenience init(
        profile: Profile, seed: UInt64 = 1, start: Instant = .zero, handshake: HandshakeAttempts? = nil
    ) {
        self.init(
            uplink: profile.uplink.shape, downlink: profile.downlink.shape, settings: profile.tcp, seed: seed,
            start: start, handshake: handshake)
    }
}
