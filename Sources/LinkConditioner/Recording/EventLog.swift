import Foundation
import Logging

/// Where `run --record` writes, and how much it may write.
public struct RecordingOptions: Sendable {
    public var path: String
    /// The file stops growing at this many bytes: the last line then says the recording was cut.
    public var limit: Int

    public init(path: String, limit: Int = EventLog.defaultLimit) {
        self.path = path
        self.limit = limit
    }
}

/// The recording sink: turns what the relays, pumps and DNS forwarder report into JSON lines, one event each, and
/// writes them in batches on its own thread.
///
/// Lives on the event loop thread, except for the writer. Per-read and per-write reports are coalesced: each
/// direction of a connection gets one `send` (and one `deliver`) line per `window` of activity, carrying the bytes,
/// the number of reads and how many were small, so a bulk transfer writes tens of lines a second, not one per read.
/// The file is truncated at the size limit, never rotated: it keeps the recording's beginning, and its last line
/// (`{"ev":"limit"}`) says where it was cut. If the disk falls behind by more than `backlogLimit`, events are
/// dropped and counted in the next `dropped` line rather than held in memory.
public final class EventLog: TrafficRecorder {
    /// The format's version, in the first line; `linkcond report` refuses other versions.
    public static let version = 1
    public static let defaultLimit = 100 * 1024 * 1024
    /// How long one coalesced `send` or `deliver` line spans at most.
    static let window = Duration.milliseconds(20)
    /// Reads shorter than this count as small writes.
    static let smallWrite = 100
    private static let flushInterval = Duration.milliseconds(200)
    private static let batchSize = 64 * 1024
    private static let backlogLimit = 8 * 1024 * 1024

    private struct DropKey: Hashable {
        var connection: UInt64
        var direction: RecordedDirection
        var cause: StallCause
    }

    private struct Window {
        var start: Instant
        var last: Instant
        var bytes = 0
        var operations = 0
        var small = 0
    }

    private let loop: EventLoop
    private let origin: Instant
    private let limit: Int
    private let writer: LogWriter
    private var buffer: [UInt8] = []
    private var written = 0
    private var cut = false
    private var dropped = 0
    private var nextConnection: UInt64 = 1
    private var sends: [UInt64: Window] = [:]
    private var deliveries: [UInt64: Window] = [:]
    /// Open windows of dropped datagrams, by connection, direction and cause.
    private var drops: [DropKey: Window] = [:]
    private var flushTimerArmed = false
    private var closed = false

