import LinkModel
import LinkProfiles

/// What the receiving side took of datagrams offered with `offerDatagrams`.
struct DatagramRun {
    /// Datagrams the queue accepted.
    var accepted = 0
    /// Outcomes taken while offering, in delivery order.
    var outcomes: [DatagramDelivery] = []
}

extension DatagramLink {
    /// Wakes at every service time until nothing is left to serialise or `limit`.
    func serveAll(until limit: Instant = .s(3600)) {
        while let next = nextServiceTime, next <= limit {
            _ = advance(to: next)
        }
    }

    /// Offers `count` datagrams of `size` bytes on `flow`, one every `interval` from `start`. Before each, serves the
    /// link and takes the outcomes due, as the relay's pump does, so delivered datagrams leave the link's accounting.
    @discardableResult
    func offerDatagrams(
        _ count: Int, size: Int, every interval: Duration, from start: Instant = .zero,
        on flow: DatagramFlow
    ) -> DatagramRun {
        var run = DatagramRun()
        for number in 0..<count {
            let now = start + interval * number
            _ = advance(to: now)
            run.outcomes += flow.takeDeliverableDatagrams(at: now)
            if enqueue(size, on: flow, at: now).isAccepted { run.accepted += 1 }
        }
        return run
    }
}

extension DatagramFlow {
    /// Takes every datagram outcome at its exact time, in delivery order.
    func drainDatagrams() -> [DatagramDelivery] {
        var outcomes: [DatagramDelivery] = []
        while let next = nextDeliveryTime {
            outcomes += takeDeliverableDatagrams(at: next)
        }
        return outcomes
    }
}

/// Whether `observed` successes out of `trials` lie within the binomial 99 % interval around `probability`
/// (normal approximation, ±2.576 standard deviations).
func withinBinomial99(_ observed: Int, trials: Int, probability: Double) -> Bool {
    let mean = Double(trials) * probability
    let spread = 2.576 * (Double(trials) * probability * (1 - probability)).squareRoot()
    return abs(Double(observed) - mean) <= spread
}

/// The lengths of the runs of consecutive lost datagrams, given each datagram's outcome in sending order.
func lossBursts(_ outcomes: [DatagramDelivery]) -> [Int] {
    var bursts: [Int] = []
    var run = 0
    for outcome in outcomes.sorted(by: { $0.index < $1.index }) {
        if outcome.copies == 0 {
            run += 1
        } else if run > 0 {
            bursts.append(run)
            run = 0
        }
    }
    if run > 0 { bursts.append(run) }
    return bursts
}
