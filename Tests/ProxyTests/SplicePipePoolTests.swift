import Glibc
@testable import LinkConditioner
import Testing

/// The loop's pool of splice pipes: an empty pipe given back is the next one taken, and nothing else is kept.
struct SplicePipePoolTests {
    private func isOpen(_ descriptor: Int32) -> Bool { fcntl(descriptor, F_GETFD) >= 0 }

    @Test func anEmptyPipeGivenBackIsTheNextOneTaken() throws {
        let pool = SplicePipePool(descriptorLimit: 1024)
        let first = try pool.take(size: 65_536)

        pool.give(first)
        let second = try pool.take(size: 65_536)

        #expect(second.readEnd == first.readEnd && second.writeEnd == first.writeEnd)
        #expect(pool.count == 0)
        second.close()
    }

    @Test func aPipeStillHoldingBytesIsClosedNotKept() throws {
        let pool = SplicePipePool(descriptorLimit: 1024)
        let pipe = try pool.take(size: 65_536)
        var byte: UInt8 = 0x42
        #expect(write(pipe.writeEnd, &byte, 1) == 1)

        pool.give(pipe)

        #expect(pool.count == 0)
        #expect(!isOpen(pipe.readEnd) && !isOpen(pipe.writeEnd))
    }

    @Test func keptPipesHoldAtMostASixteenthOfTheDescriptorLimit() throws {
        let pool = SplicePipePool(descriptorLimit: 64)
        let pipes = try (0..<3).map { _ in try pool.take(size: 65_536) }

        for pipe in pipes { pool.give(pipe) }

        #expect(pool.limit == 2)
        #expect(pool.count == 2)
        #expect(!isOpen(pipes[2].readEnd))
        pool.release()
    }

    @Test func releaseClosesEveryKeptPipe() throws {
        let pool = SplicePipePool(descriptorLimit: 1024)
        let pipe = try pool.take(size: 65_536)
        pool.give(pipe)

        pool.release()

        #expect(pool.count == 0)
        #expect(!isOpen(pipe.readEnd) && !isOpen(pipe.writeEnd))
    }
}
