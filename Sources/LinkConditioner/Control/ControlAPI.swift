import Foundation

/// The control endpoint's routes, carried out on the proxy's loop-owned state.
///
/// Plain-text bodies in the profile format, sent as `Content-Type: text/x-linkcond`; JSON where a machine reads the
/// answer (`/status`). Bodies are parsed on a worker thread and the result is applied on the loop, so a large or
/// hostile body never stalls the data path; the reports (`/status`, `/metrics`, `/connections`) are copied on the loop
/// as values and rendered on the worker, since a thousand listeners make a long text. Every change is validated whole before anything is applied, so a bad
/// request changes nothing. The endpoint reads no files: a profile is sent as its text or named as a built-in, and a
/// trace is named as a built-in (the parsers refuse a path at the line that writes it, before anything is read).
///
/// `ControlServer.routes` (ControlRoutes.swift) lists the routes with the method of this type that answers each;
/// the routes table of docs/reference/control-api.md is rendered from it, and a test holds control-api.yaml to it.
///
/// Lives on the event loop thread.
struct ControlAPI {
    unowned let state: ProxyState
    /// Parses bodies and renders the reports off the loop; tests hold it to see what waits for it.
    let worker: BodyParsingWorker

    /// The most `key = value` lines one settings request may carry.
    static let settingsLimit = 256

    init(state: ProxyState) {
        self.state = state
        worker = BodyParsingWorker(loop: state.loop)
    }

    /// Answers `request` through its route in `ControlServer.routes` if the API serves it, else with the endpoint's
    /// 404 or 405: the endpoint's dispatch without its checks, which the `control` fuzz target drives.
    func handle(_ request: HTTPRequest, reply: @escaping (HTTPResponse) -> Void) {
        let entry = ControlServer.routes.first { $0.route == ControlRoute(request.method, request.path) }
        guard let entry, case .api(let handler) = entry.handler else { return reply(ControlServer.unrouted(request)) }
        handler(self, ControlExchange(request: request, reply: reply))
    }

    /// `GET /status`: the report, copied on the loop and rendered on the worker.
    func status(_ exchange: ControlExchange) {
        let report = state.report()
        worker.parse({ Self.status(report) }, then: exchange.reply)
    }

    /// `GET /metrics`: the report in Prometheus' text format, rendered on the worker.
    func metrics(_ exchange: ControlExchange) {
        let report = state.report()
        worker.parse({ Self.metrics(report) }, then: exchange.reply)
    }

    /// `GET /connections`: the live connections, listed on the worker.
    func connections(_ exchange: ControlExchange) {
        let entries = state.listeners.flatMap { $0.connectionEntries() }
        worker.parse({ Self.connections(entries) }, then: exchange.reply)
    }

    /// `GET /history`: the rate history, copied on the loop and rendered on the worker.
    func history(_ exchange: ControlExchange) {
        let report = HistoryReport(
            state.historyPoints(), now: state.loop.clock.now(), wallClock: Date().timeIntervalSince1970)
        worker.parse({ Self.encoded(report) }, then: exchange.reply)
    }

    /// `GET /catalog`: the built-in profiles and scenarios.
    func catalog(_ exchange: ControlExchange) {
        exchange.reply(Self.catalog)
    }

    /// `GET /version`.
    func version(_ exchange: ControlExchange) {
        exchange.reply(.json("{\"version\": \"\(linkcondVersion)\"}\n"))
    }

    /// `GET /profile`: the current profile, rendered.
    func currentProfile(_ exchange: ControlExchange) {
        exchange.reply(.text(state.conditions.profile.rendered))
    }

    /// `PUT /profile` (and `POST /profile`): switches to a built-in profile or the profile text of the body, and
    /// stops a scenario.
    func switchProfile(_ exchange: ControlExchange) {
        let body = exchange.request.bodyText
        let reply = exchange.reply
        worker.parse {
            Self.profile(from: body)
        } then: { [weak state] outcome in
            guard let state else { return }
            switch outcome {
            case .parsed(let (profile, rendered)):
                state.stopScenario()
                state.setProfile(profile)
                reply(.text(rendered))
            case .refused(let response):
                reply(response)
            }
        }
    }

