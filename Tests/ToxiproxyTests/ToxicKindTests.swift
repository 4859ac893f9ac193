import Testing

@testable import LinkConditioner

/// `ToxicKind.all` lists the toxic types, each registered in its own toxic's file.
struct ToxicKindTests {
    /// Every registered toxic type has its own name, is found by it, lists its attributes, and makes its effect;
    /// Toxiproxy's seven are among them. What each effect does with its attributes is its own test's.
    @Test func everyRegisteredToxicIsFoundByItsNameAndMakesItsEffect() throws {
        let names = ToxicKind.all.map(\.name)
        #expect(
            Set(names).isSuperset(of: [
                "latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data",
            ]))
        #expect(Set(names).count == names.count)
        for kind in ToxicKind.all {
            #expect(ToxicKind.named(kind.name) == kind)
            #expect(!kind.attributeLimits.isEmpty, "\(kind.name)")
            let attributes = Dictionary(uniqueKeysWithValues: kind.attributeLimits.map { ($0.key, Int64(1)) })
                .merging(kind.name == "slicer" ? ["average_size": 2] : [:]) { $1 }
            #expect(kind.inconsistency(attributes) == nil, "\(kind.name)")
            let definition = ToxicDefinition(
                name: kind.name, kind: kind, stream: .downstream, toxicity: 1, attributes: attributes)
            _ = definition.makeEffect(random: SeededRandom(seed: 1))
            guard case .object(let shown)? = definition.json["attributes"] else {
                Issue.record("\(kind.name): no attributes in \(definition.json.rendered)")
                continue
            }
            #expect(shown.map(\.0) == kind.attributeLimits.map(\.key), "\(kind.name)")
        }
        #expect(ToxicKind.named("corrupt") == nil)
    }
}
