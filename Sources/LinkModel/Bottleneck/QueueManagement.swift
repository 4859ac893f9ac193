/// Which queue discipline manages a direction's bottleneck, with its parameters (`queue.discipline`,
/// `queue.target`, `queue.interval`, `queue.flows`, `queue.quantum`); the limit stays `queue`.
public struct QueueManagement: Hashable, Sendable {
    /// Every discipline a profile can name, each declared in its own file.
    public static let disciplines: [any NamedQueueDiscipline.Type] = [
        FIFOQueue.self, DropHeadQueue.self, CoDelQueue.self, FQCoDelQueue.self,
    ]

    public static var disciplineNames: [String] { disciplines.map { $0.name } }

    /// The discipline's name, one of `disciplineNames`.
    public private(set) var discipline = FIFOQueue.name
    public var codel = CoDelParameters()
    public var flows = FQCoDelQueue.defaultFlows
    public var quantum = FQCoDelQueue.defaultQuantum

    public init(_ discipline: any NamedQueueDiscipline.Type = FIFOQueue.self) {
        self.discipline = discipline.name
    }

    /// Settings for the discipline named `name`, or nil if no discipline has that name.
    public init?(named name: String) {
        guard Self.disciplineNames.contains(name) else { return nil }
        discipline = name
    }

    /// Whether this is plain drop-tail FIFO, what the kernel backend programs.
    public var isFIFO: Bool { discipline == FIFOQueue.name }

    /// A fresh discipline of this kind holding at most `limit`.
    /// `management`'s parameters with another discipline.
    package init(keeping management: QueueManagement, discipline: String) {
        self = management
        self.discipline = discipline
    }

    public func makeDiscipline(limit: QueueLimit) -> any QueueDiscipline {
        let type = Self.disciplines.first { $0.name == discipline } ?? FIFOQueue.self
        return type.init(limit: limit, management: self)
    }
}