    /// `POST /settings` (and `PATCH /profile`): changes the settings of the body's `key = value` lines, all or none.
    func changeSettings(_ exchange: ControlExchange) {
        let body = exchange.request.bodyText
        let reply = exchange.reply
        let snapshot = state.conditions.profile
        worker.parse {
            Self.settings(from: body, appliedTo: snapshot)
        } then: { [weak state] outcome in
            guard let state else { return }
            switch outcome {
            case .parsed(let (settings, profile, rendered)):
                do throws(ProfileError) {
                    if state.conditions.profile == snapshot {
                        state.setProfile(profile)
                        reply(.text(rendered))
                    } else {
                        try state.applySettings(settings)
                        reply(.text(state.conditions.profile.rendered))
                    }
                } catch {
                    reply(.error(400, Self.clipped(error).description))
                }
            case .refused(let response):
                reply(response)
            }
        }
    }

    /// `POST /offline`: airplane mode, `refuse` (the default) or `blackhole`.
    func goOffline(_ exchange: ControlExchange) {
        let word = exchange.request.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let mode = word.isEmpty ? .refuse : OfflineMode(rawValue: word) else {
            return exchange.reply(
                .error(400, "\"\(word.prefix(40))\": expected an empty body, \"refuse\" or \"blackhole\""))
        }
        state.setOffline(mode)
        exchange.reply(.text("offline (\(mode.rawValue))"))
    }

    /// `POST /online`: ends airplane mode.
    func goOnline(_ exchange: ControlExchange) {
        state.setOffline(nil)
        exchange.reply(.text("online"))
    }

    /// `POST /reset`: resets every live connection.
    func resetConnections(_ exchange: ControlExchange) {
        let count = state.listeners.reduce(0) { $0 + $1.status().activeConnections }
        state.resetConnections()
        exchange.reply(.text("reset \(count) connection\(count == 1 ? "" : "s")"))
    }

    /// `PUT /scenario` (and `POST /scenario`): starts the body's scenario, named by the query's `name`.
    func startScenario(_ exchange: ControlExchange) {
        let body = exchange.request.bodyText
        let name = exchange.request.query["name"] ?? ""
        let reply = exchange.reply
        worker.parse {
            Self.scenario(from: body, name: name)
        } then: { [weak state] outcome in
            guard let state else { return }
            switch outcome {
            case .parsed(let scenario):
                state.startScenario(scenario)
                reply(
                    .text(
                        "scenario \(scenario.name.isEmpty ? "(inline)" : scenario.name) started: \(scenario.steps.count) steps"
                    ))
            case .refused(let response):
                reply(response)
            }
        }
    }

    /// `DELETE /scenario`: stops the running scenario, if any.
    func stopScenario(_ exchange: ControlExchange) {
        let running = state.scenario != nil
        state.stopScenario()
        exchange.reply(.text(running ? "scenario stopped" : "no scenario was running"))
    }

