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
            the token instead, since a browser's command line is readable by every user of the machine. Without \
            --control the command looks for the one running linkcond whose control endpoint is on 127.0.0.1 (its \
            token file in the private directory).

            Examples:
              linkcond dashboard
              linkcond dashboard --open
              linkcond dashboard --control http://127.0.0.1:40123
            """)

    @Flag(help: "Open the URL with xdg-open as well as printing it.")
    var open = false

    @OptionGroup var control: ControlOptions

    func run() throws {
        let candidates: [(ControlAddress, String?)]
        if let given = control.control {
            guard let address = ControlAddress(parsing: given), case .tcp = address, address.isLocalOnly else {
                printError(
                    "linkcond: the dashboard is served on a loopback TCP control endpoint (http://127.0.0.1:PORT), not \(given)"
                )
                throw ExitStatus.badInput
            }
            candidates = [(address, try control.controlToken ?? ControlClient.token(for: address))]
        } else {
            candidates = Self.runningEndpoints()
        }
        let answering = candidates.filter { address, token in
            (try? ControlClient(address: address, token: token).send("GET", "/version").status) == 200
        }
        guard answering.count == 1, let (address, token) = answering.first, case .tcp(let endpoint) = address else {
            if answering.isEmpty {
                printError(
                    "linkcond: no running linkcond with a control endpoint on 127.0.0.1 answers; start one with \"linkcond run …\", or pass --control http://127.0.0.1:PORT"
                )
            } else {
                printError(
                    "linkcond: \(answering.count) running linkcond instances answer (\(answering.map { "\($0.0)" }.joined(separator: ", "))); choose one with --control"
                )
            }
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

    /// The loopback endpoints whose token files this user's private directory holds, with their tokens.
    static func runningEndpoints() -> [(ControlAddress, String?)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: ControlAddress.privateDirectory)) ?? []
        return names.sorted().compactMap { name in
            guard name.hasPrefix("control-"), name.hasSuffix(".token"),
                let port = UInt16(name.dropFirst("control-".count).dropLast(".token".count))
            else { return nil }
            let address = ControlAddress.tcp(Endpoint(host: "127.0.0.1", port: port))
            guard let token = try? ControlClient.token(for: address) else { return nil }
            return (address, token)
        }
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
