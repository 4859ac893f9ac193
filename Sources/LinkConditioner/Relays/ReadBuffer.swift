/// The scratch buffer every read on the loop lands in before its bytes are copied into a right-sized chunk, with
/// the loop's other shared I/O resources.
///
/// Lives on the event loop thread; one per loop, so memory per connection is only the data it holds.
final class ReadBuffer {
    let bytes: UnsafeMutableRawBufferPointer
    /// The slots batched datagram reads land in, made on the first one.
    private(set) lazy var datagrams = DatagramBatch()
    /// Where released datagrams wait to be sent together, made on the first one.
    private(set) lazy var outbox = DatagramOutbox()
    /// Empty splice pipes kept for the next connection.
    let pipes = SplicePipePool()
    /// System calls the loop's relays made that a short connection can do without, so a test can show which.
    var calls = RelayCallTally()
    /// How many times the loop's pumps handed read bytes to their links with no stage to see them.
    private var admissions: UInt64 = 0

    /// The next number in the loop's order of admissions, so two pumps can tell which of them admitted last.
    func numberAdmission() -> UInt64 {
        admissions += 1
        return admissions
    }

    init(size: Int = 256 * 1024) {
        bytes = .allocate(byteCount: size, alignment: 16)
    }

    deinit { bytes.deallocate() }
}

/// Counts of the system calls a relay and a proxy front end's sessions make that a short connection might do without.
struct RelayCallTally: Sendable {
    /// Reads (or splices in) that found their source empty: a call spent to hear would-block.
    var emptyReads = 0
    /// Reads that returned nothing but the end of stream: a short read after the peer's FIN was reported spares it.
    var endReads = 0
    /// Half-closes (`shutdown`) sent to a destination after its last byte.
    var halfCloses = 0
    /// Write calls of a proxy front end's own answers straight to its client, before a relay carries the
    /// connection (one that would block counts too).
    var sessionWrites = 0
    /// Reads a proxy front end's session made of its client as soon as it was accepted, and those that found
    /// nothing yet.
    var sessionFirstReads = 0
    var sessionFirstReadsEmpty = 0
}
