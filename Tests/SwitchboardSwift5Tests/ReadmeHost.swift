/// The README's snippets, compiled in Swift 5 language mode with minimal concurrency checking.
enum ReadmeSnippets {}
