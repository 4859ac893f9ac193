/// A direction setting whose fault acts on each connection's stream, through the connection's stages.
protocol StreamFaultSetting: DirectionSetting {
    /// The fault's effect on one direction of one new connection, or nil when `direction` leaves it off.
    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect?
}

/// The faults that act on streams, in the order they see the bytes (a cut counts bytes before a slicer cuts writes):
/// the settings table's order.
enum StreamFaultSettings {
    static let all: [any StreamFaultSetting.Type] = ProfileSettings.perDirection.compactMap {
        $0 as? any StreamFaultSetting.Type
    }
}

extension CutSetting: StreamFaultSetting {
    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect? {
        direction.faults.cutAfter.map { CutEffect(at: $0, mode: direction.faults.cutMode) }
    }
}

extension FirstByteDelaySetting: StreamFaultSetting {
    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect? {
        direction.faults.firstByteDelay == .zero ? nil : FirstByteDelay(delay: direction.faults.firstByteDelay)
    }
}

extension SliceSetting: StreamFaultSetting {
    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect? {
        let faults = direction.faults
        return faults.sliceSize.map {
            SlicerToxic(averageSize: $0, sizeVariation: faults.sliceVariation, delay: faults.sliceDelay, random: random)
        }
    }
}

extension SlowCloseSetting: StreamFaultSetting {
    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect? {
        direction.faults.closeDelay == .zero ? nil : SlowCloseToxic(delay: direction.faults.closeDelay)
    }
}

/// One direction's profile faults as a chain of toxics that every live connection's stage follows: a `set` that
/// changes a fault restarts it on live connections; faults it leaves alone keep their state.
///
/// Lives on the event loop thread.
final class FaultChain: StageChain {
    private struct Entry {
        let index: Int
        var revision: UInt64
        /// The fault's keys as rendered: its identity, so an unchanged fault is not restarted.
        var rendered: String
        var direction: DirectionProfile
    }

    let loop: EventLoop
    private var entries: [Entry] = []
    private var stages: [ObjectIdentifier: WeakToxicStage] = [:]

    init(loop: EventLoop, direction: DirectionProfile) {
        self.loop = loop
        update(direction)
    }

    /// Follows `direction`'s faults.
    func update(_ direction: DirectionProfile) {
        var next: [Entry] = []
        for (index, setting) in StreamFaultSettings.all.enumerated() {
            let rendered = setting.rendered(direction).map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            guard !rendered.isEmpty else { continue }
            if var current = entries.first(where: { $0.index == index }) {
                if current.rendered != rendered {
                    current.revision += 1
                    current.rendered = rendered
                }
                current.direction = direction
                next.append(current)
            } else {
                next.append(Entry(index: index, revision: 0, rendered: rendered, direction: direction))
            }
        }
        let changed = next.map { [$0.index, Int($0.revision)] } != entries.map { [$0.index, Int($0.revision)] }
        entries = next
        guard changed else { return }
        let now = loop.clock.now()
        for box in Array(stages.values) { box.stage?.chainChanged(at: now) }
    }

    var stageEntries: [StageEntry] {
        entries.map { entry in
            let setting = StreamFaultSettings.all[entry.index]
            let direction = entry.direction
            return StageEntry(
                id: StageEntryID(chain: ObjectIdentifier(self), id: UInt64(entry.index)), revision: entry.revision,
                toxicity: 1,
                makeEffect: { random in setting.makeEffect(for: direction, random: random) ?? PassingEffect() })
        }
    }

    var isEmpty: Bool { entries.isEmpty }

    func register(_ stage: ToxicStage) { stages[ObjectIdentifier(stage)] = WeakToxicStage(stage: stage) }

    func unregister(_ stage: ToxicStage) { stages.removeValue(forKey: ObjectIdentifier(stage)) }
}

/// An effect that changes nothing.
private final class PassingEffect: ToxicEffect {}

