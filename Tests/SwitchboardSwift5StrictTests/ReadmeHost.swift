/// The README's snippets, compiled in Swift 5 language mode with complete concurrency checking.
enum ReadmeSnippets {}
