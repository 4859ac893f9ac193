import CNetlink

/// An error reported by libnl; its codes are NLE_* values, not errno values.
public struct NetlinkError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    public var description: String { "\(operation): \(String(cString: nl_geterror(code)))" }
}
