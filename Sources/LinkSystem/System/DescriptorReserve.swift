import Glibc

/// Descriptors held open (on /dev/null) so linkcond still has some when the process runs out: one lets a data
/// listener accept a waiting client and close it at once, rather than leave it in the kernel's queue, and the
/// others let the control endpoint and the Toxiproxy API accept and answer while every other descriptor is taken.
///
/// Lives on the event loop thread. A descriptor given up is taken back by `refill`, which owners call once they
/// closed what it was given up for (the loop thread opens nothing in between, so it gets the same number back).
package final class DescriptorReserve {
    /// How many descriptors the reserve holds when full.
    let capacity: Int
    private var held: [Int32] = []

    /// Opens `capacity` placeholder descriptors (fewer when the process is already short).
    package init(capacity: Int) {
        self.capacity = capacity
        refill()
    }

    /// Descriptors the reserve holds now.
    var count: Int { held.count }

    /// Whether the reserve holds fewer than `capacity` descriptors.
    package var isShort: Bool { held.count < capacity }

    /// Reopens placeholders until the reserve is full or the process has no descriptor left.
    package func refill() {
        while held.count < capacity {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            held.append(descriptor)
        }
    }

    /// Gives up one placeholder, so the next descriptor the process opens can succeed; false when none is left.
    package func release() -> Bool {
        guard let descriptor = held.popLast() else { return false }
        _ = Glibc.close(descriptor)
        return true
    }

    /// Runs `body`, which opens a descriptor for a moment (a question to sock_diag, or a read of the kernel's socket
    /// table), with one of the reserve's given up for it, so it succeeds while the process is out of descriptors; the
    /// reserve takes it back after. The loop thread opens nothing else meanwhile.
    package func lending<T>(_ body: () -> T) -> T {
        let lent = release()
        defer { if lent { refill() } }
        return body()
    }

    /// Accepts one client of `listener` on a placeholder's descriptor and closes it at once, then takes the
    /// placeholder back: `.processed` with the client's address, `.wouldBlock` when nobody waits, nil when the
    /// reserve is empty or the accept failed anyway.
    package func acceptAndClose(_ listener: Socket) -> IOResult<SocketAddress>? {
        guard release() else { return nil }
        defer { refill() }
        guard case .some(let accepted) = try? listener.accept() else { return nil }
        switch accepted {
        case .processed(let (client, address)):
            client.close()
            return .processed(address)
        case .wouldBlock:
            return .wouldBlock
        }
    }

    /// Closes every placeholder.
    package func close() {
        for descriptor in held { _ = Glibc.close(descriptor) }
        held.removeAll()
    }

    /// A reserve its owner dropped without closing still gives its descriptors back.
    deinit { close() }
}
