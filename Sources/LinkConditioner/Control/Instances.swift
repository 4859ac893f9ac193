import Foundation

/// What a running linkcond tells the other commands about itself: `instances/NAME.json` in the private directory,
/// written (0600) when it starts and removed when it stops. `linkcond ps` lists these; the steering commands pick
/// their instance among them.
public struct InstanceDescriptor: Codable, Sendable, Hashable {
    public var name: String
    public var pid: Int32
    /// The process's start time in clock ticks since boot (`/proc/PID/stat`), which tells a reused pid apart.
    public var processStart: UInt64?
    /// When the instance started.
    public var started: Date
    /// The command that runs it: `run` or `exec`.
    public var command: String
    /// The profile it started with, as given (a built-in name or a path).
    public var profile: String
    /// Its listeners as its ready lines name them, without `ready `: `tcp 127.0.0.1:4000 127.0.0.1:3000`.
    public var listeners: [String]
    /// Its control endpoints: its own socket (`instances/NAME.sock`) first, then the one `ready control` printed.
    public var control: [String]
    public var version: String

    public init(
        name: String, process: ProcessIdentity, started: Date, command: String, profile: String,
        listeners: [String], control: [String]
    ) {
        self.name = name
        pid = process.pid
        processStart = process.startTicks
        self.started = started
        self.command = command
        self.profile = profile
        self.listeners = listeners
        self.control = control
        version = linkcondVersion
    }

    /// Reads what it can: only the name and pid are required, so a descriptor of another linkcond version is listed.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        pid = try container.decode(Int32.self, forKey: .pid)
        processStart = try container.decodeIfPresent(UInt64.self, forKey: .processStart)
        started = (try? container.decodeIfPresent(Date.self, forKey: .started)) ?? Date(timeIntervalSince1970: 0)
        command = (try? container.decodeIfPresent(String.self, forKey: .command)) ?? "run"
        profile = (try? container.decodeIfPresent(String.self, forKey: .profile)) ?? ""
        listeners = (try? container.decodeIfPresent([String].self, forKey: .listeners)) ?? []
        control = (try? container.decodeIfPresent([String].self, forKey: .control)) ?? []
        version = (try? container.decodeIfPresent(String.self, forKey: .version)) ?? ""
    }

    /// The process the descriptor names.
    public var process: ProcessIdentity { ProcessIdentity(pid: pid, startTicks: processStart) }

    /// The JSON written to the file: keys sorted, dates in ISO 8601.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self) + "\n"
    }

    public static func parse(_ text: String) -> InstanceDescriptor? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(InstanceDescriptor.self, from: Data(text.utf8))
    }
}

/// Instance names: what `--name` and `LINKCOND_NAME` accept, and the name an instance gets without one.
public enum InstanceName {
    public static let maximumLength = 32

    /// What is wrong with `name` as an instance name, or nil when it is one: 1 to 32 letters, digits, `.`, `_` or
    /// `-`, not starting with `.` or `-` (it names files, and follows options on command lines).
    public static func problem(with name: String) -> String? {
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "_" || scalar == "-")
        }
        guard !name.isEmpty, name.count <= maximumLength, allowed, !name.hasPrefix("."), !name.hasPrefix("-") else {
            return
                "expected 1 to \(maximumLength) letters, digits, \".\", \"_\" or \"-\", not starting with \".\" or \"-\", such as ci-3g or lte-2"
        }
        return nil
    }

    /// The base of an automatic name for a profile given as `argument`: a built-in name as it is, a file's base name
    /// without `.profile`; characters a name cannot hold become `-`.
    public static func base(forProfile argument: String) -> String {
        var base = (argument as NSString).lastPathComponent
        if base.hasSuffix(".profile") { base = String(base.dropLast(".profile".count)) }
        let cleaned = String(
            base.unicodeScalars.map { scalar -> Character in
                scalar.isASCII
                    && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "_" || scalar == "-")
                    ? Character(scalar) : "-"
            }
        ).drop { $0 == "." || $0 == "-" }
        // Room for "-" and a number of up to four digits.
        let trimmed = String(cleaned.prefix(maximumLength - 5))
        return trimmed.isEmpty ? "linkcond" : trimmed
    }
}

/// The name a starting instance asks for.
public enum InstanceNameRequest: Sendable, Hashable {
    /// This name, refused when a running instance has it.
    case given(String)
    /// `BASE-N` with the lowest N no running instance has.
    case automatic(base: String)
}

/// Why an instance could not take its name.
public enum InstanceClaimError: Error, CustomStringConvertible {
    case nameTaken(String, pid: Int32)
    case refused(PrivateFiles.Refusal)

    public var description: String {
        switch self {
        case .nameTaken(let name, let pid):
            "a linkcond named \"\(name)\" already runs (pid \(pid)): choose another --name, or stop that one"
        case .refused(let refusal): refusal.description
        }
    }
}

/// The `instances` directory in the user's private directory, where each running linkcond keeps its descriptor
/// (`NAME.json`) and its control socket (`NAME.sock`).
///
/// Used from the command line's main thread. Names are claimed, and stale descriptors removed, under an `flock` on
/// `.lock` in the directory, so two instances starting at once never take one name, and a command that removes a
/// stale descriptor never removes one an instance has just written in its place. A start removes every stale
/// instance's files, so what an instance killed by SIGKILL left behind goes at the next start.
public struct InstanceDirectory: Sendable {
    public var path: String

    public init(path: String = ControlAddress.privateDirectory + "/instances") { self.path = path }

    public func descriptorPath(_ name: String) -> String { path + "/" + name + ".json" }
    public func socketPath(_ name: String) -> String { path + "/" + name + ".sock" }
    private var lockPath: String { path + "/.lock" }

