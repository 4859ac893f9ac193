/// A datagram impairment that one probability per direction turns on, declared whole by its type: the probability
/// is stored in `DirectionShape.declaredImpairments` under the type, the settings layer derives its profile key
/// from `name`, and the link runs it from its place in `ImpairmentKind.all`, at the stage it conforms to
/// (`EntryImpairment` or `DepartureImpairment`).
///
/// So a new one is its own file, its test, and one line in `ImpairmentKind.all`. Only datagrams meet these effects:
/// TCP streams take their loss in `StreamLink`'s transport model.
public protocol ProbabilityImpairment: Impairment {
    /// netem's name for the effect, which profiles use as its key (`corrupt`).
    static var name: String { get }
    /// What the effect does to a datagram, as a past participle for listings (`corrupted`).
    static var outcome: String { get }
    /// What the effect does, in one sentence for the profile-key reference.
    static var effect: String { get }

    init(probability: Double)
}

extension ProbabilityImpairment {
    public init?(profile: DirectionShape) {
        let probability = profile.declaredImpairments[Self.self].probability
        guard probability > 0 else { return nil }
        self.init(probability: probability)
    }
}

/// The probabilities of a direction's `ProbabilityImpairment`s, by type; an effect not stored is off.
///
/// Zero is never stored, so two directions that end up with the same effects compare equal however they got there.
public struct DeclaredImpairments: Hashable, Sendable {
    private var probabilities: [ObjectIdentifier: Percentage] = [:]

    public init() {}

    public subscript(kind: any ProbabilityImpairment.Type) -> Percentage {
        get { self[Kind(kind)] }
        set { self[Kind(kind)] = newValue }
    }

    /// The probability of `kind`, by a hashable name for its type, so a key path can reach it.
    public subscript(kind: Kind) -> Percentage {
        get { probabilities[kind.id] ?? .zero }
        set { probabilities[kind.id] = newValue == .zero ? nil : newValue }
    }

    /// A `ProbabilityImpairment` type, as a hashable value.
    public struct Kind: Hashable, Sendable {
        fileprivate let id: ObjectIdentifier

        public init(_ type: any ProbabilityImpairment.Type) {
            id = ObjectIdentifier(type)
        }
    }
}
