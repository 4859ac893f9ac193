import CLinuxShims
import Glibc

/// Whether a standard stream is a terminal, so that screen control is sent only where a screen reads it.
public enum Terminal {
    /// True when standard output is a terminal (`isatty(1)`); false for a pipe, a file or /dev/null.
    public static var isStandardOutput: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Standard output's terminal size (`TIOCGWINSZ`), or nil when it is no terminal or reports no size.
    public static var standardOutputSize: (rows: Int, columns: Int)? {
        var rows: UInt16 = 0
        var columns: UInt16 = 0
        guard clinux_window_size(STDOUT_FILENO, &rows, &columns) == 0, rows > 0, columns > 0 else { return nil }
        return (Int(rows), Int(columns))
    }

    /// Raises `COLUMNS` to `minimum` for this process when it, or the terminal when it is unset, says less. The
    /// argument parser's help wrapping stops the process (a trap) on a narrower width.
    public static func widenColumnsVariable(toAtLeast minimum: Int) {
        let given = getenv("COLUMNS").flatMap { Int(String(cString: $0)) } ?? standardOutputSize?.columns
        guard let given, given < minimum else { return }
        setenv("COLUMNS", String(minimum), 1)
    }
}