    /// Creates the private directory and this one inside it (both 0700), or checks the existing ones.
    public func prepare() throws(PrivateFiles.Refusal) {
        try PrivateFiles.prepareDirectory(privateDirectory)
        try PrivateFiles.prepareDirectory(path)
    }

    /// The private directory this one is in, which holds the instances' token files.
    private var privateDirectory: String { (path as NSString).deletingLastPathComponent }

    /// Takes a name and writes its descriptor, made by `describe` from the name. A given name a running instance
    /// has is refused; an automatic one takes the next number. A stale descriptor (its process gone) gives way.
    public func claim(_ request: InstanceNameRequest, describe: (String) -> InstanceDescriptor)
        throws(InstanceClaimError) -> InstanceDescriptor
    {
        do {
            try prepare()
            return try PrivateFiles.withLock(lockPath) { () throws -> InstanceDescriptor in
                for stale in descriptors() where !stale.process.isRunning { removeFiles(ofStale: stale) }
                var number = 1
                for _ in 0..<Self.claimAttempts {
                    let name: String
                    switch request {
                    case .given(let given): name = given
                    case .automatic(let base): name = "\(base)-\(number)"
                    }
                    let descriptor = describe(name)
                    if try PrivateFiles.createExclusively(descriptor.json(), at: descriptorPath(name)) {
                        return descriptor
                    }
                    guard let holder = read(name) else {
                        // Unreadable (another version's, or damaged): its process may run, so it is never removed.
                        if case .given = request {
                            throw PrivateFiles.Refusal(
                                "\(descriptorPath(name)) cannot be read, so whether a linkcond named \"\(name)\" runs is unknown; choose another --name, or remove the file if none runs"
                            )
                        }
                        number += 1
                        continue
                    }
                    if holder.process.isRunning {
                        if case .given = request { throw InstanceClaimError.nameTaken(name, pid: holder.pid) }
                        number += 1
                    } else {
                        removeFiles(ofStale: holder)
                    }
                }
                throw PrivateFiles.Refusal("cannot claim a name in \(path) after \(Self.claimAttempts) attempts")
            }
        } catch let error as InstanceClaimError {
            throw error
        } catch let refusal as PrivateFiles.Refusal {
            throw .refused(refusal)
        } catch {
            throw .refused(PrivateFiles.Refusal("\(path): \(error)"))
        }
    }

    /// Rewrites the descriptor of a claimed name (as one step: readers see the old one or the new one).
    public func update(_ descriptor: InstanceDescriptor) throws(PrivateFiles.Refusal) {
        try PrivateFiles.replace(descriptor.json(), at: descriptorPath(descriptor.name))
    }

    /// Removes the socket and then the descriptor of an instance of this process that stops.
    public func release(_ descriptor: InstanceDescriptor) {
        removeFiles(of: descriptor.name)
    }

    /// The running instances, by name. Descriptors whose process is gone are removed on the way; unreadable ones
    /// are skipped.
    public func running() -> [InstanceDescriptor] {
        var live: [InstanceDescriptor] = []
        for descriptor in descriptors() {
            if descriptor.process.isRunning {
                live.append(descriptor)
            } else {
                removeIfStale(descriptor)
            }
        }
        return live
    }

    /// Every readable descriptor, by name.
    private func descriptors() -> [InstanceDescriptor] { descriptorNames().compactMap(read) }

    /// The names of every descriptor file here, readable or not, sorted.
    private func descriptorNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.map { String($0.dropLast(".json".count)) }
            .sorted()
    }

    /// The descriptors that cannot be read (another version's, damaged, too long): their instances may run, so a
    /// command that would pick the only instance must not guess while one is there.
    public func unreadableDescriptors() -> [String] {
        descriptorNames().filter { read($0) == nil }.map(descriptorPath)
    }

    /// The running instance called `name`, or nil.
    public func instance(named name: String) -> InstanceDescriptor? {
        guard InstanceName.problem(with: name) == nil, let descriptor = read(name) else { return nil }
        if descriptor.process.isRunning { return descriptor }
        removeIfStale(descriptor)
        return nil
    }

    static let descriptorLimit = 65536
    /// Names tried before giving up: stale files that cannot be removed must not make a claim loop forever.
    static let claimAttempts = 1000

    private func read(_ name: String) -> InstanceDescriptor? {
        (try? PrivateFiles.read(descriptorPath(name), limit: Self.descriptorLimit)).flatMap {
            $0.flatMap(InstanceDescriptor.parse)
        }
    }

    /// Removes a descriptor found stale, unless, under the lock, another process has claimed its name since.
    private func removeIfStale(_ stale: InstanceDescriptor) {
        _ = try? PrivateFiles.withLock(lockPath) {
            guard let current = read(stale.name), current.process == stale.process, !current.process.isRunning else {
                return
            }
            removeFiles(ofStale: stale)
        }
    }

    /// Removes what an instance whose process is gone left: the token file of each loopback TCP control endpoint
    /// its descriptor names, unless written after the descriptor (an instance on the same port since has its own
    /// there; an instance writes its token before it publishes its descriptor), then its socket and descriptor.
    private func removeFiles(ofStale stale: InstanceDescriptor) {
        let published = PrivateFiles.modified(descriptorPath(stale.name)) ?? Int64.min
        for control in stale.control {
            guard let address = ControlAddress(parsing: control), case .tcp(let endpoint) = address,
                address.isLocalOnly
            else { continue }
            let token = ControlAddress.tokenFile(port: endpoint.port, in: privateDirectory)
            if let written = PrivateFiles.modified(token), written <= published { PrivateFiles.remove(token) }
        }
        removeFiles(of: stale.name)
    }

    private func removeFiles(of name: String) {
        PrivateFiles.remove(socketPath(name))
        PrivateFiles.remove(descriptorPath(name))
    }
}
