// swift-tools-version:6.2
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
        // What an app adds from outside the module (serializers), with the public API alone.
        .testTarget(name: "SwitchboardExtensionTests", dependencies: ["Switchboard", "SwitchboardTestSupport"]),
        // The README's snippets and the first calls of app code, compiled (the same files, linked) where apps write
        // them: in a `@MainActor` type, in a target set up as Xcode 26 sets up a new app (default isolation
        // `MainActor`, isolated conformances inferred, nonisolated async functions running in the caller's isolation),
        // and in Swift 5 mode with minimal and with complete concurrency checking. ReadmeScript is the same in
        // top-level code.
        .testTarget(name: "SwitchboardMainActorTests", dependencies: ["Switchboard"]),
        .testTarget(
            name: "SwitchboardDefaultIsolationTests", dependencies: ["Switchboard"],
            swiftSettings: [
                .defaultIsolation(MainActor.self),
                .enableUpcomingFeature("InferIsolatedConformances"),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
            ]
        ),
        .testTarget(
            name: "SwitchboardSwift5Tests", dependencies: ["Switchboard"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "SwitchboardSwift5StrictTests", dependencies: ["Switchboard"],
            swiftSettings: [.swiftLanguageMode(.v5), .enableUpcomingFeature("StrictConcurrency")]
        ),
        .executableTarget(name: "ReadmeScript", dependencies: ["Switchboard"], path: "Tests/ReadmeScript"),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["Switchboard", "SwitchboardTestSupport", "HeapStats", "CCurlShim"],
            path: "Benchmarks",
            exclude: ["HeapStats", "README.md"]
        ),
        // The C allocator's statistics (glibc's mallinfo2, which Swift's Glibc module does not export), so that the
        // stability benchmark can tell memory still in use from pages the allocator keeps.
        .target(name: "HeapStats", path: "Benchmarks/HeapStats"),
    ],
    swiftLanguageModes: [.v6]
)
