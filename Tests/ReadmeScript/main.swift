// The README's quick start as top-level code, the way a script or a `main.swift` runs it, against a stub so that it
// runs anywhere: `swift run ReadmeScript` exits with 0 when every call meant what it says. ReadmeTests checks that
// the README's block is here, word for word.
import Foundation
import Switchboard

let stub = StubEngine()
stub.on(.get, "/v1/users/1", reply: .json(["id": 1, "name": "Ada"]))
stub.on(.get, "/v1/users/2", reply: .json(["id": 2, "name": "Grace"]))
Center.shared.setup { $0.engine = stub }

// README: quick start

struct User: Codable, Sendable {
    let id: Int
    let name: String
}

Center.shared.setup { config in
    config.server = "https://api.example.com/v1/"
    config.headers["X-Client"] = "ios"
}

let user = try await Center.shared.send(User.self) { $0.api = "users/1" }
print(user.name)

// A bare `send` in top-level code is the awaited form: `response` is a `Response`, not a `RequestID`.

let response = try await Center.shared.send { $0.api = "users/2" }
let status: Int = response.status
let userID = 2
let grace = try await Center.shared.send(User.self) { $0.api = "users/\(userID)" }

guard user.name == "Ada", status == 200, grace.name == "Grace", stub.requests.count == 3 else {
    print("ReadmeScript: unexpected outcome: \(user), \(status), \(grace), \(stub.requests.count) requests")
    exit(1)
}
print("ReadmeScript: every top-level call was awaited")
