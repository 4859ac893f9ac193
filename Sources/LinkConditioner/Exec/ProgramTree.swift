// The processes that keep everything a program under `linkcond exec` starts within linkcond's lifetime.
//
// The namespace helper, linkcond's child, has already unshared a PID namespace; it forks the namespace's init, which
// forks the program. The helper and the init each get the parent-death signal (SIGKILL), so when linkcond ends,
// however it ends, the kernel kills the helper, then the init, and with the init every process in its namespace:
// the program's children, grandchildren and daemons, whatever they reparented to. When the program exits, the
// init exits with its status and the rest of the namespace goes with it.
//
// The program is not the namespace's init itself: the kernel delivers to an init only the signals it handles, so a
// program without a handler would lose a terminal's ^C and the SIGTERM linkcond passes on. The init is this small
// loop, which passes SIGINT and SIGTERM on to the program and reaps the orphans it adopts. The helper and the init
// run on their single (main) thread.

/// The namespace helper's last part: the PID namespace's init and the program under it.
enum ProgramTree {
    /// Forks the init of the PID namespace the helper unshared, waits for it, and exits with the program's status
    /// (128+N when signal N ended it). Never returns.
    static func run(_ program: [String]) -> Never {
        let lifeline: (read: Int32, write: Int32)
        let initProcess: Int32
        do {
            Namespaces.blockChildAndTerminationSignals()
            lifeline = try Namespaces.lifeline()
            initProcess = try Namespaces.fork()
        } catch {
            Namespaces.writeErrorLine("linkcond exec: cannot start the program's PID namespace: \(error)")
            Namespaces.exit(1)
        }
        if initProcess == 0 { runInit(program, lifeline: lifeline) }
        Namespaces.close(lifeline.read)
        Namespaces.exit(waitPassingSignals(to: initProcess))
    }

    /// The init (pid 1 of the namespace): dies with the helper, shows the namespace in /proc, and forks the program.
    private static func runInit(_ program: [String], lifeline: (read: Int32, write: Int32)) -> Never {
        Namespaces.close(lifeline.write)
        do {
            try Namespaces.dieWithParent(holding: lifeline.read)
        } catch {
            // linkcond and the helper are gone already: the program must not start.
            Namespaces.exit(1)
        }
        Namespaces.close(lifeline.read)
        // Best effort: where the kernel refuses a new proc (a container that masks parts of /proc), /proc stays the
        // host's, and /proc/self still names the program, as before.
        try? Namespaces.mountProcessFilesystem()
        let programProcess: Int32
        do {
            programProcess = try Namespaces.fork()
        } catch {
            Namespaces.writeErrorLine("linkcond exec: cannot start the program: \(error)")
            Namespaces.exit(1)
        }
        if programProcess == 0 { execute(program) }
        Namespaces.exit(waitPassingSignals(to: programProcess))
    }

    /// Replaces the process with the program; exits 127 when it is not found, 126 when it cannot run, as a shell.
    private static func execute(_ program: [String]) -> Never {
        let failure = Namespaces.execute(program)
        if failure == .noSuchFile {
            Namespaces.writeErrorLine("linkcond: \(program[0]): command not found")
            Namespaces.exit(127)
        }
        Namespaces.writeErrorLine("linkcond: \(program[0]): \(failure)")
        Namespaces.exit(126)
    }

    /// Waits for `child` and returns its exit status, passing on SIGINT and SIGTERM sent with kill (a terminal's
    /// reach the whole foreground process group, `child` included) and reaping every other child meanwhile.
    /// SIGINT, SIGTERM and SIGCHLD must be blocked.
    private static func waitPassingSignals(to child: Int32) -> Int32 {
        while true {
            while let ended = Namespaces.reapAnyChild() {
                if ended.pid == child { return ended.status }
            }
            let (signal, fromTerminal) = Namespaces.waitForSignalOrChild()
            if signal != Namespaces.childSignal && signal > 0 && !fromTerminal { Namespaces.signal(child, signal) }
        }
    }
}
