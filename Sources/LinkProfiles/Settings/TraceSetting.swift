import Foundation
import LinkModel

/// The `trace` key: the direction's capacity follows a mahimahi trace instead of `bandwidth`.
///
/// The value is a built-in trace's name (`linkcond trace list`) or a path containing `/`, relative to the
/// profile's directory (or to the working directory for `linkcond set`).
public enum TraceSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "trace", value: "built-in trace, path with `/`, or `none`", default: "none",
            meaning: "capacity follows a mahimahi trace instead of `bandwidth`, see [capacity "
                + "traces](#capacity-traces)",
            example: "subway.down")
    ]
    public static let kernelSupport = KernelSupport.refused
    public static let referenceSection = ReferenceSection.link
    /// The largest trace file read, so a wrong path cannot exhaust memory.
    static let maximumFileBytes = 256 * 1024 * 1024

    public static func expected(for key: String) -> String {
        "a built-in trace (\(TraceModel.presetNames.joined(separator: ", "))), a trace file path containing \"/\", or \"none\""
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        if value == "none" { return { $0.trace = nil } }
        let trace = try load(value, context: context)
        return { $0.trace = trace }
    }

    /// The trace `value` names, read and validated; a path is refused unread where `context` reads no files.
    static func load(_ value: String, context: SettingContext) throws(ProfileError.Kind) -> DeliveryTrace {
        guard value.contains("/") else {
            guard let trace = DeliveryTrace.builtIn(named: value) else {
                throw .invalidValue(expected: expected(for: "trace"))
            }
            return trace
        }
        guard context.readsFiles else {
            throw .invalidValue(
                expected: "a built-in trace (\(TraceModel.presetNames.joined(separator: ", "))): a running "
                    + "linkcond reads no files, so a trace file is read by `linkcond run --profile FILE` or `--scenario FILE`"
            )
        }
        let path = value.hasPrefix("/") || context.directory == nil ? value : context.directory! + "/" + value
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw .unreadable(reason: "\(value): no such trace file")
        }
        guard let size = attributes[.size] as? Int, attributes[.type] as? FileAttributeType == .typeRegular else {
            let kind = attributes[.type] as? FileAttributeType == .typeDirectory ? "a directory" : "not a regular file"
            throw .unreadable(
                reason: "\(value): is \(kind): expected a trace file (one millisecond timestamp per line)")
        }
        guard size <= maximumFileBytes else {
            throw .unreadable(reason: "\(value): the trace file is larger than \(maximumFileBytes / 1024 / 1024) MiB")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable(reason: "\(value): cannot be read (check its permissions)")
        }
        do {
            return try DeliveryTrace(parsing: Array(data), name: value)
        } catch {
            throw .unreadable(reason: error.description)
        }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.trace.map { [("trace", $0.name)] } ?? []
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { $0.trace.map { "trace \($0.name)" } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.trace == nil ? [] : ["trace"]
    }
}
