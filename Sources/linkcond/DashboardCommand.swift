import ArgumentParser
import Foundation
import LinkConditioner

/// `linkcond dashboard`: prints (or opens) the URL of a running instance's dashboard, with its token.
struct DashboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard", abstract: "Print or open the URL of a running linkcond's dashboard.",
        discussion: """
            The URL carries the control token after "#token=": browsers never send that part to a server, and the \
            page keeps the token for its tab only. --open hands the browser a one-time ticket the page trades for \
            the token instead, since a browser's command line is readable by every user of the machine. The \
            instance is picked as the other commands pick it: --control, --name, $LINKCOND_CONTROL, \
            $LINKCOND_NAME, else the one that runs; its control endpoint must be on loopback TCP \
            (http://127.0.0.1:PORT), which it is unless it was started with --control PATH.

            Examples:
              linkcond dashboard
              linkcond dashboard --open
              linkcond dashboard --control http://127.0.0.1:40123
            """)

    @Flag(help: "Open the URL with xdg-open as well as printing it.")
    var open = false

    @OptionGroup var control: ControlOptions

    func run() throws {
        let target = try control.target()
        let address: ControlAddress
        switch target {
        case .address(let given):
            guard case .tcp = given, given.isLocalOnly else {
                printError(
                    "linkcond: the dashboard is served on a loopback TCP control endpoint (http://127.0.0.1:PORT), not \(given)"
                )
                throw ExitStatus.badInput
            }
            address = given
        case .instance(let descriptor):
            guard
                let found = descriptor.control.compactMap(ControlAddress.init(parsing:)).first(where: { address in
                    if case .tcp = address { address.isLocalOnly } else { false }
                })
            else {
                printError(
                    "linkcond: \(descriptor.name) (pid \(descriptor.pid)) has no control endpoint on loopback TCP, where the dashboard is served (it was started with --control \(descriptor.control.last ?? "PATH")); start it with --control 127.0.0.1:0"
                )
                throw ExitStatus.runtimeFailure
            }
            address = found
        }
        let token = try control.controlToken ?? ControlClient.token(for: address)
        guard (try? ControlClient(address: address, token: token).send("GET", "/version").status) == 200,
            case .tcp(let endpoint) = address
        else {
            printError(
                "linkcond: no running linkcond answers at \(address) with this token; start one with \"linkcond run …\", or pass --control http://127.0.0.1:PORT"
            )
            throw ExitStatus.runtimeFailure
        }
        let page = "http://127.0.0.1:\(endpoint.port)/"
        print(page + (token.map { "#token=\($0)" } ?? ""))
        guard open else { return }
        guard token != nil else { return Self.openInBrowser(page) }
        guard let ticket = try? ControlClient(address: address, token: token).send("POST", "/dashboard/ticket"),
            ticket.status == 200
        else {
            printError(
                "linkcond: the running linkcond gave no dashboard ticket; open the URL above yourself (a browser's command line would show the token to every user of this machine)"
            )
            throw ExitStatus.runtimeFailure
        }
        Self.openInBrowser(page + "#ticket=" + ticket.body.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func openInBrowser(_ url: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        do {
            try process.run()
        } catch {
            printError("linkcond: cannot run xdg-open (\(error)); open the URL above yourself")
        }
    }
}
