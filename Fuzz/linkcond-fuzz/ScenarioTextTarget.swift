@testable import LinkConditioner

/// Scenario files: `Scenario(parsing:)`, which also reads scenarios sent to the control endpoint (`PUT /scenario`).
enum ScenarioTextTarget {
    static func run(_ input: FuzzInput) {
        guard let scenario = try? Scenario(parsing: input.text, name: "fuzz") else { return }
        for step in scenario.steps {
            if case .ramp(let ramp) = step.action {
                for fraction in [0.0, 0.5, 1.0] { _ = ramp.applied(to: .none, fraction: fraction) }
            }
        }
    }
}
