import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Several instances of one user: each has a name, a socket and a descriptor of its own, `ps` lists them, and a
/// steering command acts on the one that runs or refuses to guess. Every test has its own private directory, so
/// instances of other tests running at once never make its bare commands ambiguous.
@Suite(.serialized)
struct InstanceCommandTests {
    typealias RuntimeDirectory = ControlSecurityCommandTests.RuntimeDirectory

    /// `linkcond run` with one TCP listener in `runtime`, read up to its `ready name` line.
    final class Instance {
        let process: RunningLinkcond
        /// Every ready line, in order.
        let lines: [String]

        init(_ runtime: RuntimeDirectory, _ options: [String], environment: [String: String] = [:]) throws {
            process = try RunningLinkcond(
                ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"] + options,
                environment: runtime.environment.merging(environment) { $1 })
            var lines: [String] = []
            repeat { lines.append(try process.readLine()) } while !lines.last!.hasPrefix("ready name ")
            self.lines = lines
        }

        var name: String { String(lines.last!.dropFirst("ready name ".count)) }
        var pid: Int32 { process.process.processIdentifier }

        deinit { if process.process.isRunning { _ = try? process.stop() } }
    }

    private func linkcond(_ arguments: [String], _ runtime: RuntimeDirectory, _ environment: [String: String] = [:])
        throws -> LinkcondProcess.Result
    {
        try LinkcondProcess.run(arguments, environment: runtime.environment.merging(environment) { $1 })
    }

    private func profile(of name: String, _ runtime: RuntimeDirectory) throws -> String {
        let status = try linkcond(["status", "--json", "--name", name], runtime)
        return try JSONDecoder().decode(StatusReport.self, from: Data(status.stdout.utf8)).profile
    }

    @Test func withTwoInstancesEverySteeringCommandRefusesAndNamesBoth() throws {
        let runtime = try RuntimeDirectory()
        let first = try Instance(runtime, ["--profile", "3g"])
        let second = try Instance(runtime, ["--profile", "edge"])

        for command in [
            ["use", "lte"], ["set", "loss", "1", "%"], ["status"], ["status", "--json"], ["offline"], ["online"],
            ["reset"], ["scenario", "subway"], ["scenario", "--stop"], ["dashboard"],
        ] {
            let result = try linkcond(command, runtime)
            #expect(result.status == 2, "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(command): \(result.stdout)")
            for instance in [first, second] {
                #expect(result.stderr.contains(instance.name), "\(command): \(result.stderr)")
                #expect(result.stderr.contains("pid \(instance.pid)"), "\(command): \(result.stderr)")
            }
            #expect(result.stderr.contains("--name") && result.stderr.contains("LINKCOND_NAME"), "\(result.stderr)")
            #expect(result.stderr.contains("--control"), "\(result.stderr)")
        }
        #expect(try profile(of: first.name, runtime) == "3g")
        #expect(try profile(of: second.name, runtime) == "edge")
    }

    @Test func aBareCommandSteersTheOneInstanceThatRuns() throws {
        let runtime = try RuntimeDirectory()
        let instance = try Instance(runtime, ["--profile", "3g"])

        let use = try linkcond(["use", "edge"], runtime)
        let status = try linkcond(["status", "--json"], runtime)

        #expect(use.status == 0, "\(use.stderr)")
        #expect(status.stdout.contains("\"edge\""), "\(status.stdout)")
        #expect(try profile(of: instance.name, runtime) == "edge")
    }

    @Test func anUnreadableDescriptorBesideOneInstanceMakesABareCommandRefuseToGuess() throws {
        let runtime = try RuntimeDirectory()
        let instance = try Instance(runtime, ["--profile", "3g"])
        let unreadable = runtime.privateDirectory + "/instances/other.json"
        try "{ written by another version".write(toFile: unreadable, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: unreadable)

        let use = try linkcond(["use", "edge"], runtime)
        let ps = try linkcond(["ps"], runtime)

        #expect(use.status == 2, "\(use.stderr)")
        #expect(use.stderr.contains(unreadable), "\(use.stderr)")
        #expect(try profile(of: instance.name, runtime) == "3g")
        #expect(ps.stderr.contains(unreadable), "\(ps.stderr)")
        #expect(FileManager.default.fileExists(atPath: unreadable))
    }

