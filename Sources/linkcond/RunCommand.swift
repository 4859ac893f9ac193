import ArgumentParser

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Not yet built.")
    func run() throws { throw ExitStatus.runtimeFailure }
}
