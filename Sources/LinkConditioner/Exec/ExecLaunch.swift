/// A program started by `linkcond exec` in its own namespaces, from linkcond's side: the helper process (which runs
/// the program in a PID namespace of its own and exits with its status), the descriptors it handed over, and its
/// exit.
///
/// Made and driven on the command's main thread; SIGINT, SIGTERM and SIGCHLD must be blocked in every thread
/// before any starts (`Namespaces.blockChildAndTerminationSignals`).
public final class ExecLaunch {
    public let pid: Int32
    public let plumbing: ExecNamespace.Plumbing
    private var socket: Int32?

    /// The namespace helper failed, or the kernel refused what it needs; `description` says what and how to fix it.
    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts the helper for `program` and waits until its namespaces are built in `mode`; nothing is left behind
    /// when it throws.
    public init(program: [String], congestion: String, forwards: [UInt16] = [], mode: ExecNamespace.Mode = .auto) throws
    {
        let (ours, theirs) = try Namespaces.socketPair()
        let inherited: Int32
        do {
            inherited = try Namespaces.duplicate(theirs)
            Namespaces.close(theirs)
            try Namespaces.inheritAcrossExec(inherited)
        } catch {
            Namespaces.close(ours)
            throw error
        }
        let spawned: Int32
        do {
            spawned = try Namespaces.spawn(
                Namespaces.selfExecutable,
                [
                    "linkcond", ExecNamespace.helperCommand, String(inherited),
                    congestion, forwards.isEmpty ? "-" : forwards.map(String.init).joined(separator: ","),
                    mode.rawValue, "--",
                ] + program)
        } catch {
            Namespaces.close(ours)
            Namespaces.close(inherited)
            throw error
        }
        Namespaces.close(inherited)
        let answer = try? Namespaces.receive(over: ours)
        guard let answer,
            let plumbing = ExecNamespace.Plumbing(
                message: String(decoding: answer.message, as: UTF8.self),
                descriptors: answer.descriptors)
        else {
            answer?.descriptors.forEach(Namespaces.close)
            Namespaces.close(ours)
            _ = Namespaces.waitForChild(spawned)
            let text = answer.map { String(decoding: $0.message, as: UTF8.self) } ?? ""
            throw Refusal(
                description: text.isEmpty ? "the namespace helper ended without building the namespaces" : text)
        }
        pid = spawned
        socket = ours
        self.plumbing = plumbing
    }

    /// Lets the helper execute the program.
    public func start() throws {
        guard let socket else { return }
        defer {
            Namespaces.close(socket)
            self.socket = nil
        }
        try Namespaces.send(Array("go".utf8), descriptors: [], over: socket)
    }

    /// Ends the helper before it runs the program (closing the socket makes it exit) and reaps it.
    public func abandon() {
        if let socket { Namespaces.close(socket) }
        socket = nil
        _ = Namespaces.waitForChild(pid)
    }

    /// Waits for the program to exit, forwarding SIGINT and SIGTERM to it (except a terminal's, which the program
    /// received itself); returns its exit status (128+N when signal N ended it).
    public func waitForExit(onSignal: (Int32) -> Void = { _ in }) -> Int32 {
        while true {
            if let status = Namespaces.waitForChild(pid, blocking: false) { return status }
            let (signal, fromTerminal) = Namespaces.waitForSignalOrChild()
            if signal != Namespaces.childSignal && signal > 0 {
                onSignal(signal)
                if !fromTerminal { Namespaces.signal(pid, signal) }
            }
        }
    }
}
