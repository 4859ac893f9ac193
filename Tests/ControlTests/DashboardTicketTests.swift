import Testing

@testable import LinkConditioner

/// The dashboard's one-time tickets over an injected clock: expiry and the limit are checked at chosen instants,
/// without waiting out the 60 s lifetime.
struct DashboardTicketTests {
    static let issued = Instant(nanoseconds: 5_000_000_000)

    @Test func aTicketIsTradedBeforeItsLifetimeEndsAndRefusedFromThenOn() throws {
        var tickets = DashboardTickets()
        let issuedTickets = [tickets.issue(now: Self.issued), tickets.issue(now: Self.issued)]
        let onTime = try #require(issuedTickets[0])
        let late = try #require(issuedTickets[1])

        let tradedOnTime = tickets.redeem(onTime, now: Self.issued + DashboardTickets.lifetime - .nanoseconds(1))
        let tradedLate = tickets.redeem(late, now: Self.issued + DashboardTickets.lifetime)

        #expect(tradedOnTime)
        #expect(!tradedLate)
    }

    @Test func aTicketIsTradedOnceAndARefusedOneIsVoid() throws {
        var tickets = DashboardTickets()
        let issuedTickets = [tickets.issue(now: Self.issued), tickets.issue(now: Self.issued)]
        let ticket = try #require(issuedTickets[0])
        let expired = try #require(issuedTickets[1])

        let first = tickets.redeem(ticket, now: Self.issued)
        let second = tickets.redeem(ticket, now: Self.issued)
        let late = tickets.redeem(expired, now: Self.issued + .seconds(3600))
        let lateThenOnTime = tickets.redeem(expired, now: Self.issued)
        let unknown = tickets.redeem("never issued", now: Self.issued)

        #expect(first)
        #expect(!second)
        #expect(!late)
        #expect(!lateThenOnTime, "a ticket presented late is not tried again")
        #expect(!unknown)
    }

    /// At most `limit` tickets wait; once their lifetime has passed they make room for new ones.
    @Test func expiredTicketsMakeRoomUnderTheLimit() {
        var tickets = DashboardTickets()
        let waiting = (0..<DashboardTickets.limit).compactMap { _ in tickets.issue(now: Self.issued) }

        let beyondTheLimit = tickets.issue(now: Self.issued + DashboardTickets.lifetime - .nanoseconds(1))
        let afterExpiry = tickets.issue(now: Self.issued + DashboardTickets.lifetime)

        #expect(waiting.count == DashboardTickets.limit)
        #expect(beyondTheLimit == nil)
        #expect(afterExpiry != nil)
    }
}
