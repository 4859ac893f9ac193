/// linkcond's version, written here and nowhere else.
///
/// `linkcond --version`, `linkcond status --json`, the control endpoint's `GET /version` and `scripts/package`
/// (which reads this line) all take it from here; packaging/debian/changelog's newest entry must match it.
public let linkcondVersion = "0.1.0"
