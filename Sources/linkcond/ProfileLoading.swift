import ArgumentParser
import LinkConditioner

/// Loads a built-in profile by name or a profile file by path; a bad one is reported on stderr with exit status 2.
func loadProfileOrExit(_ nameOrPath: String) throws -> Profile {
    do {
        return try Profile.load(nameOrPath)
    } catch {
        printError("linkcond: \(error)")
        throw ExitStatus.badInput
    }
}
