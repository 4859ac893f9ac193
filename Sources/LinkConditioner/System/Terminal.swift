import Glibc

/// Whether a standard stream is a terminal, so that screen control is sent only where a screen reads it.
public enum Terminal {
    /// True when standard output is a terminal (`isatty(1)`); false for a pipe, a file or /dev/null.
    public static var isStandardOutput: Bool { isatty(STDOUT_FILENO) == 1 }
}
