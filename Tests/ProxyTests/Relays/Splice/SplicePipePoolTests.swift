import Glibc
import Testing

@testable import LinkConditioner

/// The loop's pool of splice pipes: an empty pipe given back is the next one taken, and nothing else is kept.
struct SplicePipePoolTests {
    private func isOpen(_ descriptor: Int32) -> Bool { fcntl(descriptor, F_GETFD) >= 0 }

    @Test func anEmptyPipeGivenBackIsTheNextOneTaken() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: 1000)
        let first = try pool.take(size: 65_536)

        pool.give(first)
        let second = try pool.take(size: 65_536)

        #expect(second.readEnd == first.readEnd && second.writeEnd == first.writeEnd)
        #expect(pool.count == 0)
        second.close()
    }

    @Test func aPipeStillHoldingBytesIsClosedNotKept() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: 1000)
        let pipe = try pool.take(size: 65_536)
        var byte: UInt8 = 0x42
        #expect(write(pipe.writeEnd, &byte, 1) == 1)

        pool.give(pipe)

        #expect(pool.count == 0)
        #expect(!isOpen(pipe.readEnd) && !isOpen(pipe.writeEnd))
    }

    @Test func keptPipesHoldAtMostASixteenthOfTheDescriptorLimit() {
        #expect(SplicePipePool(descriptorLimit: 64).limit == 2)
        #expect(SplicePipePool(descriptorLimit: 1024).limit == 32)
        #expect(SplicePipePool(descriptorLimit: nil).limit == 32)
    }

    @Test func aPipeBeyondTheLimitIsClosedNotKept() throws {
        let pool = SplicePipePool(limit: 2, crowdedFrom: .max)
        let pipes = try (0..<3).map { _ in try pool.take(size: 65_536) }

        for pipe in pipes { pool.give(pipe) }

        #expect(pool.count == 2)
        #expect(!isOpen(pipes[2].readEnd))
        pool.release()
    }

    @Test func aPipeGivenBackWhileDescriptorsRunShortIsClosedNotKept() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: 1000)
        let pipe = try pool.take(size: 65_536)

        pool.noteOpened(1000)
        pool.give(pipe)

        #expect(pool.count == 0)
        #expect(!isOpen(pipe.readEnd))
    }

    @Test func pipesAreKeptAgainOnceDescriptorsAreFree() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: 1000)
        let pipe = try pool.take(size: 65_536)
        pool.noteOpened(1000)

        pool.noteOpened(20)
        pool.give(pipe)

        #expect(pool.count == 1)
        pool.release()
    }

    @Test func releaseClosesEveryKeptPipe() throws {
        let pool = SplicePipePool(limit: 32, crowdedFrom: 1000)
        let pipe = try pool.take(size: 65_536)
        pool.give(pipe)

        pool.release()

        #expect(pool.count == 0)
        #expect(!isOpen(pipe.readEnd) && !isOpen(pipe.writeEnd))
    }
}
