/// The README's snippets, compiled in a target whose default isolation is `MainActor` (new Xcode 26 app targets):
/// this enum, and every type and function here, is main-actor isolated without saying so.
enum ReadmeSnippets {}
