// swift-format-ignore-file
// (This file keeps the README's layout.)
// The README's quick start as top-level code, the way a script or a `main.swift` runs it, against a stub so that it
// runs anywhere: `swift run ReadmeScript` exits with 0 when every call meant what it says. (`.ci/snippets` compiles
// the README's blocks as shown; this runs the quick start.)
import Foundation
import Switchboard

let stub = StubEngine()
stub.on(.get, "/v1/users/1", reply: .json(["id": 1, "name": "Ada"]))
stub.on(.get, "/v1/users/2", reply: .json(["id": 2, "name": "Grace"]))
Center.shared.setup { $0.engine = stub }

// README: quick start

nonisolated struct User: Codable, Sendable {
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

// The other async forms, from top-level code too.

struct GetUser: Endpoint {
    typealias Response = User
    var id: Int
    var path: String { "users/\(id)" }
}
let endpointUser = try await Center.shared.send(GetUser(id: userID))
let members = try await Center.shared.batch { batch in
    batch.add { $0.api = "users/1" }
    batch.add { $0.api = "users/\(userID)" }
}
let steps = try await Center.shared.chain { chain in
    chain.first { $0.api = "users/1" }
    chain.next { request, previous in request.api = "users/\((previous.json?["id"]?.int ?? 0) + 1)" }
}
let transferred = try await Center.shared.transfer { $0.api = "users/\(userID)" }.response()
let stream = try await Center.shared.stream { $0.api = "users/\(userID)" }
var streamed = Data()
for try await chunk in stream { streamed.append(chunk) }
let streamedUser = try JSONDecoder().decode(User.self, from: streamed)

let outcome = [
    user.name == "Ada", status == 200, grace.name == "Grace", endpointUser.name == "Grace",
    members.map(\.status) == [200, 200], steps.last?.json?["name"]?.string == "Grace", transferred.status == 200,
    stream.status == 200, streamedUser.name == "Grace", stub.requests.count == 10,
]
guard !outcome.contains(false) else {
    print("ReadmeScript: unexpected outcome: \(outcome), \(stub.requests.count) requests")
    exit(1)
}
print("ReadmeScript: every top-level call was awaited")
