import Glibc
import LinkConditioner

/// The CPU the TCP model alone spends per GB: `gigabytes` of one bulk stream pushed through a `StreamLink` at
/// 1 Gbit/s, then at 1 Gbit/s + 10 ms with a 4 MiB queue, over a simulated clock (no sockets, no sleeping), as
/// the shaped relay feeds it: 64 KiB writes whenever the send buffer takes them, the link run event by event.
/// Its figure is the process's CPU time per simulated GB; with `perf stat -e instructions` it is a measure that
/// needs no quiet machine.
func benchmarkModelCost(gigabytes: Double) {
    print("## Model cost: one stream through StreamLink, simulated clock, \(gigabytes) GB per profile")
    let profiles: [(String, DirectionProfile)] = [
        ("1 Gbit/s", DirectionProfile(bandwidth: .gbps(1))),
        (
            "1 Gbit/s + 10 ms, 4 MiB queue",
            DirectionProfile(bandwidth: .gbps(1), delay: .milliseconds(10), queue: ByteCount(bytes: 4 << 20))
        ),
    ]
    for (name, profile) in profiles {
        let size = Int(gigabytes * 1e9)
        let start = processCPUSeconds()
        let simulated = pushThroughModel(size, profile: profile)
        let cpu = processCPUSeconds() - start
        let perGB = cpu / (Double(size) / 1e9)
        print(
            "\(name): \(String(format: "%.3f", perGB)) CPU s/GB (\(String(format: "%.2f", cpu)) s for "
                + "\(String(format: "%.1f", simulated.seconds)) simulated s)")
    }
}

/// Writes `size` bytes into one flow over `profile` (ACKs back over its delay) and runs the model until all
/// arrived; returns the simulated time it took.
private func pushThroughModel(_ size: Int, profile: DirectionProfile) -> Duration {
    let link = StreamLink(
        side: .acceptor, profile: profile, reverse: DirectionProfile(delay: profile.delay),
        settings: TCPSettings(), seed: 1)
    let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
    var written = 0
    var delivered = 0
    var now = Instant.zero
    while delivered < size {
        for changed in link.advance(to: now) { delivered += changed.takeDeliverable(at: now) }
        while written < size && link.canAccept(flow) {
            let chunk = min(64 * 1024, size - written)
            link.enqueue(chunk, on: flow, at: now)
            written += chunk
        }
        guard let next = link.nextServiceTime else { break }
        now = max(now, next)
    }
    return .nanoseconds(now.nanoseconds)
}

/// CPU time this process has used, user and system.
private func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
