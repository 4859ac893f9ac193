import ArgumentParser

struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "profile", abstract: "Not yet built.")
    func run() throws { throw ExitStatus.runtimeFailure }
}