    /// Opens the file at `options.path` and buffers the header line; nothing is written, and an earlier file of that
    /// name keeps its contents, until `begin` (or none of it, after `abandon`). A write that fails later (a full
    /// disk) is logged on `logger` once, and the recording ends there.
    init(_ options: RecordingOptions, loop: EventLoop, logger: Logger, wallClock: Date = Date()) throws(RecordFile
        .Refusal)
    {
        self.loop = loop
        self.origin = loop.clock.now()
        self.limit = options.limit
        self.writer = try LogWriter(path: options.path, logger: logger)
        let wall = ISO8601DateFormatter.string(
            from: wallClock, timeZone: .gmt,
            formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        append(
            "{\"v\":\(Self.version),\"ev\":\"start\",\"wall\":\(json(wall)),\"linkcond\":\(json(linkcondVersion)),\"limit\":\(limit),\"window_us\":\(Self.window.nanoseconds / 1000)}"
        )
    }

    /// Replaces an earlier file of that name and starts writing, once the proxy has started. Loop thread.
    func begin() throws(SystemError) { try writer.start() }

    /// Gives the file up unwritten after a start that failed, removing it if opening made it. Loop thread.
    func abandon() {
        guard !closed else { return }
        closed = true
        writer.abandon()
    }

    private func micros(_ now: Instant) -> Int64 { (now - origin).nanoseconds / 1000 }

    func connectionOpened(listener: String, client: String, destination: String, name: String?, at now: Instant)
        -> UInt64
    {
        let id = nextConnection
        nextConnection += 1
        append(
            "{\"t\":\(micros(now)),\"ev\":\"open\",\"conn\":\(id),\"listener\":\(json(listener)),\"client\":\(json(client)),\"dest\":\(json(destination))\(name.map { ",\"name\":\(json($0))" } ?? "")}"
        )
        return id
    }

    func flowOpened(listener: String, client: String, destination: String, at now: Instant) -> UInt64 {
        let id = nextConnection
        nextConnection += 1
        append(
            "{\"t\":\(micros(now)),\"ev\":\"open\",\"conn\":\(id),\"proto\":\"udp\",\"listener\":\(json(listener)),\"client\":\(json(client)),\"dest\":\(json(destination))}"
        )
        return id
    }

    func datagramsDropped(
        _ connection: UInt64, _ direction: RecordedDirection, count: Int, cause: StallCause, at now: Instant
    ) {
        let key = DropKey(connection: connection, direction: direction, cause: cause)
        if let open = drops[key], now - open.start >= Self.window {
            emitDrops(open, key)
            drops[key] = nil
        }
        var window = drops[key] ?? Window(start: now, last: now)
        window.last = now
        window.operations += count
        drops[key] = window
        armFlushTimer()
    }

    private func emitDrops(_ window: Window, _ key: DropKey) {
        append(
            "{\"t\":\(micros(window.start)),\"ev\":\"drop\",\"conn\":\(key.connection),\"dir\":\"\(key.direction.rawValue)\",\"cause\":\"\(key.cause.rawValue)\",\"datagrams\":\(window.operations),\"last\":\(micros(window.last))}"
        )
    }

    private func flushDrops(where due: (DropKey, Window) -> Bool) {
        for (key, window) in drops where due(key, window) {
            drops[key] = nil
            emitDrops(window, key)
        }
    }

    func connectionEstablished(_ connection: UInt64, at now: Instant) {
        append("{\"t\":\(micros(now)),\"ev\":\"established\",\"conn\":\(connection)}")
    }

    func bytesRead(_ connection: UInt64, _ direction: RecordedDirection, count: Int, at now: Instant) {
        accumulate(&sends, connection, direction, count: count, at: now, event: "send")
    }

    func bytesDelivered(_ connection: UInt64, _ direction: RecordedDirection, count: Int, at now: Instant) {
        accumulate(&deliveries, connection, direction, count: count, at: now, event: "deliver")
    }

    func stall(_ connection: UInt64, _ direction: RecordedDirection, cause: StallCause, ended: Bool, at now: Instant) {
        append(
            "{\"t\":\(micros(now)),\"ev\":\"\(ended ? "resume" : "stall")\",\"conn\":\(connection),\"dir\":\"\(direction.rawValue)\",\"cause\":\"\(cause.rawValue)\"}"
        )
    }

    func connectionClosed(_ connection: UInt64, by party: ClosingParty, reset: Bool, at now: Instant) {
        for direction in [RecordedDirection.up, .down] {
            let key = Self.key(connection, direction)
            if let window = sends.removeValue(forKey: key) { emit(window, connection, direction, event: "send") }
            if let window = deliveries.removeValue(forKey: key) {
                emit(window, connection, direction, event: "deliver")
            }
        }
        flushDrops { key, _ in key.connection == connection }
        append(
            "{\"t\":\(micros(now)),\"ev\":\"close\",\"conn\":\(connection),\"by\":\"\(party.rawValue)\",\"reset\":\(reset)}"
        )
    }

    func dnsLookup(_ lookup: RecordedLookup, at now: Instant) {
        let answers = lookup.answers.map(json).joined(separator: ",")
        append(
            "{\"t\":\(micros(now)),\"ev\":\"dns\",\"client\":\(json(lookup.client)),\"name\":\(json(lookup.name)),\"type\":\(json(lookup.type)),\"delay_us\":\(lookup.delay.nanoseconds / 1000),\"rcode\":\(lookup.responseCode.map(String.init) ?? "null"),\"answer\":[\(answers)]\(lookup.transport == "udp" ? "" : ",\"proto\":\(json(lookup.transport))")}"
        )
    }

    func conditionsChanged(_ conditions: LiveConditions, at now: Instant) {
        let profile = conditions.profile
        append(
            "{\"t\":\(micros(now)),\"ev\":\"profile\",\"name\":\(json(profile.name)),\"summary\":\(json(profile.summary)),\"offline\":\(conditions.offline.map { json($0.rawValue) } ?? "null"),\"delay_up_us\":\(profile.uplink.delay.nanoseconds / 1000),\"delay_down_us\":\(profile.downlink.delay.nanoseconds / 1000)}"
        )
    }

    func scenarioStep(_ description: String, line: Int?, at now: Instant) {
        append(
            "{\"t\":\(micros(now)),\"ev\":\"scenario\",\"step\":\(json(description)),\"line\":\(line.map(String.init) ?? "null")}"
        )
    }

    /// Writes what is buffered and every open window, waits for the writer, and closes the file. Loop thread.
    func close() {
        guard !closed else { return }
        for (key, window) in sends { emit(window, key >> 1, Self.direction(key), event: "send") }
        for (key, window) in deliveries { emit(window, key >> 1, Self.direction(key), event: "deliver") }
        sends.removeAll()
        deliveries.removeAll()
        flushDrops { _, _ in true }
        append("{\"t\":\(micros(loop.clock.now())),\"ev\":\"end\"}")
        closed = true
        handOver()
        writer.finish()
    }

    private static func key(_ connection: UInt64, _ direction: RecordedDirection) -> UInt64 {
        connection << 1 | (direction == .up ? 0 : 1)
    }

    private static func direction(_ key: UInt64) -> RecordedDirection { key & 1 == 0 ? .up : .down }

    /// Adds one read or write to its direction's open window, writing the window out first when it has run its span.
    private func accumulate(
        _ windows: inout [UInt64: Window], _ connection: UInt64, _ direction: RecordedDirection,
        count: Int, at now: Instant, event: String
    ) {
        let key = Self.key(connection, direction)
        if let open = windows[key], now - open.start >= Self.window {
            emit(open, connection, direction, event: event)
            windows[key] = nil
        }
        var window = windows[key] ?? Window(start: now, last: now)
        window.last = now
        window.bytes += count
        window.operations += 1
        if count < Self.smallWrite { window.small += 1 }
        windows[key] = window
        armFlushTimer()
    }

    private func emit(_ window: Window, _ connection: UInt64, _ direction: RecordedDirection, event: String) {
        let operations = event == "send" ? "reads" : "writes"
        append(
            "{\"t\":\(micros(window.start)),\"ev\":\"\(event)\",\"conn\":\(connection),\"dir\":\"\(direction.rawValue)\",\"bytes\":\(window.bytes),\"\(operations)\":\(window.operations),\"small\":\(window.small),\"last\":\(micros(window.last))}"
        )
    }

    /// Adds one line to the batch, unless the file has reached its limit; hands a full batch to the writer.
    private func append(_ line: String) {
        assert(loop.inLoopThread, "the event log is used off its event loop thread")
        guard !cut, !closed else { return }
        var line = line
        if dropped > 0 {
            let note = "{\"t\":\(micros(loop.clock.now())),\"ev\":\"dropped\",\"events\":\(dropped)}\n"
            dropped = 0
            line = note + line
        }
        let size = line.utf8.count + 1
        if written + buffer.count + size > limit - 64 {
            cut = true
            buffer += Array("{\"t\":\(micros(loop.clock.now())),\"ev\":\"limit\",\"bytes\":\(limit)}\n".utf8)
            handOver()
            return
        }
        buffer += line.utf8
        buffer.append(0x0A)
        if buffer.count >= Self.batchSize { handOver() }
        armFlushTimer()
    }

    /// Writes out windows that have run their span and hands the batch over, every `flushInterval` while anything
    /// is pending, so a quiet recording still reaches the disk.
    private func armFlushTimer() {
        guard !flushTimerArmed, !closed else { return }
        flushTimerArmed = true
        loop.schedule(at: loop.clock.now() + Self.flushInterval) { [weak self] in
            guard let self, !self.closed else { return }
            self.flushTimerArmed = false
            let now = self.loop.clock.now()
            for (key, window) in self.sends where now - window.start >= Self.window {
                self.sends[key] = nil
                self.emit(window, key >> 1, Self.direction(key), event: "send")
            }
            for (key, window) in self.deliveries where now - window.start >= Self.window {
                self.deliveries[key] = nil
                self.emit(window, key >> 1, Self.direction(key), event: "deliver")
            }
            self.flushDrops { _, window in now - window.start >= Self.window }
            self.handOver()
            if !self.sends.isEmpty || !self.deliveries.isEmpty || !self.drops.isEmpty { self.armFlushTimer() }
        }
    }

    private func handOver() {
        guard !buffer.isEmpty else { return }
        if writer.backlog + buffer.count > Self.backlogLimit {
            dropped += buffer.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        } else {
            written += buffer.count
            writer.enqueue(buffer)
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Writes batches of the event log to its file on a thread of its own, so the event loop never waits for the disk.
final class LogWriter: @unchecked Sendable {
    private let file: RecordFile
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queue: [[UInt8]] = []
    private var queuedBytes = 0
    private var finishing = false
    private var finished = false
    /// Written and read by the writer thread only.
    private var failure: SystemError?
    private var written = 0
    private let path: String
    private let logger: Logger

    /// Opens `path` without emptying it; the thread starts with `start`.
    init(path: String, logger: Logger) throws(RecordFile.Refusal) {
        file = try RecordFile(opening: path)
        self.path = path
        self.logger = logger
    }

    /// Empties the file and starts the thread that writes it.
    func start() throws(SystemError) {
        try file.claim()
        let thread = Thread { [self] in run() }
        thread.name = "linkcond-record"
        thread.start()
    }

    /// Closes the file unwritten, before `start`, removing it if opening made it.
    func abandon() { file.abandon() }

    /// Bytes handed over and not yet written.
    var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return queuedBytes
    }

    func enqueue(_ batch: [UInt8]) {
        condition.lock()
        queue.append(batch)
        queuedBytes += batch.count
        condition.signal()
        condition.unlock()
    }

    /// Writes what is queued, closes the file and returns once the thread is done.
    func finish() {
        condition.lock()
        finishing = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !finishing { condition.wait() }
            let batches = queue
            queue.removeAll()
            let done = finishing && batches.isEmpty
            condition.unlock()
            for batch in batches where failure == nil {
                do {
                    try file.writeAll(batch)
                    written += batch.count
                } catch {
                    failure = error
                    logger.error("recording \(path): \(error); the recording ends after its first \(written) bytes")
                }
            }
            condition.lock()
            queuedBytes -= batches.reduce(0) { $0 + $1.count }
            condition.unlock()
            if done { break }
        }
        file.close()
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }
}

/// `text` as a JSON string literal, escaped as the control endpoint escapes its answers.
func json(_ text: String) -> String { JSONValue.quoted(text) }