    /// `report` as the JSON of `GET /status`. Runs on the worker thread.
    static func status(_ report: StatusReport) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(report) else { return .error(500, "status could not be encoded") }
        return .json(String(decoding: data, as: UTF8.self))
    }

    /// A built-in profile's name or a profile's text, with its rendering for the answer; never a path, so no file is
    /// read on the user's behalf. Runs on the worker thread.
    static func profile(from body: String) -> Parsed<(Profile, String)> {
        let trimmed = body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            return .refused(.error(400, "expected a built-in profile name or profile text in the body"))
        }
        do {
            let profile =
                trimmed.contains("=") || trimmed.contains("\n")
                ? try Profile(parsing: body, name: "inline", file: "request body", readsFiles: false)
                : try Profile.namedBuiltIn(trimmed)
            return .parsed((profile, profile.rendered))
        } catch {
            return .refused(.error(400, clipped(error).description))
        }
    }

    /// The settings of a `key = value` body, checked by applying them to `snapshot`, with the result rendered.
    /// A key set twice is refused as in a profile file, naming both lines: the body is one change, not a sequence.
    /// Runs on the worker thread.
    static func settings(from body: String, appliedTo snapshot: Profile) -> Parsed<
        ([Scenario.Setting], Profile, String)
    > {
        var settings: [Scenario.Setting] = []
        var firstLine: [String: Int] = [:]
        for (index, line) in body.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else {
                return .refused(.error(400, "request body:\(index + 1): \"\(text.prefix(80))\": expected key = value"))
            }
            guard settings.count < settingsLimit else {
                return .refused(
                    .error(
                        413,
                        "more than \(settingsLimit) settings in one request; send a whole profile with PUT /profile instead"
                    ))
            }
            if let key = try? ProfileKey.named(parts[0]) {
                if let earlier = firstLine[key.name] {
                    let error = ProfileError(
                        file: "request body", line: index + 1, text: text,
                        kind: .duplicateKey(key.name, firstLine: earlier))
                    return .refused(.error(400, clipped(error).description))
                }
                firstLine[key.name] = index + 1
            }
            settings.append(Scenario.Setting(key: parts[0], value: parts[1]))
        }
        guard !settings.isEmpty else {
            return .refused(.error(400, "expected one or more \"key = value\" lines in the body"))
        }
        var profile = snapshot
        do {
            for setting in settings { try profile.set(setting.key, to: setting.value, readsFiles: false) }
        } catch {
            return .refused(.error(400, clipped(error).description))
        }
        return .parsed((settings, profile, profile.rendered))
    }

    /// A scenario whose profile steps name built-in profiles only, and whose `set` steps built-in traces only.
    /// Runs on the worker thread.
    static func scenario(from body: String, name: String) -> Parsed<Scenario> {
        do {
            return .parsed(try Scenario(parsing: body, name: String(name.prefix(100)), builtInProfilesOnly: true))
        } catch {
            var error = error
            error.text = error.text.map { clip($0) }
            return .refused(.error(400, error.description))
        }
    }

    /// `error` with its quoted text shortened, so an answer never repeats a megabyte of the request.
    static func clipped(_ error: ProfileError) -> ProfileError {
        var error = error
        error.text = error.text.map { clip($0) }
        switch error.kind {
        case .unknownKey(let key, let suggestion): error.kind = .unknownKey(clip(key), suggestion: suggestion)
        case .duplicateKey(let key, let firstLine): error.kind = .duplicateKey(clip(key), firstLine: firstLine)
        case .connectionWideKey(let key, let unprefixed):
            error.kind = .connectionWideKey(clip(key), unprefixed: unprefixed)
        default: break
        }
        return error
    }

    static func clip(_ text: String) -> String { text.count > 80 ? text.prefix(80) + "…" : text }
}

extension Profile {
    /// The built-in profile called `name`; anything that looks like a path is refused without touching the file
    /// system, so the answer reveals nothing about which files exist.
    static func namedBuiltIn(_ name: String) throws(ProfileError) -> Profile {
        if name.contains("/") || name.hasSuffix(".profile") {
            throw ProfileError(
                kind: .invalidValue(
                    expected:
                        "a built-in profile name or profile text: the control endpoint reads no files (\"linkcond use FILE\" reads the file and sends its text)"
                ))
        }
        if let profile = builtIn(named: name) { return profile }
        guard name.count <= 64 else { throw ProfileError(kind: .unknownProfile(ControlAPI.clip(name), closest: [])) }
        let asked = name.lowercased()
        let ranked = NameSuggestion.ranked(asked, among: builtInNames.map { $0.lowercased() }).prefix(3)
        let near = ranked.filter { NameSuggestion.editDistance(asked, $0) <= max(2, asked.count / 2) }
        let closest = (near.isEmpty ? Array(ranked) : near).compactMap { key in
            builtInNames.first { $0.lowercased() == key }
        }
        throw ProfileError(kind: .unknownProfile(name, closest: closest))
    }
}

/// A body parsed on the worker, or the answer that refuses it.
enum Parsed<Value: Sendable>: Sendable {
    case parsed(Value)
    case refused(HTTPResponse)
}

/// Parses control request bodies on one worker thread and hands each result to the event loop, so parsing a
/// large body never stalls relayed traffic or signal handling. One body at a time; the control connection limit
/// bounds how many wait.
final class BodyParsingWorker: Sendable {
    private let loop: EventLoop
    private let queue = DispatchQueue(label: "linkcond-control-parser")

    init(loop: EventLoop) { self.loop = loop }

    /// Runs `work` on the worker, then `apply` with its result on the loop thread. Called on the loop thread.
    func parse<Value: Sendable>(_ work: @escaping @Sendable () -> Value, then apply: @escaping (Value) -> Void) {
        let apply = LoopBound(apply)
        let loop = self.loop
        queue.async {
            let value = work()
            _ = loop.execute { apply.value(value) }
        }
    }
}
