// In async code, a bare `send { ... }` is the awaited form: its value is a `Response`, never a `RequestID`.
// expect: cannot convert value of type 'Response' to specified type 'RequestID'
import Switchboard

func refresh() async throws {
    let id: RequestID = try await Center.shared.send { $0.api = "feed" }
    print(id)
}
