import Foundation

#if LINKCOND_LIBFUZZER

    /// The target this process runs, chosen once in `LLVMFuzzerInitialize` before libFuzzer starts calling.
    nonisolated(unsafe) private var selectedTest: FuzzTargets.Test?

    /// libFuzzer's start-up hook: takes the target's name from the first argument (removing it, so libFuzzer reads
    /// only its own options) or from `LINKCOND_FUZZ_TARGET`, which child processes inherit.
    @_cdecl("LLVMFuzzerInitialize")
    func fuzzerInitialize(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
    ) -> Int32 {
        if argc.pointee > 1, let arguments = argv.pointee, let first = arguments[1],
            FuzzTargets.named(String(cString: first)) != nil
        {
            setenv(FuzzTargets.variable, first, 1)
            for index in 1..<Int(argc.pointee) { arguments[index] = arguments[index + 1] }
            argc.pointee -= 1
        }
        guard let name = ProcessInfo.processInfo.environment[FuzzTargets.variable], let test = FuzzTargets.named(name)
        else {
            FileHandle.standardError.write(Data(FuzzTargets.usage.utf8))
            exit(2)
        }
        selectedTest = test
        return 0
    }

    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
        selectedTest?(FuzzInput(data, count))
        return 0
    }

#else

    /// In a build without libFuzzer: runs a target once over each input file, or each file in a directory, so that a
    /// crashing input reproduces under a debugger or the ordinary debug build.
    @main
    enum LinkcondFuzz {
        static func main() {
            let arguments = CommandLine.arguments
            guard arguments.count > 1, let test = FuzzTargets.named(arguments[1]) else {
                FileHandle.standardError.write(Data(FuzzTargets.usage.utf8))
                exit(2)
            }
            var files: [String] = []
            for path in arguments.dropFirst(2) {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    FileHandle.standardError.write(Data("linkcond-fuzz: \(path): no such file or directory\n".utf8))
                    exit(2)
                }
                let names =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() : [""]
                files += names.map { $0.isEmpty ? path : path + "/" + $0 }
            }
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("linkcond-fuzz: \(file): cannot be read\n".utf8))
                    exit(2)
                }
                data.withUnsafeBytes { raw in test(FuzzInput(raw.bindMemory(to: UInt8.self).baseAddress, raw.count)) }
            }
            print("linkcond-fuzz \(arguments[1]): ran \(files.count) input\(files.count == 1 ? "" : "s")")
        }
    }

#endif
