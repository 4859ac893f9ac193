/// Toxiproxy's `limit_data`: after `bytes` bytes have passed (counted from when the toxic started acting), the
/// connection closes, as Toxiproxy closes it: the other side gets exactly those bytes, then both sockets close.
final class LimitDataToxic: ToxicEffect {
    let bytes: Int64
    private var passed: Int64 = 0

    init(bytes: Int64) { self.bytes = bytes }

    func limit(_ count: Int) -> (kept: Int, ended: Bool) {
        let remaining = max(0, bytes - passed)
        let kept = Int(min(Int64(count), remaining))
        passed += Int64(kept)
        return (kept, passed >= bytes)
    }
}

extension ToxicKind {
    static let limitData = ToxicKind("limit_data", attributes: [("bytes", 1 << 50)]) { toxic, _ in
        LimitDataToxic(bytes: toxic.attribute("bytes"))
    }
}
