// swift-tools-version: 6.0
// The libFuzzer targets, a package of their own: they reach internals with `@testable import`, which a release
// build of the root package refuses, so the root package builds every product in release without them.
// scripts/fuzz builds this package instrumented; `swift build --package-path Fuzz` builds the corpus replayer.
import PackageDescription

let package = Package(
    name: "linkcond-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "linkcond", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "linkcond-fuzz",
            dependencies: [
                .product(name: "LinkConditioner", package: "linkcond"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "linkcond-fuzz"
        )
    ],
    swiftLanguageModes: [.v6]
)