/// Where a relay's stages come from: a listener's profile faults, or a Toxiproxy proxy's toxics before them.
///
/// Lives on the event loop thread. A relay draws its seeds each time it makes its pumps, whether or not it makes
/// stages then, so every relay's draws are the same however many of the relays before it needed stages.
protocol StageSource: AnyObject {
    /// The seeds of a relay's two stages (uplink, downlink), drawn when its pumps are made.
    func drawStageSeeds() -> StageSeeds
    /// Whether a relay's pumps need stages now. While false, a relay holds none, and a change that makes it true
    /// must give the open relays theirs (`TCPRelay.makeStagesIfNeeded`).
    var needsStages: Bool { get }
    /// The stages of `relay`'s two directions, seeded by `seeds`; `speaker` is the direction that sent last (nil
    /// before either did), for stages made after the connection has carried bytes.
    func makeStages(for relay: TCPRelay, seeds: StageSeeds, speaker: ToxicStream?) -> (
        uplink: ToxicStage, downlink: ToxicStage
    )
}

/// The seeds of one relay's uplink and downlink stages.
struct StageSeeds {
    var uplink: UInt64
    var downlink: UInt64
}

/// A listener's profile faults: the two directions' chains, and the checks made when a connection opens.
///
/// Lives on the event loop thread.
final class ListenerFaults: StageSource {
    let loop: EventLoop
    private(set) var profile: Profile
    let uplink: FaultChain
    let downlink: FaultChain
    /// Seeds each connection's stages, from the profile's seed so runs repeat.
    private var seeds: SeededRandom

    init(loop: EventLoop, profile: Profile, seed: UInt64) {
        self.loop = loop
        self.profile = profile
        uplink = FaultChain(loop: loop, direction: profile.uplink)
        downlink = FaultChain(loop: loop, direction: profile.downlink)
        seeds = SeededRandom(seed: seed)
    }

    /// Follows `profile`; when it sets the first stream fault, the open `relays` that hold no stages get theirs,
    /// so the fault reaches connections already open.
    func apply(_ profile: Profile, to relays: some Sequence<TCPRelay>) {
        self.profile = profile
        uplink.update(profile.uplink)
        downlink.update(profile.downlink)
        guard needsStages else { return }
        for relay in relays { relay.makeStagesIfNeeded() }
    }

    /// The connection-wide settings: connect stall, blocked ports, captive portal.
    var connection: ConnectionSettings { profile.connection }

    func drawStageSeeds() -> StageSeeds { StageSeeds(uplink: seeds.next(), downlink: seeds.next()) }

    /// True while a stream fault is set either way: a connection of a fault-free profile holds no stages.
    var needsStages: Bool { !uplink.isEmpty || !downlink.isEmpty }

    func makeStages(for relay: TCPRelay, seeds: StageSeeds, speaker: ToxicStream?) -> (
        uplink: ToxicStage, downlink: ToxicStage
    ) {
        makeStages(for: relay, seeds: seeds, speaker: speaker, after: nil)
    }

    /// The stages of a relay: `toxics` first (a Toxiproxy proxy's), then the profile's faults.
    func makeStages(
        for relay: TCPRelay, seeds: StageSeeds, speaker: ToxicStream?,
        after toxics: (upstream: ToxicChain, downstream: ToxicChain)?
    ) -> (uplink: ToxicStage, downlink: ToxicStage) {
        let end: (StreamEnd) -> Void = { [weak relay] how in relay?.end(how) }
        let turn = ConversationTurn(speaker: speaker)
        let up: [any StageChain] = toxics.map { [$0.upstream, uplink] } ?? [uplink]
        let down: [any StageChain] = toxics.map { [$0.downstream, downlink] } ?? [downlink]
        return (
            ToxicStage(chains: up, loop: loop, side: .upstream, turn: turn, seed: seeds.uplink, end: end),
            ToxicStage(chains: down, loop: loop, side: .downstream, turn: turn, seed: seeds.downlink, end: end)
        )
    }
}
