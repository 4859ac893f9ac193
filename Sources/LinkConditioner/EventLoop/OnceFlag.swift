import Foundation

/// A flag that flips from false to true once, from any thread.
final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var isSet = false

    /// Sets the flag and returns its previous value.
    func exchange() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let previous = isSet
        isSet = true
        return previous
    }
}
