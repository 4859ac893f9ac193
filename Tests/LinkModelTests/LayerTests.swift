import Foundation
import Testing

/// The link model is the bottom layer: pure, with time passed in. The package keeps it from depending on another
/// project target; this keeps it from reaching the system around the compiler: no libc, no C shims, no clock, no
/// files, no threads.
struct LayerTests {
    /// The only modules a model source may import: the collections, and Foundation for `cbrt`.
    static let allowedImports: Set<String> = ["DequeModule", "HeapModule", "Foundation"]
    /// Foundation's I/O, clocks and threads, which would make the model read the world instead of being told it.
    static let forbiddenNames = [
        "FileManager", "FileHandle", "ProcessInfo", "Process(", "Thread", "DispatchQueue", "NSLock", "Date(",
        "URL(", "Data(contentsOf", "clock_gettime", "ContinuousClock", "SuspendingClock",
    ]

    static var modelSources: [URL] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/LinkModel")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL }
        return (files ?? []).filter { $0.pathExtension == "swift" }
    }

    @Test func theModelHasSources() {
        #expect(Self.modelSources.count > 30)
    }

    @Test func noModelSourceImportsTheSystemOrAnotherProjectModule() throws {
        for file in Self.modelSources {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.contains(" import ") {
                guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") else { continue }
                let module = String(line.split(separator: " ").last ?? "")
                #expect(Self.allowedImports.contains(module), "\(file.lastPathComponent) imports \(module)")
            }
        }
    }

    @Test func noModelSourceUsesFoundationsIOClocksOrThreads() throws {
        for file in Self.modelSources {
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            for name in Self.forbiddenNames {
                #expect(!code.contains(name), "\(file.lastPathComponent) uses \(name)")
            }
        }
    }
}
