@testable import LinkConditioner

/// A datagram from a DNS client or from the upstream resolver, checked and re-numbered as `DNSForwarder` does:
/// the first byte says which of the two sent it.
enum DNSMessageTarget {
    static func run(_ input: FuzzInput) {
        let message = Array(input.stream)
        if (input.bytes.first ?? 0) & 1 == 0 {
            guard DNSMessage.problem(withQuery: message) == nil else { return }
        } else {
            guard DNSMessage.problem(withAnswer: message) == nil else { return }
        }
        let id = DNSMessage.id(of: message)
        let renumbered = DNSMessage.replacingID(of: message, with: ~id)
        precondition(
            DNSMessage.id(of: renumbered) == ~id && renumbered.count == message.count,
            "re-numbering changed more than the ID")
    }
}
