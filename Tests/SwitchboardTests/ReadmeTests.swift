import Foundation
import Testing
@testable import Switchboard

/// Declares the snippets' namespace for this target: a plain enum in Swift 6 mode (the other targets that compile
/// ReadmeSnippets.swift declare it their own way).
enum ReadmeSnippets {}

@Suite struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift blocks of the README, with import lines dropped.
    static func readmeBlocks() throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in readme.components(separatedBy: "\n") {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(current!.filter { !$0.hasPrefix("import ") }.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func fold(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The files that hold the README's blocks: the snippets in functions and types, the top-level ones as a script.
    static let compiledFiles = ["Tests/SwitchboardTests/ReadmeSnippets.swift", "Tests/ReadmeScript/main.swift"]

    @Test func everyReadmeBlockIsCompiledHere() throws {
        let blocks = try Self.readmeBlocks()
        #expect(blocks.count >= 8)
        let sources = try Self.compiledFiles.map { path in
            Self.fold(try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8))
        }
        for block in blocks {
            let compiled = sources.contains { $0.contains(Self.fold(block)) }
            #expect(compiled, "README block compiled by none of \(Self.compiledFiles):\n\(block)")
        }
    }

    @Test func theOtherSnippetTargetsCompileThisVeryFile() throws {
        let original = try Data(contentsOf: Self.root.appendingPathComponent(Self.compiledFiles[0]))
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
