import Foundation
import LinkModel

/// The plain-text profile format: one `key = value` per line, `#` comments, explicit units.
///
/// Keys: `description`; `bandwidth`, `delay`, `jitter`, `loss`, `queue`, `burst`, and for datagrams `loss.model`, `ge.p`,
/// `ge.r`, `ge.loss-bad`, `ge.loss-good`, `duplicate`, `reorder`, each for both directions or with an
/// `uplink.` or `downlink.` prefix; `tcp.congestion`, `tcp.initial-window`, `tcp.slow-start-after-idle`;
/// `dns.delay`; `fault`; `seed`; `exclude`. What a profile leaves out keeps `Profile`'s default.
extension Profile {
    /// Parses a whole profile, applying nothing unless every line is valid.
    ///
    /// - Parameters:
    ///   - text: The file's contents.
    ///   - name: The profile's name (a built-in's name or the file's base name).
    ///   - file: The file as the user named it, for error messages; `nil` when there is none.
    ///   - readsFiles: Whether a value may name a file to read (a trace); false for text sent to a running linkcond.
    /// - Throws: `ProfileError` for the first bad line, located by `file` and line number.
    public init(parsing text: String, name: String = "", file: String? = nil, readsFiles: Bool = true) throws(ProfileError) {
        let context = SettingContext(directory: file.map(Profile.directory(ofFile:)), readsFiles: readsFiles)
        var firstLine: [String: Int] = [:]
        var changes: [(key: ProfileKey, change: @Sendable (inout Profile) -> Void)] = []
        for (offset, rawLine) in ProfileLine.lines(of: text).enumerated() {
            let number = offset + 1
            do throws(ProfileError) {
                guard let line = try ProfileLine.read(rawLine) else { continue }
                do throws(ProfileError.Kind) {
                    let key = try ProfileKey.named(line.key)
                    if let earlier = firstLine[key.name] { throw .duplicateKey(key.name, firstLine: earlier) }
                    firstLine[key.name] = number
                    changes.append((key, try key.change(for: line.value, context: context)))
                } catch {
                    throw ProfileError(text: line.text, kind: error)
                }
            } catch {
                var located = error
                located.file = file
                located.line = number
                throw located
            }
        }
        var profile = Profile(name: name)
        for (_, change) in changes.filter({ !$0.key.isDirectional }) { change(&profile) }
        for (_, change) in changes.filter({ $0.key.isDirectional }) { change(&profile) }
        self = profile
    }

    /// Reads and parses a profile file; its name is the file's base name without `.profile`.
    ///
    /// - Parameters:
    ///   - path: The path as the user gave it; error messages repeat it as given.
    ///   - readsFiles: Whether the profile may name other files (traces); false to check it as a running linkcond
    ///     will, which reads no files.
    public init(contentsOfFile path: String, readsFiles: Bool = true) throws(ProfileError) {
        let text: String
        switch UserTextFile.read(path) {
        case .success(let contents): text = contents
        case .failure(let failure): throw ProfileError(file: path, kind: .unreadable(reason: failure.reason(for: "profile")))
        }
        try self.init(parsing: text, name: Profile.name(ofFile: path), file: path, readsFiles: readsFiles)
    }

