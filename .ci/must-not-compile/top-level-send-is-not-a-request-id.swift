// Top-level code (a script, main.swift): `let r = try await send { ... }` is the awaited form, `r` a `Response`.
// expect: cannot convert value of type 'Response' to specified type 'RequestID'
import Switchboard

let response = try await Center.shared.send { $0.api = "get" }
let id: RequestID = response
