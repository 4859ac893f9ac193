import Foundation

/// A small text file a user names on the command line (a profile, a scenario, a Toxiproxy config), read whole but never more than
/// `limit` bytes, so a wrong path such as a log, `/dev/zero` or a 100 MB file is refused at once instead of being
/// read into memory and parsed line by line. Pipes are read too (`--profile <(…)`).
public enum UserTextFile {
    /// The most bytes a profile or scenario file may hold: what the control endpoint accepts in one body.
    public static let limit = 1 << 20

    /// Why a file could not be read, in words that follow its path.
    public enum Failure: Error, Hashable, Sendable {
        case missing
        case directory
        case unreadable
        case tooLarge
        case notUTF8

        /// The failure for a file of `kind` ("profile", "scenario").
        public func reason(for kind: String) -> String {
            switch self {
            case .missing: "no such file"
            case .directory: "is a directory, not a \(kind) file"
            case .unreadable: "cannot be read (check its permissions)"
            case .tooLarge: "is larger than a \(kind) file may be: at most 1 MiB (\(UserTextFile.limit) bytes)"
            case .notUTF8: "is not UTF-8 text"
            }
        }
    }

    /// The file's text, or why it cannot be had.
    public static func read(_ path: String) -> Result<String, Failure> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return .failure(.missing) }
        if isDirectory.boolValue { return .failure(.directory) }
        guard let handle = FileHandle(forReadingAtPath: path) else { return .failure(.unreadable) }
        defer { try? handle.close() }
        var data = Data()
        while data.count <= limit {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: limit + 1 - data.count)
            } catch {
                return .failure(.unreadable)
            }
            guard let chunk, !chunk.isEmpty else { break }
            data += chunk
        }
        guard data.count <= limit else { return .failure(.tooLarge) }
        guard let text = String(data: data, encoding: .utf8) else { return .failure(.notUTF8) }
        return .success(text)
    }
}
