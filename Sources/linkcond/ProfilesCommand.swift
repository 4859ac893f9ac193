import ArgumentParser

struct ProfilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "profiles", abstract: "Not yet built.")
    func run() throws { throw ExitStatus.runtimeFailure }
}
