import Logging

/// A listening stream socket (TCP, or Unix-domain for the control endpoint) on the event loop: accepts one client a
/// wake, or batches while clients arrive faster than that, and hands each client to its owner.
///
/// Lives on the event loop thread. When the process is out of descriptors, a data listener keeps draining its
/// queue with a descriptor of the reserve, closing each client at once (`ShortageAnswer.turnAway`), and the control
/// endpoint and the Toxiproxy API take one from the reserve to serve the client (`.serve`). When that cannot be
/// done (the reserve is empty, or accept failed for another reason) it stops watching the socket for 100 ms instead
/// of spinning on an event it cannot clear, and tries again until an accept succeeds. Clients already accepted are
/// served meanwhile. One episode logs twice: when it starts and when it ends.
final class TCPAcceptor {
    /// What an acceptor does with waiting clients while the process is out of descriptors.
    enum ShortageAnswer {
        /// Accepts each with a reserve descriptor and closes it at once, so none waits in the kernel's queue for
        /// a connection linkcond could not relay (data listeners).
        case turnAway(DescriptorReserve)
        /// Gives up a reserve descriptor and serves the client on it; the owner refills the reserve once the
        /// connection closed (the control endpoint and the Toxiproxy API, which must always answer).
        case serve(DescriptorReserve)
    }

    let localAddress: SocketAddress
    private let socket: Socket
    private let loop: EventLoop
    private let logger: Logger
    private var registration: EventLoop.RegistrationID?
    private var paused = false
    /// Set by the owner while it cannot take more clients; new ones wait in the kernel's backlog meanwhile.
    private var held = false
    private var onClient: ((Socket, SocketAddress) -> Void)?
    private var onFailure: (() -> Bool)?
    private var shortage: ShortageAnswer?
    /// Clients closed at accept because the process was out of descriptors (`ShortageAnswer.turnAway`).
    private(set) var turnedAway = 0
    /// Accepts that failed since the last one that succeeded: nonzero during an episode.
    private(set) var failedAttempts = 0
    /// Wakes of the listener that accepted, and accepts among them that found nobody waiting (each a system call
    /// spent to hear would-block), so a test can show how arrivals were taken.
    private(set) var wakes = 0
    private(set) var emptyAccepts = 0
    /// The loop turn of the last wake that accepted; the next turn's wake means clients were left waiting.
    private var lastAcceptTurn: UInt64 = 0

    static let batch = 256
    /// How long accepting pauses after a failed accept.
    static let pause = Duration.milliseconds(100)

    /// Binds and listens on `address`; nothing is accepted until `start`.
    convenience init(address: SocketAddress, loop: EventLoop, logger: Logger) throws(SystemError) {
        try self.init(adopting: try Socket.listening(on: address), loop: loop, logger: logger)
    }

    /// Takes ownership of `socket`, already listening (closed here if its address cannot be read); nothing is
    /// accepted until `start`. A TCP listener gets TCP_NODELAY, which Linux copies to every socket it accepts, so
    /// a relayed byte is never held back by Nagle and no accept pays a `setsockopt` of its own.
    init(adopting socket: Socket, loop: EventLoop, logger: Logger) throws(SystemError) {
        do {
            localAddress = try socket.localAddress()
        } catch {
            socket.close()
            throw error
        }
        if localAddress.isInternet { try? socket.setNoDelay() }
        self.socket = socket
        self.loop = loop
        self.logger = logger
    }

