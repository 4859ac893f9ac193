import Dispatch
import Logging

@testable import LinkConditioner

/// A control endpoint client's request, arriving in reads of any size: `HTTPRequestReader` as `ControlConnection`
/// feeds it every read, then the complete request through `ControlAPI` on a proxy without listeners, on its
/// event loop thread, so that bodies (profiles, settings, scenarios) reach their parsers as they do in production.
/// Each request gets a fresh proxy state, closed after its answer as a stopping proxy closes it.
enum ControlRequestTarget {
    static let loop: EventLoop = {
        do {
            let loop = try EventLoop()
            loop.start(name: "fuzz-loop")
            return loop
        } catch {
            fatalError("cannot start an event loop: \(error)")
        }
    }()

    static func run(_ input: FuzzInput) {
        var reader = HTTPRequestReader()
        for read in input.reads {
            switch reader.append(read[...]) {
            case .incomplete:
                continue
            case .invalid(let status, let reason):
                _ = HTTPResponse.error(status, reason).bytes
                return
            case .complete(let request, let consumed):
                precondition(consumed <= reader.bytes.count, "a request of \(consumed) bytes in \(reader.bytes.count)")
                handle(request)
                return
            }
        }
    }

    /// Answers `request` on the loop and waits for the reply, which may come from the body-parsing worker.
    private static func handle(_ request: HTTPRequest) {
        let answered = DispatchSemaphore(value: 0)
        loop.execute {
            let state = ProxyState(
                loop: loop, profile: .none, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }),
                bufferBudget: BufferBudget(limit: 1 << 20, loop: loop))
            ControlAPI(state: state).handle(request) { response in
                _ = response.bytes.count
                state.close()
                answered.signal()
            }
        }
        answered.wait()
    }
}
