// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Switchboard", targets: ["Switchboard"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
    ],
    targets: [
        .target(
            name: "CCurlShim",
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .target(name: "Switchboard", dependencies: ["CCurlShim"]),
        .target(name: "SwitchboardTestSupport", dependencies: ["Switchboard"]),
        .testTarget(name: "SwitchboardTests", dependencies: ["Switchboard", "SwitchboardTestSupport"]),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["Switchboard", "SwitchboardTestSupport"],
            path: "Benchmarks"
        ),
    ],
    swiftLanguageModes: [.v6]
)
