import LinkModel
import LinkProfiles
import Testing

@Suite(.timeLimit(.minutes(5)))
struct QueueDisciplineSettingTests {
    @Test func fifoByBytesIsTheDefault() throws {
        let profile = try Profile(parsing: "queue = 64 KiB\n")

        #expect(profile.downlink.queueManagement.discipline == "fifo")
        #expect(profile.downlink.queueLimit == .bytes(65_536))
    }

    @Test func queueInPacketsLimitsPackets() throws {
        let profile = try Profile(parsing: "uplink.queue = 100 packets\n")

        #expect(profile.uplink.queueLimit == .packets(100))
        #expect(profile.downlink.queueLimit == .bytes(DirectionProfile.defaultQueue.bytes))
    }

    @Test func codelWithItsParametersParsesPerDirection() throws {
        let profile = try Profile(
            parsing: """
                queue.discipline = codel
                downlink.queue.target = 10 ms
                queue.interval = 200 ms
                """)

        #expect(profile.downlink.queueManagement.discipline == "codel")
        #expect(profile.downlink.queueManagement.codel.target == .milliseconds(10))
        #expect(profile.uplink.queueManagement.codel.target == .milliseconds(5))
        #expect(profile.uplink.queueManagement.codel.interval == .milliseconds(200))
    }

    @Test func fqCodelMakesItsDisciplineWithFlowsAndQuantum() throws {
        let profile = try Profile(parsing: "queue.discipline = fq_codel\nqueue.flows = 64\nqueue.quantum = 300 B\n")
        let discipline = profile.downlink.queueManagement.makeDiscipline(limit: profile.downlink.queueLimit)

        let fq = try #require(discipline as? FQCoDelQueue)
        #expect(fq.flows == 64)
        #expect(fq.quantum == 300)
    }

    @Test func unknownDisciplineIsRefusedWithWhatIsExpected() {
        #expect(throws: ProfileError.self) { try Profile(parsing: "queue.discipline = red\n", file: "a.profile") }
        do {
            _ = try Profile(parsing: "\nqueue.discipline = red\n", file: "a.profile")
        } catch {
            #expect(
                error.description
                    == "a.profile:2: \"queue.discipline = red\": expected one of fifo, drophead, codel, fq_codel")
        }
    }

    @Test func zeroTargetAndFlowsOutOfRangeAreRefused() {
        #expect(throws: ProfileError.self) { try Profile(parsing: "queue.target = 0 ms\n") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "queue.flows = 0\n") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "queue.flows = 100000\n") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "queue.quantum = 2 MiB\n") }
    }

    @Test func renderingShowsOnlyWhatDiffersAndParsesBack() throws {
        let profile = try Profile(
            parsing: "queue.discipline = fq_codel\nqueue.target = 2 ms\nuplink.queue = 50 packets\n", name: "x")

        let rendered = profile.rendered

        #expect(rendered.contains("downlink.queue.discipline = fq_codel\n"))
        #expect(rendered.contains("uplink.queue.target = 2 ms\n"))
        #expect(rendered.contains("uplink.queue = 50 packets\n"))
        #expect(!rendered.contains("queue.flows"))
        #expect(try Profile(parsing: rendered, name: "x") == profile)
        #expect(try Profile(parsing: Profile.none.rendered, name: "none").rendered == Profile.none.rendered)
        #expect(!Profile.none.rendered.contains("queue.discipline"))
    }

    @Test func summaryNamesANonFIFODiscipline() throws {
        #expect(try Profile(parsing: "queue.discipline = codel\n").summary.contains("codel"))
    }

    @Test func kernelBackendDeclinesCoDelButNotFIFO() throws {
        let codel = try Profile(parsing: "queue.discipline = codel\n")

        #expect(ProfileSettings.kernelUnsupported(codel.downlink) == ["queue.discipline = codel"])
        #expect(ProfileSettings.kernelUnsupported(Profile.none.downlink).isEmpty)
    }

    @Test func liveSetAcceptsTheNewKeys() throws {
        let profile = try Profile.none.setting("uplink.queue.discipline", to: "fq_codel")

        #expect(profile.uplink.queueManagement.discipline == "fq_codel")
        #expect(profile.downlink.queueManagement.discipline == "fifo")
    }
}
