import LinkProfiles
import Testing

/// Every bad line of a profile, for `linkcond profile check`: each located, none hiding the next.
@Suite(.timeLimit(.minutes(5)))
struct ProfileProblemsTests {
    @Test func everyBadLineIsReportedWithItsLine() {
        let text = """
            # three mistakes
            delay = 10 sec
            bandwidth = 1 Mbit/s
            lossy = 2 %
            this line has no equals sign
            jitter = 5 ms
            delay = 20 ms
            """

        let problems = Profile.problems(parsing: text, file: "train.profile")

        #expect(problems.map(\.line) == [2, 4, 5, 7])
        #expect(problems.allSatisfy { $0.file == "train.profile" })
        #expect(problems[0].description.hasPrefix("train.profile:2: \"delay = 10 sec\": expected a duration"))
        #expect(problems[1].description.contains("did you mean \"loss\"?"))
        #expect(problems[3].description.contains("already set on line 2"))
    }

    @Test func aValidProfileHasNoProblemsAndParsingStillStopsAtTheFirst() throws {
        #expect(Profile.problems(parsing: "delay = 5 ms\nloss = 1 %\n").isEmpty)
        do {
            _ = try Profile(parsing: "delay = 1 sec\nloss = 200 %\n")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 1)
        }
    }

    @Test func anUnreadableFileIsOneProblem() {
        let problems = Profile.problems(inFile: "/nonexistent/\(#function).profile")
        #expect(problems.count == 1)
        #expect(problems.first?.file == "/nonexistent/\(#function).profile")
    }
}
