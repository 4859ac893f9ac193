import ArgumentParser

struct TCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "tc", abstract: "Not yet built.")
    func run() throws { throw ExitStatus.runtimeFailure }
}