    @Test func aGivenNameWhoseDescriptorCannotBeReadIsRefusedAndTheFileKept() throws {
        let runtime = try RuntimeDirectory()
        let first = try Instance(runtime, ["--profile", "3g"])
        let unreadable = runtime.privateDirectory + "/instances/taken.json"
        try "not json".write(toFile: unreadable, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: unreadable)

        let second = try linkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--name", "taken"], runtime)

        #expect(second.status == 1, "\(second.stderr)")
        #expect(second.stderr.contains("cannot be read"), "\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: unreadable))
        #expect(try profile(of: first.name, runtime) == "3g")
    }

    @Test func nameAndTheEnvironmentPickAnInstanceAmongSeveral() throws {
        let runtime = try RuntimeDirectory()
        let left = try Instance(runtime, ["--profile", "3g", "--name", "left"])
        let right = try Instance(runtime, ["--profile", "3g"], environment: ["LINKCOND_NAME": "right"])

        let byOption = try linkcond(["use", "edge", "--name", "left"], runtime)
        let byEnvironment = try linkcond(["use", "lte"], runtime, ["LINKCOND_NAME": "right"])
        // --name comes before LINKCOND_NAME.
        let optionFirst = try linkcond(
            ["set", "loss", "2", "%", "--name", "left"], runtime, ["LINKCOND_NAME": "right"])
        let unknown = try linkcond(["status", "--name", "nobody"], runtime)
        let malformed = try linkcond(["status", "--name", "two words"], runtime)

        #expect(left.name == "left" && right.name == "right")
        #expect(byOption.status == 0 && byEnvironment.status == 0 && optionFirst.status == 0)
        #expect(try profile(of: "left", runtime) == "edge")
        #expect(try profile(of: "right", runtime) == "lte")
        #expect(unknown.status == 1 && unknown.stderr.contains("\"nobody\""), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("left") && unknown.stderr.contains("right"), "\(unknown.stderr)")
        #expect(malformed.status == 2 && malformed.stderr.contains("--name \"two words\""), "\(malformed.stderr)")
    }

