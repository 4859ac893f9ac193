import LinkModel
import LinkProfiles

extension Instant {
    static func ms(_ value: Double) -> Instant { Instant(nanoseconds: Int64((value * 1e6).rounded())) }
    static func s(_ value: Double) -> Instant { Instant(nanoseconds: Int64((value * 1e9).rounded())) }
}
