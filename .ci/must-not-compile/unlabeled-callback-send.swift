// A closure without a label after `send(configure)` is `onSuccess`; when its body fits every callback and no other
// callback is named, the call is ambiguous rather than silently one of them.
// expect: ambiguous use of 'send'
import Switchboard

func configure(_ request: inout Request) { request.api = "ping" }

func ping() {
    Center.shared.send(configure) { _ in print("done") }
}
