import Foundation
@testable import LinkConditioner

/// Recordings (`run --record`) read back by `linkcond report`: `Recording(data:file:)`, then the report, its
/// summary and its page, as the command makes them from a file that may be damaged or written by hand.
enum RecordingTarget {
    static func run(_ input: FuzzInput) {
        guard let recording = try? Recording(data: Data(input.bytes), file: "fuzz.jsonl") else { return }
        let report = TrafficReport(recording)
        _ = report.summary
        _ = ReportPage.html(recording, report)
    }
}
