import Foundation

/// A flag that flips from false to true once, from any thread.
package final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var isSet = false

    package init() {}

    /// Sets the flag and returns its previous value.
    package func exchange() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let previous = isSet
        isSet = true
        return previous
    }
}
