import Foundation

/// The control endpoint's routes, carried out on the proxy's loop-owned state.
///
/// Plain-text bodies in the profile format; JSON where a machine reads the answer (`/status`). Every change is
/// validated whole before anything is applied, so a bad request changes nothing.
///
/// | method and path        | body                                   | does                                  |
/// |------------------------|----------------------------------------|---------------------------------------|
/// | GET /status            |                                        | JSON `StatusReport`                   |
/// | GET /version           |                                        | JSON `{"version": "…"}`               |
/// | GET /profile           |                                        | the current profile, fully resolved   |
/// | PUT /profile           | a profile name/path, or profile text   | switches to it (stops a scenario)     |
/// | POST /settings         | `key = value` lines                    | changes those settings                |
/// | POST /offline          | empty, `refuse` or `blackhole`         | airplane mode                         |
/// | POST /online           |                                        | ends airplane mode                    |
/// | POST /reset            |                                        | resets every live connection          |
/// | PUT /scenario          | scenario text                          | starts it                             |
/// | DELETE /scenario       |                                        | stops it                              |
///
/// Lives on the event loop thread.
struct ControlAPI {
    unowned let state: ProxyState

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/status"):
            return status()
        case ("GET", "/version"):
            return .json("{\"version\": \"\(linkcondVersion)\"}\n")
        case ("GET", "/profile"):
            return .text(state.conditions.profile.rendered)
        case ("PUT", "/profile"), ("POST", "/profile"):
            return replaceProfile(request.bodyText)
        case ("POST", "/settings"), ("PATCH", "/profile"):
            return applySettings(request.bodyText)
        case ("POST", "/offline"):
            let word = request.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let mode = word.isEmpty ? .refuse : OfflineMode(rawValue: word) else {
                return .error(400, "\"\(word)\": expected an empty body, \"refuse\" or \"blackhole\"")
            }
            state.setOffline(mode)
            return .text("offline (\(mode.rawValue))")
        case ("POST", "/online"):
            state.setOffline(nil)
            return .text("online")
        case ("POST", "/reset"):
            let count = state.listeners.reduce(0) { $0 + $1.status().activeConnections }
            for listener in state.listeners { listener.resetConnections() }
            return .text("reset \(count) connection\(count == 1 ? "" : "s")")
        case ("PUT", "/scenario"), ("POST", "/scenario"):
            do {
                let scenario = try Scenario(parsing: request.bodyText, name: request.query["name"] ?? "")
                state.startScenario(scenario)
                return .text("scenario \(scenario.name.isEmpty ? "(inline)" : scenario.name) started: \(scenario.steps.count) steps")
            } catch {
                return .error(400, error.description)
            }
        case ("DELETE", "/scenario"):
            let running = state.scenario != nil
            state.stopScenario()
            return .text(running ? "scenario stopped" : "no scenario was running")
        default:
            let known = ["/status", "/version", "/profile", "/settings", "/offline", "/online", "/reset", "/scenario"]
            if known.contains(request.path) {
                return .error(405, "\(request.method) is not allowed on \(request.path)")
            }
            return .error(404, "no such endpoint \(request.path); endpoints: \(known.joined(separator: ", "))")
        }
    }

    private func status() -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(state.report()) else { return .error(500, "status could not be encoded") }
        return .json(String(decoding: data, as: UTF8.self))
    }

    private func replaceProfile(_ body: String) -> HTTPResponse {
        let trimmed = body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .error(400, "expected a profile name, a path, or profile text in the body") }
        do {
            let profile = trimmed.contains("=") || trimmed.contains("\n")
                ? try Profile(parsing: body, name: "inline", file: "request body")
                : try Profile.load(trimmed)
            state.stopScenario()
            state.setProfile(profile)
            return .text(profile.rendered)
        } catch {
            return .error(400, error.description)
        }
    }

    private func applySettings(_ body: String) -> HTTPResponse {
        var settings: [Scenario.Setting] = []
        for (index, line) in body.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else {
                return .error(400, "request body:\(index + 1): \"\(text)\": expected key = value")
            }
            settings.append(Scenario.Setting(key: parts[0], value: parts[1]))
        }
        guard !settings.isEmpty else { return .error(400, "expected one or more \"key = value\" lines in the body") }
        do {
            try state.applySettings(settings)
            return .text(state.conditions.profile.rendered)
        } catch {
            return .error(400, error.description)
        }
    }
}
