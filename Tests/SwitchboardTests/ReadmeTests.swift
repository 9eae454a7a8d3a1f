import Foundation
import Testing
@testable import Switchboard

/// Declares the snippets' namespace for this target: a plain enum in Swift 6 mode (the other targets that compile
/// ReadmeSnippets.swift declare it their own way).
enum ReadmeSnippets {}

@Suite struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The call-site corpus every snippet target compiles (the documentation's own blocks are compiled as shown by
    /// `.ci/snippets`).
    static let corpus = "Tests/SwitchboardTests/ReadmeSnippets.swift"

    @Test func theOtherSnippetTargetsCompileThisVeryFile() throws {
        let original = try Data(contentsOf: Self.root.appendingPathComponent(Self.corpus))
        for target in [
            "SwitchboardMainActorTests", "SwitchboardDefaultIsolationTests", "SwitchboardSwift5Tests",
            "SwitchboardSwift5StrictTests",
        ] {
            let copy = Self.root.appendingPathComponent("Tests/\(target)/ReadmeSnippets.swift")
            #expect(try Data(contentsOf: copy) == original, "\(target) compiles another ReadmeSnippets.swift")
        }
    }

    @Test func theStubExampleRuns() async throws {
        try await ReadmeSnippets.stubs()
    }
}
