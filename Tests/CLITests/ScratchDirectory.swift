import Foundation

/// A directory of a test's own under the system's temporary one, removed with everything in it when the last
/// reference to it goes, so the recordings and reports a test writes are gone when it ends, also when it fails.
final class ScratchDirectory: Sendable {
    let path: String

    /// Creates the directory, named `prefix` and a random suffix; a failure shows when a test writes into it.
    init(_ prefix: String) {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
            .path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    /// The path of a file named `name` in the directory.
    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
