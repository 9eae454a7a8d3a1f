// An endpoint's callback form needs a callback: in synchronous code, a bare `send(endpoint)` is the async form.
// expect: 'async' call in a function that does not support concurrency
import Switchboard

struct Ping: Endpoint {
    typealias Response = EmptyBody
    var path: String { "ping" }
}

func ping() {
    Center.shared.send(Ping())
}
