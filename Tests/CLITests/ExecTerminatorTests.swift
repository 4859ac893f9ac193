import Foundation
import Testing

/// `linkcond exec` given a program without the `--` before it: the error says where `--` goes. Nothing here starts a
/// namespace, so these run wherever the binary does.
struct ExecTerminatorTests {
    @Test(arguments: [
        (
            ["exec", "--profile", "3g", "curl", "-O", "http://example.test/file"],
            "linkcond exec --profile 3g -- curl -O http://example.test/file"
        ),
        (
            ["exec", "curl", "-v", "http://example.test/?a=1&b=2"],
            "linkcond exec -- curl -v 'http://example.test/?a=1&b=2'"
        ),
        (
            ["exec", "--mode", "proxy", "sh", "-c", "echo 'a b'"],
            #"linkcond exec --mode proxy -- sh -c "echo 'a b'""#
        ),
    ])
    func aProgramWithoutTheTerminatorIsShownWithIt(arguments: [String], fixed: String) throws {
        let result = try LinkcondProcess.run(arguments)

        #expect(result.status == 2)
        #expect(result.stderr.contains("put -- before the program"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix(": \(fixed)\n"), "\(result.stderr)")
    }

    /// After `--`, the program's options are its own: `-v` is curl's, and exec goes on to the profile.
    @Test func withTheTerminatorTheProgramsOptionsAreItsOwn() throws {
        let result = try LinkcondProcess.run(["exec", "--profile", "no-such-profile", "--", "curl", "-v", "-O", "x"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("no built-in profile \"no-such-profile\""), "\(result.stderr)")
        #expect(!result.stderr.contains("put --"), "\(result.stderr)")
    }

    /// A mistyped option of exec's own is not a program: ArgumentParser's message stands.
    @Test func aMistypedOptionKeepsItsOwnMessage() throws {
        let result = try LinkcondProcess.run(["exec", "--profle", "3g", "--", "curl"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--profle"), "\(result.stderr)")
        #expect(!result.stderr.contains("put --"), "\(result.stderr)")
    }
}
