import LinkConditioner

/// Bytes a receiver could read at one instant.
struct Delivery: Equatable {
    var at: Instant
    var bytes: Int
}

extension Instant {
    static func ms(_ value: Double) -> Instant { Instant(nanoseconds: Int64((value * 1e6).rounded())) }
    static func s(_ value: Double) -> Instant { Instant(nanoseconds: Int64((value * 1e9).rounded())) }
    var seconds: Double { Double(nanoseconds) / 1e9 }
}

extension LinkDirection {
    /// Wakes at every service time, `lateness` after it is due, until nothing is left to serialise or `limit`.
    func serveAll(lateness: Duration = .zero, until limit: Instant = .s(3600)) {
        while let next = nextServiceTime, next <= limit {
            _ = advance(to: next + lateness)
        }
    }

    /// Serialises everything and returns each flow's full delivery schedule.
    func schedule(of flows: [LinkFlow], lateness: Duration = .zero) -> [[Delivery]] {
        serveAll(lateness: lateness)
        return flows.map { $0.drainSchedule() }
    }
}

extension LinkFlow {
    /// Takes every scheduled byte at its exact delivery time and returns the schedule.
    func drainSchedule() -> [Delivery] {
        var deliveries: [Delivery] = []
        while let next = nextDeliveryTime {
            deliveries.append(Delivery(at: next, bytes: takeDeliverable(at: next)))
        }
        return deliveries
    }
}

/// Pairs each delivered byte range with the arrival it came from (bytes are FIFO) and returns their latencies.
func latencies(arrivals: [Delivery], deliveries: [Delivery]) -> [Duration] {
    var result: [Duration] = []
    var arrivalIndex = 0
    var arrivalLeft = arrivals.first?.bytes ?? 0
    for delivery in deliveries {
        var left = delivery.bytes
        while left > 0 {
            let take = min(left, arrivalLeft)
            result.append(delivery.at - arrivals[arrivalIndex].at)
            left -= take
            arrivalLeft -= take
            if arrivalLeft == 0 {
                arrivalIndex += 1
                arrivalLeft = arrivalIndex < arrivals.count ? arrivals[arrivalIndex].bytes : 0
            }
        }
    }
    return result
}

func total(_ deliveries: [Delivery]) -> Int { deliveries.reduce(0) { $0 + $1.bytes } }

func isNonDecreasing(_ deliveries: [Delivery]) -> Bool {
    zip(deliveries, deliveries.dropFirst()).allSatisfy { $0.at <= $1.at }
}
