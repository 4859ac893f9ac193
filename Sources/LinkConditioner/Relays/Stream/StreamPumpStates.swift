/// The states of one direction of a relayed TCP connection (`StreamPump`): its source, its destination, its read
/// turns and its first release. Each is an enum whose transitions live in one function, so that a combination the
/// pump cannot be in (an ended source still to be read, a finished destination still blocked) cannot be written.
/// Lives on the event loop thread, as the pump does.
extension StreamPump {
    /// What the pump knows of its source, from epoll's edges and its own reads.
    enum Source {
        /// Edge-triggered epoll: nothing more to read until a new edge says so.
        case drained
        /// The source may hold bytes not read yet.
        case readable
        /// Its end of stream was read or decided; it crosses the link as `EndOfStream` says. Nothing more is read.
        case ended(EndOfStream)
        /// Never read again: the connection is blackholed, failing or hung.
        case stopped

        /// The source after an event reported it readable (`sourceEvent`, `startReading`, a splice loop's return).
        mutating func becameReadable() {
            switch self {
            case .drained, .readable: self = .readable
            case .ended, .stopped: break
            }
        }

        /// The source after a read heard would-block, or stopped short where that empties it.
        mutating func drain() {
            if case .readable = self { self = .drained }
        }
    }

    /// How a source's end of stream crosses to the destination.
    struct EndOfStream {
        /// When the source ended.
        var at: Instant
        /// What the FIN waits beyond the flow's opening: the link's delay and the stage's.
        var wait: Duration
        /// How the stream came to end.
        var cause: EndCause
    }

    /// How a source's stream came to end.
    enum EndCause {
        /// A read reached it: the socket holds nothing unread, so closing it sends a FIN, not a reset.
        case readFromSocket
        /// A filter, a front end or a splice loop's hand-back decided it; the socket may still hold bytes.
        case decided
        /// A stage cut the stream: once the bytes before the cut are written, the connection ends as it says.
        case cut(StreamEnd)

        /// The cause once the stream ends again for `next`: an end read from the socket stays one, as does a cut.
        func merged(with next: EndCause) -> EndCause {
            switch self {
            case .readFromSocket, .cut: self
            case .decided: next
            }
        }
    }

    /// What a read that returns less than it asked for says about the source, from the last event it reported.
    enum ShortRead {
        /// Nothing yet, or urgent data: read again to learn more.
        case readAgain
        /// The peer hung up or failed before: read again, since its end of stream may wait behind the bytes.
        case readAgainAfterHangUp
        /// The source is empty: an event came without a hang-up (bytes arriving later make a new edge).
        case emptiesSource
        /// The source's end of stream is next: the last event reported the peer's FIN without an error or urgent
        /// data. The kernel reports the FIN only once every byte before it is queued, and a TCP read stops short
        /// only at the FIN or an empty queue, so the next read would return 0.
        case endsSource

        /// The state after the source reported `events`. A hang-up or an error means the end of stream may wait
        /// behind the bytes, for good; urgent data makes a read stop short at its mark with bytes behind it.
        func after(_ events: UInt32) -> ShortRead {
            let urgent = events & Epoll.priority != 0
            let hungUp = events & StreamPump.hangUpEvents != 0 || self == .readAgainAfterHangUp || self == .endsSource
            if events & Epoll.readHangUp != 0 && events & Epoll.error == 0 && !urgent { return .endsSource }
            if hungUp { return .readAgainAfterHangUp }
            return urgent ? .readAgain : .emptiesSource
        }

        /// The state once a splice loop carried the source: it took the source's events meanwhile, a hang-up
        /// among them perhaps, so a short read no longer shows the source empty.
        var afterSpliceLoop: ShortRead { self == .emptiesSource ? .readAgain : self }
    }

    /// The destination socket, and how far its stream has gone.
    enum Destination {
        /// Not connected yet (the upstream leg connects asynchronously): nothing is written.
        case connecting
        /// Edge-triggered epoll: it may take more bytes.
        case writable
        /// A write would block: nothing is written until it reports writable again.
        case blocked
        /// It has been sent end-of-stream after the last byte (or a stage's cut ended it).
        case finished
        /// The pump closed: the sockets belong to nobody and nothing more is read or written.
        case closed

        /// Whether the destination is connected (in any state after `connecting`, closed aside).
        var isConnected: Bool {
            switch self {
            case .writable, .blocked, .finished: true
            case .connecting, .closed: false
            }
        }

        /// The destination after an event reported it writable.
        mutating func becameWritable() {
            if case .blocked = self { self = .writable }
        }
    }

    /// Whether the pump reads now, and how it stamps what it reads.
    enum ReadTurn {
        /// No read runs; the next starts from `Arrivals`.
        case idle(Arrivals)
        /// A read runs (`readAvailable`): a call it makes that would start another read does not.
        case running(Arrivals)
    }

    /// How the pump stamps arrivals: bytes left in the socket while it could not read are written to the model when
    /// read, not when they arrived.
    enum Arrivals {
        /// No copied read yet: the source socket does not stamp arrivals; the pump has taken bytes as they came
        /// since it was made.
        case unstamped(since: Instant)
        /// The source stamps arrivals, and the pump has taken bytes as they came since `since`.
        case taking(since: Instant)
        /// The last read turn stopped with bytes left in the source: the next starts taking them from its start.
        case stalled

        /// Whether the source socket stamps arrivals yet.
        var stamps: Bool {
            if case .unstamped = self { return false }
            return true
        }

        /// Since when the pump takes bytes as they came, for a turn starting at `now`.
        func since(startingAt now: Instant) -> Instant {
            switch self {
            case .unstamped(let since), .taking(let since): since
            case .stalled: now
            }
        }
    }

    /// Whether the model has released any of this direction's bytes yet (its FIN counts).
    enum FirstRelease {
        case awaited
        case happened
    }

    /// Whether the destination gets TCP_NODELAY before its second write. Nagle's algorithm holds back only a write
    /// made while earlier bytes are unacknowledged, so the first write never waits, and a connection that writes
    /// its destination once (one request) or never saves the system call.
    enum NoDelay {
        /// Not asked, or already set.
        case untouched
        /// Asked; no write to the destination has been tried yet.
        case beforeFirstWrite
        /// Asked; one write was tried, so the next sets it.
        case beforeSecondWrite
    }
}