    @Test func aNameARunningInstanceHasIsRefusedNamingItsPid() throws {
        let runtime = try RuntimeDirectory()
        let first = try Instance(runtime, ["--name", "ci"])

        let second = try linkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--name", "ci"], runtime)
        let fromEnvironment = try linkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"], runtime, ["LINKCOND_NAME": "ci"])
        let malformed = try linkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--name", "../x"], runtime)

        for refused in [second, fromEnvironment] {
            #expect(refused.status == 2, "\(refused.stderr)")
            #expect(
                refused.stderr.contains("\"ci\"") && refused.stderr.contains("pid \(first.pid)"), "\(refused.stderr)")
            #expect(refused.stdout.isEmpty)
        }
        #expect(malformed.status == 2 && malformed.stderr.contains("--name \"../x\""), "\(malformed.stderr)")
        #expect(first.process.process.isRunning)
    }

    @Test func theNameComesOnANewLineAfterTheReadyLinesScriptsAlreadyRead() throws {
        let runtime = try RuntimeDirectory()
        let profile = runtime.path + "/my train.profile"
        try "downlink.delay = 10 ms\n".write(toFile: profile, atomically: true, encoding: .utf8)

        let first = try Instance(runtime, ["--profile", "3g"])
        let second = try Instance(runtime, ["--profile", "3g", "--toxiproxy", "127.0.0.1:0"])
        let fromFile = try Instance(runtime, ["--profile", profile])
        let toxiproxy = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1:0"], environment: runtime.environment)
        let toxiproxyLines = [try toxiproxy.readLine(), try toxiproxy.readLine(), try toxiproxy.readLine()]
        _ = try first.process.stop()
        let third = try Instance(runtime, ["--profile", "3g"])

        #expect(first.lines.count == 3)
        #expect(first.lines[0].hasPrefix("ready tcp 127.0.0.1:") && first.lines[0].hasSuffix(" 127.0.0.1:9"))
        #expect(first.lines[1].hasPrefix("ready control http://127.0.0.1:"), "\(first.lines)")
        #expect(first.lines[2] == "ready name 3g-1")
        #expect(second.lines.count == 4)
        #expect(second.lines[1].hasPrefix("ready toxiproxy http://127.0.0.1:"), "\(second.lines)")
        #expect(second.lines[2].hasPrefix("ready control http://127.0.0.1:"), "\(second.lines)")
        #expect(second.name == "3g-2")
        #expect(fromFile.name == "my-train-1")
        #expect(toxiproxyLines[2] == "ready name toxiproxy-1", "\(toxiproxyLines)")
        #expect(third.name == "3g-1", "the lowest free number")
        _ = try toxiproxy.stop()
        #expect(toxiproxy.remainingStdout().isEmpty, "stdout must carry nothing but the ready lines")
    }

    @Test func psListsTheInstancesForPeopleAndForScripts() throws {
        let runtime = try RuntimeDirectory()
        let none = try linkcond(["ps"], runtime)
        let noneJSON = try linkcond(["ps", "--json"], runtime)
        let instance = try Instance(runtime, ["--profile", "3g", "--proxy", "127.0.0.1:0"])
        #expect(try linkcond(["use", "edge"], runtime).status == 0)

        let table = try linkcond(["ps"], runtime)
        let json = try linkcond(["ps", "--json"], runtime)

        #expect(none.status == 0 && none.stdout == "no linkcond runs for this user\n", "\(none.stdout)")
        #expect(noneJSON.status == 0)
        #expect((try JSONSerialization.jsonObject(with: Data(noneJSON.stdout.utf8)) as? [Any])?.isEmpty == true)
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(table.stdout)")
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(table.stdout)")
        #expect(lines.first.map { $0.hasPrefix("NAME") && $0.contains("PID") && $0.contains("LISTENERS") } == true)
        #expect(
            lines.last.map { $0.hasPrefix("3g-1 ") && $0.contains(" \(instance.pid) ") && $0.contains(" edge ") }
                == true, "\(table.stdout)")
        #expect(lines.last?.contains("tcp 127.0.0.1:") == true, "\(table.stdout)")

        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json.stdout)")
        let entry = try #require(entries.first)
        #expect(entries.count == 1)
        #expect(entry["name"] as? String == "3g-1")
        #expect((entry["pid"] as? NSNumber)?.int32Value == instance.pid)
        #expect(entry["profile"] as? String == "edge")
        #expect(entry["command"] as? String == "run")
        #expect((entry["started"] as? String)?.hasSuffix("Z") == true, "\(entry)")
        #expect(entry["ageSeconds"] is NSNumber)
        let listeners = try #require(entry["listeners"] as? [String])
        #expect(listeners.count == 2 && listeners[0] == instance.lines[0].dropFirst("ready ".count), "\(listeners)")
        let control = try #require(entry["control"] as? [String])
        #expect(
            control == [runtime.privateDirectory + "/instances/3g-1.sock", String(instance.lines[2].dropFirst(14))])
    }

    @Test func aDescriptorWhoseProcessIsGoneIsRemovedAndNotCounted() throws {
        let runtime = try RuntimeDirectory()
        let instance = try Instance(runtime, ["--profile", "3g"])
        let directory = runtime.privateDirectory + "/instances"
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        // A dead pid, and a live pid (this test's own) whose process started at another time: a reused pid.
        for (name, pid, start) in [("dead-1", gone.processIdentifier, 1), ("reused-1", getpid(), 1)] {
            let text = """
                {"name":"\(name)","pid":\(pid),"processStart":\(start),"started":"2024-01-01T00:00:00Z","profile":"lte","listeners":[],"control":["\(directory)/\(name).sock"]}
                """
            #expect(
                FileManager.default.createFile(
                    atPath: "\(directory)/\(name).json", contents: Data(text.utf8),
                    attributes: [.posixPermissions: 0o600]))
            #expect(
                FileManager.default.createFile(
                    atPath: "\(directory)/\(name).sock", contents: nil, attributes: [.posixPermissions: 0o600]))
        }

        let status = try linkcond(["status"], runtime)
        let ps = try linkcond(["ps"], runtime)

        #expect(status.status == 0, "a stale descriptor made the bare command ambiguous: \(status.stderr)")
        #expect(ps.stdout.contains(instance.name) && !ps.stdout.contains("dead-1") && !ps.stdout.contains("reused-1"))
        for name in ["dead-1", "reused-1"] {
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(name).json"), "\(name)")
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(name).sock"), "\(name)")
        }
    }

    /// SIGKILL leaves an instance no chance to remove its files; the next instance to start removes them.
    @Test func theNextStartRemovesWhatAnInstanceKilledBySIGKILLLeft() throws {
        let runtime = try RuntimeDirectory()
        let killed = try Instance(runtime, ["--profile", "3g"])
        let control = try #require(killed.lines.first { $0.hasPrefix("ready control ") })
        let port = try #require(control.split(separator: ":").last.flatMap { UInt16($0) })
        let token = ControlAddress.tokenFile(port: port, in: runtime.privateDirectory)
        _ = try killed.process.stop(signal: SIGKILL)
        #expect(FileManager.default.fileExists(atPath: token), "the killed instance's token is there to be removed")

        let next = try Instance(runtime, ["--profile", "lte"])

        #expect(!FileManager.default.fileExists(atPath: token))
        let left = try FileManager.default.contentsOfDirectory(atPath: runtime.privateDirectory + "/instances")
            .filter { !$0.hasPrefix(".") }
        #expect(Set(left) == ["\(next.name).json", "\(next.name).sock"], "\(left)")
    }

    /// A token file written after a stale descriptor is another instance's on the same port since, and is kept;
    /// one written before it is the stale instance's own, and goes with it.
    @Test func aStaleInstancesTokenGoesUnlessWrittenAfterItsDescriptor() throws {
        let runtime = try RuntimeDirectory()
        let directory = runtime.privateDirectory + "/instances"
        for made in [runtime.privateDirectory, directory] {
            try FileManager.default.createDirectory(
                atPath: made, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        }
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let published = Date()
        for (name, port, written) in [("older-1", 40_001, -60.0), ("newer-1", 40_002, 60.0)] {
            let text = """
                {"name":"\(name)","pid":\(gone.processIdentifier),"started":"2024-01-01T00:00:00Z","control":["127.0.0.1:\(port)"]}
                """
            let descriptor = "\(directory)/\(name).json"
            let token = ControlAddress.tokenFile(port: UInt16(port), in: runtime.privateDirectory)
            let owned: [FileAttributeKey: Any] = [.posixPermissions: 0o600]
            #expect(FileManager.default.createFile(atPath: descriptor, contents: Data(text.utf8), attributes: owned))
            #expect(FileManager.default.createFile(atPath: token, contents: Data("0\n".utf8), attributes: owned))
            try FileManager.default.setAttributes([.modificationDate: published], ofItemAtPath: descriptor)
            try FileManager.default.setAttributes(
                [.modificationDate: published.addingTimeInterval(written)], ofItemAtPath: token)
        }

        let ps = try linkcond(["ps"], runtime)

        #expect(ps.status == 0, "\(ps.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/older-1.json"))
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/newer-1.json"))
        #expect(
            !FileManager.default.fileExists(
                atPath: ControlAddress.tokenFile(port: 40_001, in: runtime.privateDirectory)))
        #expect(
            FileManager.default.fileExists(atPath: ControlAddress.tokenFile(port: 40_002, in: runtime.privateDirectory))
        )
    }

    /// SIGHUP too: a closed terminal stops the instance as SIGTERM does, and its files go with it.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aStoppedInstanceRemovesItsSocketAndDescriptor(_ signal: Int32) throws {
        let runtime = try RuntimeDirectory()
        let instance = try Instance(runtime, ["--profile", "3g"])
        let directory = runtime.privateDirectory + "/instances"
        let mode = (try FileManager.default.attributesOfItem(atPath: "\(directory)/3g-1.json"))[.posixPermissions]
        #expect(FileManager.default.fileExists(atPath: "\(directory)/3g-1.sock"))

        #expect(try instance.process.stop(signal: signal) == 0)

        #expect(mode as? Int == 0o600)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }
        #expect(left.isEmpty, "\(left)")
        let tokens = try FileManager.default.contentsOfDirectory(atPath: runtime.privateDirectory)
            .filter { $0.hasSuffix(".token") }
        #expect(tokens.isEmpty, "\(tokens)")
        let after = try linkcond(["status"], runtime)
        #expect(after.status == 1 && after.stderr.contains("no running linkcond answers"), "\(after.stderr)")
    }

    @Test func dashboardTakesItsInstanceFromLinkcondControl() throws {
        let instanceRuntime = try RuntimeDirectory()
        let emptyRuntime = try RuntimeDirectory()
        let token = ControlToken.random()
        let instance = try Instance(instanceRuntime, ["--control", "127.0.0.1:0", "--control-token", token])
        let url = String(instance.lines[1].dropFirst("ready control ".count))
        let port = try #require(url.split(separator: ":").last)

        // The private directory the command sees holds no instance: only LINKCOND_CONTROL can lead it there.
        let result = try linkcond(
            ["dashboard"], emptyRuntime, ["LINKCOND_CONTROL": url, "LINKCOND_CONTROL_TOKEN": token])
        let byName = try linkcond(
            ["dashboard", "--name", instance.name], instanceRuntime, ["LINKCOND_CONTROL_TOKEN": token])
        let bare = try linkcond(["dashboard"], instanceRuntime, ["LINKCOND_CONTROL_TOKEN": token])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "http://127.0.0.1:\(port)/#token=\(token)\n")
        #expect(byName.stdout == result.stdout, "\(byName.stderr)")
        #expect(bare.stdout == result.stdout, "\(bare.stderr)")
    }
}
