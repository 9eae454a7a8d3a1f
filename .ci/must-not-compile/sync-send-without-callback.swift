// A callback send needs a callback: in synchronous code, a bare `send { ... }` is the async form, not a silent
// fire-and-forget.
// expect: 'async' call in a function that does not support concurrency
import Switchboard

func refresh() {
    Center.shared.send { $0.api = "feed" }
}