    /// The directory holding `path`, for paths written relative to it (".") when `path` has none.
    static func directory(ofFile path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The profile name a file gives: its last path component without a `.profile` extension.
    static func name(ofFile path: String) -> String {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return base.hasSuffix(".profile") && base != ".profile" ? String(base.dropLast(".profile".count)) : base
    }

    /// Applies one `key = value` setting, validated exactly as in a file; used for live changes.
    ///
    /// An unprefixed link key such as `delay` sets both directions. With `readsFiles` false a value naming a file
    /// (a trace) is refused unread, as the control endpoint requires.
    /// - Throws: `ProfileError` without file or line; the profile is unchanged.
    public mutating func set(_ key: String, to value: String, readsFiles: Bool = true) throws(ProfileError) {
        let text = "\(key) = \(value)"
        do {
            let parsedKey = try ProfileKey.named(key.trimmingCharacters(in: .whitespaces))
            let trimmedValue = value.trimmingCharacters(in: .whitespaces)
            let change = try parsedKey.change(for: ProfileLine.Value(text: trimmedValue, isQuoted: false),
                                              context: SettingContext(readsFiles: readsFiles))
            change(&self)
        } catch {
            throw ProfileError(text: text, kind: error)
        }
    }

    /// This profile with one `key = value` setting applied; see `set(_:to:)`.
    public func setting(_ key: String, to value: String) throws(ProfileError) -> Profile {
        var profile = self
        try profile.set(key, to: value)
        return profile
    }

    /// The profile in the file format, fully resolved: every key, both directions explicit, readable units.
    ///
    /// The datagram keys (`loss.model`, `ge.*`, `duplicate`, `reorder`) and the `tcp.*` keys appear only where they
    /// differ from their defaults, so a profile that never uses them renders as before.
    /// `Profile(parsing: p.rendered, name: p.name) == p` for every profile whose durations are whole nanoseconds.
    public var rendered: String {
        var lines = ["description = \(ProfileLine.quotedIfNeeded(description))"]
        for (side, direction) in [(ProfileKey.Side.downlink, downlink), (.uplink, uplink)] {
            let prefix = side.rawValue + "."
            lines.append(prefix + "bandwidth = " + ProfileValue.format(direction.bandwidth))
            lines.append(prefix + "delay = " + ProfileValue.format(direction.delay))
            lines.append(prefix + "jitter = " + ProfileValue.format(direction.jitter))
            lines.append(prefix + "loss = " + ProfileValue.format(direction.loss))
            lines.append(prefix + "queue = " + ProfileValue.format(direction.queueLimit))
            lines.append(prefix + "burst = " + ProfileValue.format(direction.burst))
            lines += DirectionSettings.rendered(direction).map { prefix + $0.key + " = " + $0.value }
        }
        lines += DirectionSettings.renderedConnectionWide(uplink).map { $0.key + " = " + $0.value }
        lines += tcp.settings.map { $0.key + " = " + $0.value }
        lines.append("dns.delay = " + ProfileValue.format(dnsDelay))
        lines.append("fault = " + fault.rawValue)
        lines.append("seed = " + ProfileValue.format(seed: seed))
        lines.append("exclude = " + ProfileValue.format(exclude))
        return lines.joined(separator: "\n") + "\n"
    }

    /// One line for listings, such as `780 kbit/s down, 330 kbit/s up, 100 ms delay, 0 % loss`.
    ///
    /// Rates, delay and loss always appear (as `down/up` pairs when the directions differ); jitter, queue, burst,
    /// DNS delay, fault and seed appear only when they differ from the defaults.
    public var summary: String {
        var parts: [String] = []
        if downlink.bandwidth == nil && uplink.bandwidth == nil {
            parts.append("unlimited bandwidth")
        } else {
            parts.append("\(ProfileValue.format(downlink.bandwidth)) down")
            parts.append("\(ProfileValue.format(uplink.bandwidth)) up")
        }
        parts.append(pair(\.delay, ProfileValue.format) + " delay")
        if downlink.jitter != .zero || uplink.jitter != .zero {
            parts.append("±" + pair(\.jitter, ProfileValue.format) + " jitter")
        }
        parts.append(pair(\.loss, ProfileValue.format) + " loss")
        if downlink.queue != DirectionProfile.defaultQueue || uplink.queue != DirectionProfile.defaultQueue {
            parts.append("queue " + pair(\.queue, ProfileValue.format))
        }
        if downlink.burst != nil || uplink.burst != nil {
            parts.append("burst " + pair(\.burst, ProfileValue.format))
        }
        parts += DirectionSettings.all.compactMap { $0.summary(downlink: downlink, uplink: uplink) }
        if tcp != TCPSettings() { parts.append("TCP " + tcp.settings.map { "\($0.key.dropFirst(4)) \($0.value)" }.joined(separator: " ")) }
        if dnsDelay != .zero { parts.append(ProfileValue.format(dnsDelay) + " DNS delay") }
        if fault != .none { parts.append("fault \(fault.rawValue)") }
        if let seed { parts.append("seed \(seed)") }
        if !exclude.isEmpty { parts.append("excluding " + ProfileValue.format(exclude)) }
        return parts.joined(separator: ", ")
    }

    /// One value if both directions agree, else `down/up`.
    private func pair<Value: Equatable>(_ field: KeyPath<DirectionProfile, Value>, _ format: (Value) -> String) -> String {
        let down = downlink[keyPath: field], up = uplink[keyPath: field]
        return down == up ? format(down) : "\(format(down))/\(format(up))"
    }
}

extension DirectionProfile {
    /// `p 1 %, r 25 %` (plus the states' loss rates when not 100 % and 0 %), or `off` under random loss.
    var burstLossSummary: String {
        guard lossModel == .gilbertElliott else { return "off" }
        let model = gilbertElliott
        var text = "p \(ProfileValue.format(model.goodToBad)) r \(ProfileValue.format(model.badToGood))"
        if model.lossInBad != Percentage(100) { text += " loss-bad \(ProfileValue.format(model.lossInBad))" }
        if model.lossInGood != .zero { text += " loss-good \(ProfileValue.format(model.lossInGood))" }
        return text
    }
}

extension TCPSettings {
    /// The `tcp.*` keys whose values differ from Linux's defaults, in the file format's order.
    var settings: [(key: String, value: String)] {
        let defaults = TCPSettings()
        var settings: [(key: String, value: String)] = []
        if congestion != defaults.congestion { settings.append(("tcp.congestion", congestion.rawValue)) }
        if initialWindow != defaults.initialWindow { settings.append(("tcp.initial-window", String(initialWindow))) }
        if slowStartAfterIdle != defaults.slowStartAfterIdle {
            settings.append(("tcp.slow-start-after-idle", slowStartAfterIdle ? "on" : "off"))
        }
        return settings
    }
}
