/// The README's snippets, compiled as members of a `@MainActor` type: each runs on the main actor, as code in a
/// view model or view controller does.
@MainActor
final class ReadmeSnippets {}
