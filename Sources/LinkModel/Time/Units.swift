/// A data rate in bits per second of payload (the bytes an application reads and writes, not wire frames).
public struct BitRate: Comparable, Hashable, Sendable {
    public var bitsPerSecond: Double

    public init(bitsPerSecond: Double) { self.bitsPerSecond = bitsPerSecond }

    public static func kbps(_ value: Double) -> BitRate { BitRate(bitsPerSecond: value * 1_000) }
    public static func mbps(_ value: Double) -> BitRate { BitRate(bitsPerSecond: value * 1_000_000) }
    public static func gbps(_ value: Double) -> BitRate { BitRate(bitsPerSecond: value * 1_000_000_000) }

    public static func < (lhs: BitRate, rhs: BitRate) -> Bool { lhs.bitsPerSecond < rhs.bitsPerSecond }

    /// How long `bytes` take to serialise at this rate.
    public func transmissionTime(bytes: Int) -> Duration {
        .nanoseconds(Int64(roundingClamped: Double(bytes) * 8 * 1e9 / bitsPerSecond))
    }

    /// How many bytes this rate carries in `duration`.
    public func bytes(in duration: Duration) -> Double {
        bitsPerSecond * duration.seconds / 8
    }
}

/// An amount of data in bytes.
public struct ByteCount: Comparable, Hashable, Sendable {
    public var bytes: Int

    public init(bytes: Int) { self.bytes = bytes }

    public static func kib(_ value: Int) -> ByteCount { ByteCount(bytes: value * 1024) }
    public static func mib(_ value: Int) -> ByteCount { ByteCount(bytes: value * 1024 * 1024) }

    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.bytes < rhs.bytes }
}

/// A probability given as a percentage, 0 to 100.
public struct Percentage: Comparable, Hashable, Sendable {
    public var percent: Double

    public init(_ percent: Double) { self.percent = percent }

    public static let zero = Percentage(0)

    public var probability: Double { percent / 100 }

    public static func < (lhs: Percentage, rhs: Percentage) -> Bool { lhs.percent < rhs.percent }
}
