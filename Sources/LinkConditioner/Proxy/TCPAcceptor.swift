import Logging

/// A listening TCP socket on the event loop: accepts in batches and hands each client to its owner.
///
/// Lives on the event loop thread. When accept fails (typically out of descriptors) it stops watching the socket
/// for 100 ms instead of spinning on an event it cannot clear.
final class TCPAcceptor {
    let localAddress: SocketAddress
    private let socket: Socket
    private let loop: EventLoop
    private let logger: Logger
    private var registration: EventLoop.RegistrationID?
    private var paused = false
    private var onClient: ((Socket, SocketAddress) -> Void)?

    static let batch = 256

    /// Binds and listens on `address`; nothing is accepted until `start`.
    init(address: SocketAddress, loop: EventLoop, logger: Logger) throws(SystemError) {
        let socket = try Socket.listening(on: address)
        do {
            localAddress = try socket.localAddress()
        } catch {
            socket.close()
            throw error
        }
        self.socket = socket
        self.loop = loop
        self.logger = logger
    }

    /// Starts accepting; `onClient` owns each accepted socket (capture the owner weakly). Closes the socket when
    /// it cannot be watched.
    func start(_ onClient: @escaping (Socket, SocketAddress) -> Void) throws(SystemError) {
        self.onClient = onClient
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable) { [weak self] _ in
                self?.acceptPending()
            }
        } catch {
            close()
            throw error
        }
    }

    private func acceptPending() {
        for _ in 0..<Self.batch {
            let accepted: IOResult<(Socket, SocketAddress)>
            do {
                accepted = try socket.accept()
            } catch {
                logger.error("accept on \(localAddress): \(error); pausing accepts for 100 ms")
                pause()
                return
            }
            guard case .processed(let (client, address)) = accepted else { return }
            onClient?(client, address)
        }
    }

    private func pause() {
        guard !paused, let registration else { return }
        paused = true
        loop.setInterest(registration, 0)
        loop.schedule(at: loop.clock.now() + .milliseconds(100)) { [weak self] in
            guard let self, let registration = self.registration else { return }
            self.paused = false
            self.loop.setInterest(registration, Epoll.readable)
        }
    }

    /// Stops accepting and closes the listening socket.
    func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        onClient = nil
        socket.close()
    }
}
