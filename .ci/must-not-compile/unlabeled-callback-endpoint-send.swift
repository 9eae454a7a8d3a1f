// A closure without a label after `send(endpoint)` is `onSuccess`; when its body fits every callback and no other
// callback is named, the call is ambiguous rather than silently one of them.
// expect: ambiguous use of 'send'
import Switchboard

struct Ping: Endpoint {
    typealias Response = EmptyBody
    var path: String { "ping" }
}

func ping() {
    Center.shared.send(Ping()) { _ in print("done") }
}