    /// Starts accepting; `onClient` owns each accepted socket (capture the owner weakly), and `onFailure` runs
    /// when an accept fails, to give up descriptors the owner can spare (true when it did, and the accept is
    /// tried again at once), and `shortage` says what is done when none is left. Closes the socket when it cannot
    /// be watched.
    func start(
        onFailure: (() -> Bool)? = nil, shortage: ShortageAnswer? = nil,
        _ onClient: @escaping (Socket, SocketAddress) -> Void
    ) throws(SystemError) {
        self.onClient = onClient
        self.onFailure = onFailure
        self.shortage = shortage
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable) { [weak self] _ in
                self?.acceptPending()
            }
        } catch {
            close()
            throw error
        }
    }

    /// Accepts one client, or, when the listener was reported in the turn before too (clients arrive faster than
    /// one a turn), up to `batch` until none is left. The socket is watched level-triggered, so a client left
    /// waiting after the one accepted is reported again in the next turn: a client that arrives alone costs no
    /// accept that finds nobody, and a burst still drains in a turn or two.
    private func acceptPending() {
        var freedDescriptors = false
        wakes += 1
        let limit = loop.turn == lastAcceptTurn &+ 1 ? Self.batch : 1
        lastAcceptTurn = loop.turn
        // A data listener takes a new client only after the reserve got back what was given up.
        if case .turnAway(let reserve)? = shortage, reserve.isShort { reserve.refill() }
        var acceptedCount = 0
        while acceptedCount < limit {
            let accepted: IOResult<(Socket, SocketAddress)>
            do {
                accepted = try socket.accept()
            } catch {
                // Descriptors the owner gave up let this accept be tried again at once, but only once per turn.
                if !freedDescriptors, onFailure?() == true {
                    freedDescriptors = true
                    continue
                }
                if error.isDescriptorShortage, let answered = answerShortage(error, limit: limit - acceptedCount) {
                    if answered { return }
                    continue
                }
                if failedAttempts == 0 {
                    logger.error(
                        "accept on \(localAddress): \(error); pausing accepts, retrying every 100 ms until one succeeds"
                    )
                }
                failedAttempts += 1
                pause()
                return
            }
            guard case .processed(let (client, address)) = accepted else {
                emptyAccepts += 1
                endEpisode()
                return
            }
            endEpisode()
            acceptedCount += 1
            onClient?(client, address)
            if held { return }
        }
    }

    /// Answers waiting clients with the reserve while the process is out of descriptors: turns away up to `limit`
    /// of them (true: this wake is done), or serves one (false: accept the next as usual). Nil when the reserve is
    /// empty, and the acceptor pauses.
    private func answerShortage(_ error: SystemError, limit: Int) -> Bool? {
        switch shortage {
        case .turnAway(let reserve)?:
            var closed = 0
            while closed < limit {
                switch reserve.acceptAndClose(socket) {
                case nil:
                    return closed > 0 ? true : nil
                case .wouldBlock?:
                    return true
                case .processed?:
                    if failedAttempts == 0 {
                        logger.error(
                            "accept on \(localAddress): \(error); closing new connections at once until descriptors are free"
                        )
                    }
                    failedAttempts += 1
                    turnedAway += 1
                    closed += 1
                }
            }
            return true
        case .serve(let reserve)?:
            guard reserve.release(), case .processed(let (client, address))? = try? socket.accept() else {
                reserve.refill()
                return nil
            }
            if failedAttempts == 0 {
                logger.error("accept on \(localAddress): \(error); serving on a reserved descriptor")
            }
            failedAttempts += 1
            onClient?(client, address)
            return true
        case nil:
            return nil
        }
    }

    /// Logs the end of a run of failed accepts, once: an accept succeeded or found nobody waiting.
    private func endEpisode() {
        guard failedAttempts > 0 else { return }
        logger.notice("accept on \(localAddress): accepting again after \(failedAttempts) failed attempts")
        failedAttempts = 0
    }

    private func pause() {
        guard !paused, let registration else { return }
        paused = true
        loop.setInterest(registration, 0)
        loop.schedule(at: loop.clock.now() + Self.pause) { [weak self] in
            guard let self, let registration = self.registration else { return }
            self.paused = false
            if !self.held { self.loop.setInterest(registration, Epoll.readable) }
        }
    }

    /// Stops (`true`) or resumes (`false`) accepting, for an owner that has reached its connection limit.
    func hold(_ holding: Bool) {
        guard holding != held, let registration else { return }
        held = holding
        if !paused { loop.setInterest(registration, holding ? 0 : Epoll.readable) }
    }

    /// A second descriptor of the listening socket, for a successor that takes it over: the socket stays bound and
    /// listening when this acceptor closes its own descriptor.
    func duplicateSocket() throws(SystemError) -> Socket { try socket.duplicate() }

    /// Stops accepting and closes the listening socket.
    func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        onClient = nil
        socket.close()
    }
}
