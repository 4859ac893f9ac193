// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "linkcond",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LinkConditioner", targets: ["LinkConditioner"]),
        .executable(name: "linkcond", targets: ["linkcond"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation --target LinkConditioner` builds the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(name: "CLinuxShims"),
        .target(
            name: "LinkModel",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "LinkSystem",
            dependencies: ["CLinuxShims", "LinkModel", .product(name: "HeapModule", package: "swift-collections")]
        ),
        .target(name: "LinkProfiles", dependencies: ["LinkModel", "LinkSystem"]),
        .target(
            name: "LinkConditioner",
            dependencies: [
                "CLinuxShims",
                "LinkModel",
                "LinkProfiles",
                "LinkSystem",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        .target(name: "LinkNetem", dependencies: ["CNetlink", "LinkConditioner"]),
        .executableTarget(
            name: "linkcond",
            dependencies: [
                "LinkConditioner",
                "LinkNetem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LinkModelTests", dependencies: ["LinkModel", "LinkProfiles", "LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "LinkSystemTests", dependencies: ["LinkSystem", "LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "LinkProfilesTests", dependencies: ["LinkProfiles", "LinkConditioner"]),
        .target(name: "LoopbackPeers", dependencies: ["LinkConditioner"]),
        .executableTarget(name: "linkcond-bench", dependencies: ["CLinuxShims", "LinkConditioner", "LoopbackPeers"]),
        // Writes the generated parts of docs/ (the profile-key tables) for scripts/generate-docs.
        .executableTarget(name: "linkcond-docs", dependencies: ["LinkProfiles"]),
        .testTarget(name: "ProxyTests", dependencies: ["LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "CLITests", dependencies: ["LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "ControlTests", dependencies: ["LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "ToxiproxyTests", dependencies: ["LinkConditioner", "LoopbackPeers"]),
        .testTarget(name: "NetemTests", dependencies: ["LinkNetem", "LinkConditioner"]),
    ],
    swiftLanguageModes: [.v6]
)
