/// The one-time tickets `linkcond dashboard --open` asked for and no page has traded yet, each with its expiry.
///
/// Time is an argument: the control server passes its loop clock's `now`, a test any instant, so that expiry is
/// checked without waiting out the lifetime. Lives on the event loop thread, inside `ControlServer`.
struct DashboardTickets {
    /// How long a ticket may wait to be traded for the token, and how many may wait at once.
    static let lifetime = Duration.seconds(60)
    static let limit = 16

    private var expiries: [String: Instant] = [:]

    /// A new ticket valid before `now + lifetime`, or nil when `limit` unexpired tickets wait (expired ones are
    /// forgotten first).
    mutating func issue(now: Instant) -> String? {
        expiries = expiries.filter { $0.value > now }
        guard expiries.count < Self.limit else { return nil }
        let ticket = ControlToken.random()
        expiries[ticket] = now + Self.lifetime
        return ticket
    }

    /// Whether `ticket` was issued and has not expired at `now`. It is void afterwards either way: a ticket is
    /// traded once, and one presented late or by another user is not tried again.
    mutating func redeem(_ ticket: String, now: Instant) -> Bool {
        guard let expiry = expiries.removeValue(forKey: ticket) else { return false }
        return expiry > now
    }
}
