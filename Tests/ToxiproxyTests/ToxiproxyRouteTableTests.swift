import Foundation
import Testing

@testable import LinkConditioner

/// `ToxiproxyAPI.routes` is the Toxiproxy API's one table of routes: a live API dispatches every route in it and
/// answers 405 with `Allow` for every other method on a path it knows.
@Suite(.serialized)
struct ToxiproxyRouteTableTests {
    static let methods = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "TRACE"]

    /// The pattern's placeholders filled with names no proxy or toxic has.
    static func path(_ pattern: String) -> String {
        pattern.replacingOccurrences(of: "{proxy}", with: "nosuch").replacingOccurrences(of: "{toxic}", with: "nosuch")
    }

    /// A request for each route in the table reaches its handler: the answer is neither the 404 of an unknown path
    /// nor a 405 (a handler may answer 404 for a proxy or toxic that does not exist, with its own message).
    @Test func aLiveAPIDispatchesEveryRouteInTheTable() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        for entry in ToxiproxyAPI.routes {
            let (status, json) = try api.send(entry.route.method, Self.path(entry.route.path))
            #expect(status != 405, "\(entry.route)")
            #expect(errorShape(json)?.error != "404 page not found", "\(entry.route)")
        }
    }

    @Test func everyOtherMethodOnAKnownPathIsRefusedWithAllow() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        var patterns: [String] = []
        for entry in ToxiproxyAPI.routes where !patterns.contains(entry.route.path) {
            patterns.append(entry.route.path)
        }
        for pattern in patterns {
            let allowed = ToxiproxyAPI.routes.filter { $0.route.path == pattern }.map(\.route.method)
            for method in Self.methods where !allowed.contains(method) {
                let refused = ToxiproxyAPI.unrouted(method, Self.path(pattern))
                let (status, json) = try api.send(method, Self.path(pattern))
                #expect(status == 405, "\(method) \(pattern)")
                #expect(errorShape(json)?.status == 405, "\(method) \(pattern)")
                #expect(
                    refused?.extraHeaders.map { "\($0.name): \($0.value)" } == [
                        "Allow: \(allowed.joined(separator: ", "))"
                    ])
            }
        }
    }

    /// A placeholder matches one percent-decoded segment, and the handler gets it by the placeholder's name.
    @Test func aPatternHandsItsHandlerTheSegmentsItMatched() throws {
        let match = try #require(ToxiproxyAPI.pattern(matching: ToxiproxyAPI.segments(of: "/proxies/a%2Fb/toxics/lag")))
        #expect(match.path == "/proxies/{proxy}/toxics/{toxic}")
        #expect(match.arguments == ["proxy": "a/b", "toxic": "lag"])
        #expect(ToxiproxyAPI.pattern(matching: ["proxies"])?.arguments == [:])
        #expect(ToxiproxyAPI.pattern(matching: ["proxies", "a", "b"]) == nil)
    }
}
