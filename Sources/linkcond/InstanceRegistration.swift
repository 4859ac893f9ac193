import ArgumentParser
import Foundation
import LinkConditioner
import Logging

/// `--name` of `run` and `exec` (or `LINKCOND_NAME`): the name the other commands pick this instance by.
struct InstanceNameOption: ParsableArguments {
    static let environmentName = "LINKCOND_NAME"

    @Option(
        name: .long,
        help:
            "Name of this instance, which ps lists and --name of the other commands picks (default: $LINKCOND_NAME, else the profile's name and a number, such as 3g-1)."
    )
    var name: String?

    func validate() throws {
        if let (name, source) = given, let problem = InstanceName.problem(with: name) {
            throw ValidationError("\(source) \"\(name)\": \(problem).")
        }
    }

    /// The name asked for and where it came from (`--name` or `LINKCOND_NAME`); nil when neither gives one.
    var given: (String, String)? {
        if let name { return (name, "--name") }
        if let name = ProcessInfo.processInfo.environment[Self.environmentName], !name.isEmpty {
            return (name, Self.environmentName)
        }
        return nil
    }

    /// The name to claim: the given one, else `base` and the lowest free number.
    func request(base: String) -> InstanceNameRequest {
        given.map { .given($0.0) } ?? .automatic(base: base)
    }
}

/// This process's entry among the running instances: its descriptor, and its own control socket beside it.
///
/// Used on the main thread of `run` and `exec`: claimed once the listeners are bound, published once every control
/// endpoint is served, released when the process stops.
struct InstanceRegistration {
    let directory = InstanceDirectory()
    private(set) var descriptor: InstanceDescriptor

    /// Claims a name for an instance of `command` on `profile` with `listeners`. Prints why it cannot and throws
    /// the exit status: 2 when a running instance has the given name, 1 when the private directory is unusable.
    static func claim(
        _ request: InstanceNameRequest, command: String, profile: String, listeners: [BoundListener]
    ) throws -> InstanceRegistration {
        let directory = InstanceDirectory()
        let process = ProcessIdentity.current
        let started = Date()
        do {
            let descriptor = try directory.claim(request) { name in
                InstanceDescriptor(
                    name: name, process: process, started: started, command: command, profile: profile,
                    listeners: listeners.map { String($0.readyLine.dropFirst("ready ".count)) }, control: [])
            }
            return InstanceRegistration(descriptor: descriptor)
        } catch {
            printError("linkcond: \(error)")
            if case .nameTaken = error { throw ExitStatus.badInput }
            throw ExitStatus.runtimeFailure
        }
    }

    var name: String { descriptor.name }

    /// The line that tells scripts the name, printed after every other ready line.
    var readyLine: String { "ready name \(name)" }

    /// Serves this instance's own control socket, `instances/NAME.sock` (no token: a Unix socket serves this user
    /// only). A socket that cannot be made (a private directory too deep for a socket path) is logged and left
    /// out: the instance's other control endpoint still serves. Returns the endpoint as the descriptor records it.
    @discardableResult
    mutating func serveSocket(_ proxy: ConditionedProxy, logger: Logger) -> String? {
        let path = directory.socketPath(name)
        do {
            let served = try proxy.serveControl(at: .unix(path), token: nil)
            descriptor.control.append(served)
            return served
        } catch {
            logger.warning("no control socket at \(path): \(error); the commands reach this instance with --control")
            return nil
        }
    }

    /// Adds the control endpoint `ready control` printed to the descriptor.
    mutating func addControl(_ address: String) { descriptor.control.append(address) }

    /// Adds a served API to the descriptor's listeners, as its ready line names it (`toxiproxy http://…`).
    mutating func addListener(_ readyLine: String) {
        descriptor.listeners.append(String(readyLine.dropFirst("ready ".count)))
    }

    /// Writes the descriptor as it stands now.
    func publish() throws {
        do {
            try directory.update(descriptor)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
    }

    func release() { directory.release(descriptor) }
}

/// An instance of `exec` or `attach`, which print their ready lines on stderr (stdout is the program's): its name
/// claimed, its own socket and its control endpoint served, its descriptor published.
///
/// Used on the main thread, from `start` until `end`.
struct ServedInstance {
    /// The network namespace the control endpoint's TCP address is in, which decides whether the other commands
    /// can reach it by that address.
    enum ControlNamespace {
        /// The one the other linkcond commands run in (`exec`, `attach` in its own namespace).
        case shared
        /// Another one (`attach --netns/--pid`): the same address on the host is another socket (another
        /// instance's, perhaps), so it is neither recorded in the descriptor nor given a token file keyed by its
        /// port, and none is served unless `--control` asks; the instance's own socket, in the filesystem, serves.
        case separate
    }

    private var registration: InstanceRegistration
    private var createdFiles: [String]

    /// Claims a name for `command` running `profile`, serves `proxy`'s control endpoints at the instance's socket
    /// and at `control` (127.0.0.1:0 when nil, unless `namespace` is separate) with `token`, and prints `ready
    /// control` and `ready name` on stderr. When it cannot, it stops `proxy`, says why and throws the exit status.
    static func start(
        _ proxy: ConditionedProxy, command: String, profile: String, name: InstanceNameOption, control: String?,
        token: String?, namespace: ControlNamespace = .shared, logger: Logger
    ) throws -> ServedInstance {
        var registration: InstanceRegistration
        do {
            registration = try InstanceRegistration.claim(
                name.request(base: InstanceName.base(forProfile: profile)), command: command, profile: profile,
                listeners: proxy.listeners)
        } catch {
            proxy.stop()
            throw error
        }
        let socket = registration.serveSocket(proxy, logger: logger)
        var createdFiles: [String] = []
        do {
            let given = control.flatMap(ControlAddress.init(parsing:))
            let line: String?
            switch (namespace, given) {
            case (.shared, _):
                let address = given ?? .tcp(Endpoint(host: "127.0.0.1", port: 0))
                let (served, tokenFile) = try proxy.serveLocalControl(at: address, token: token, logger: logger)
                createdFiles += tokenFile.map { [$0] } ?? []
                registration.addControl(served)
                line = served
            case (.separate, .tcp(let endpoint)?):
                line = try proxy.serveControl(at: .tcp(endpoint), token: token)
            case (.separate, .unix(let path)?):
                let served = try proxy.serveControl(at: .unix(path), token: token)
                registration.addControl(served)
                line = served
            case (.separate, nil):
                line = socket
            }
            try registration.publish()
            if let line { printError("ready control \(line)") }
            printError(registration.readyLine)
        } catch {
            if !(error is ExitCode) { printError("linkcond \(command): control endpoint: \(error)") }
            proxy.stop()
            createdFiles.forEach(PrivateFiles.remove)
            registration.release()
            throw ExitStatus.runtimeFailure
        }
        return ServedInstance(registration: registration, createdFiles: createdFiles)
    }

    /// Removes what `start` made: the token file, the descriptor and the instance's socket.
    func end() {
        createdFiles.forEach(PrivateFiles.remove)
        registration.release()
    }
}
