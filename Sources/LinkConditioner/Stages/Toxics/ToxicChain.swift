/// The toxics of one direction of a Toxiproxy proxy, in the order they were added, and the live connections'
/// stages that follow them: every change reaches every live connection at once, as in Toxiproxy.
///
/// Lives on the event loop thread.
final class ToxicChain: StageChain {
    /// A toxic in the chain; `revision` changes when its attributes or toxicity are updated.
    struct Entry {
        let id: UInt64
        var revision: UInt64
        var definition: ToxicDefinition
    }

    let loop: EventLoop
    private(set) var entries: [Entry] = []
    private var stages: [ObjectIdentifier: WeakToxicStage] = [:]
    private var nextID: UInt64 = 1

    init(loop: EventLoop) { self.loop = loop }

    func append(_ definition: ToxicDefinition) {
        entries.append(Entry(id: nextID, revision: 0, definition: definition))
        nextID += 1
        changed()
    }

    /// Replaces the toxic named `definition.name`, keeping its place in the chain.
    func replace(_ definition: ToxicDefinition) {
        guard let index = entries.firstIndex(where: { $0.definition.name == definition.name }) else { return }
        entries[index].definition = definition
        entries[index].revision += 1
        changed()
    }

    func remove(named name: String) {
        entries.removeAll { $0.definition.name == name }
        changed()
    }

    func removeAll() {
        entries.removeAll()
        changed()
    }

    var stageEntries: [StageEntry] {
        entries.map { entry in
            StageEntry(
                id: StageEntryID(chain: ObjectIdentifier(self), id: entry.id), revision: entry.revision,
                toxicity: entry.definition.toxicity, makeEffect: entry.definition.makeEffect(random:))
        }
    }

    func register(_ stage: ToxicStage) { stages[ObjectIdentifier(stage)] = WeakToxicStage(stage: stage) }

    func unregister(_ stage: ToxicStage) { stages.removeValue(forKey: ObjectIdentifier(stage)) }

    private func changed() {
        let now = loop.clock.now()
        for box in Array(stages.values) { box.stage?.chainChanged(at: now) }
    }
}

/// What a stage follows: a list of toxics that may change while connections are live. Lives on the event loop thread.
protocol StageChain: AnyObject {
    /// The toxics in the order they act.
    var stageEntries: [StageEntry] { get }
    /// Tells `stage` of every later change, until it unregisters.
    func register(_ stage: ToxicStage)
    func unregister(_ stage: ToxicStage)
}

/// One toxic of a chain as a stage sees it; a new `revision` restarts the toxic with its new settings.
struct StageEntry {
    let id: StageEntryID
    let revision: UInt64
    /// The chance, drawn once per connection and direction, that the toxic acts on that connection.
    let toxicity: Double
    let makeEffect: (SeededRandom) -> ToxicEffect
}

/// A toxic's identity across the chains one stage follows.
struct StageEntryID: Hashable {
    let chain: ObjectIdentifier
    let id: UInt64
}

struct WeakToxicStage {
    weak var stage: ToxicStage?
}
