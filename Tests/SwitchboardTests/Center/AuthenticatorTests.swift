import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

@Suite struct AuthenticatorTests {
    /// A stub that accepts only `Bearer fresh`, and a refresh endpoint counting its calls.
    func setup(refreshFails: Bool = false, credential: String? = "stale")
        -> (Center, StubEngine, Authenticator, Locked<Int>)
    {
        let stub = StubEngine()
        stub.on(.get, "/v1/data") { request in
            request.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer fresh"
                ? .json(["ok": true]) : .status(401)
        }
        let refreshRequests = Locked(0)
        stub.on(.post, "/v1/token") { request in
            refreshRequests.withLock { $0 += 1 }
            // The refresh request itself carries no credential from the authenticator.
            #expect(request.urlRequest.value(forHTTPHeaderField: "Authorization") == nil)
            return refreshFails ? .status(500) : .json(["token": "fresh"]).delayed(by: .milliseconds(50))
        }
        let authenticator = Authenticator(credential: credential) { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, center in
            let response = try await center.send {
                $0.api = "token"; $0.method = .post
            }
            return response.json?["token"]?.string ?? ""
        }
        let center = stubCenter(stub) { $0.authenticator = authenticator }.0
        return (center, stub, authenticator, refreshRequests)
    }

    @Test func twentyRequestsThatHitA401ShareOneRefreshAndAllSucceed() async {
        let (center, stub, authenticator, refreshRequests) = setup()
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<20 { group.addTask { await center.sendRecording { $0.api = "data" } } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.events == ["success", "finished"] })
        #expect(authenticator.refreshCount == 1)
        #expect(refreshRequests.snapshot == 1)
        #expect(authenticator.credential(as: String.self) == "fresh")
        // Every request went once with the stale token at most, then with the fresh one.
        let fresh = stub.requests.filter { $0.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer fresh" }
        #expect(fresh.count == 20)
    }

    /// A refresh that sends a batch and a chain through the same center: their members skip the authenticator
    /// (they used to wait on the refresh that waits on them, for ever).
    @Test func aRefreshMaySendABatchAndAChain() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/data") { request in
            request.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer fresh"
                ? .json(["ok": true]) : .status(401)
        }
        stub.on(.post, "/v1/token/*") { _ in .json(["token": "fre"]) }
        stub.on(.post, "/v1/token/step") { _ in .json(["token": "sh"]) }
        let authenticator = Authenticator(credential: "stale") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, center in
            let parts = try await center.batch { batch in
                batch.add {
                    $0.api = "token/a"; $0.method = .post
                }
                batch.add {
                    $0.api = "token/b"; $0.method = .post
                }
            }
            let steps = try await center.chain { chain in
                chain.first {
                    $0.api = "token/first"; $0.method = .post
                }
                chain.next { request, _ in
                    request.api = "token/step"; request.method = .post
                }
            }
            return (parts.first?.json?["token"]?.string ?? "") + (steps.last?.json?["token"]?.string ?? "")
        } needsRefresh: { token in
            token == "stale"
        }
        let center = stubCenter(stub) { $0.authenticator = authenticator }.0
        // Waited for by polling, so that a hang fails the test instead of hanging it.
        let outcome = Locked<Result<Response, HTTPError>?>(nil)
        Task {
            do {
                let response = try await center.send { $0.api = "data" }
                outcome.withLock { $0 = .success(response) }
            } catch {
                outcome.withLock { $0 = .failure(HTTPError.from(error)) }
            }
        }
        await waitUntil({ outcome.snapshot != nil }, timeout: .seconds(120))
        #expect((try? outcome.snapshot?.get())?.status == 200)
        #expect(authenticator.credential(as: String.self) == "fresh")
        #expect(authenticator.refreshCount == 1)
    }

    /// `needsRefresh` is the user's code: it runs outside the authenticator's lock, so it may read the authenticator.
    @Test func needsRefreshMayReadTheAuthenticator() async {
        let stub = StubEngine()
        stub.on(.get, "/v1/data", reply: .json(["ok": true]))
        let box = Locked<Authenticator?>(nil)
        let authenticator = Authenticator(credential: "fresh") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { token, _ in
            token ?? ""
        } needsRefresh: { _ in
            box.snapshot?.credential(as: String.self) == nil  // took the lock again: a deadlock before
        }
        box.withLock { $0 = authenticator }
        let center = stubCenter(stub) { $0.authenticator = authenticator }.0
        let outcome = Locked<Int?>(nil)
        Task {
            outcome.withLock { $0 = 0 }; let status = (try? await center.send { $0.api = "data" })?.status
            outcome.withLock { $0 = status ?? -1 }
        }
        await waitUntil({ (outcome.snapshot ?? 0) != 0 }, timeout: .seconds(120))
        #expect(outcome.snapshot == 200)
        #expect(authenticator.refreshCount == 0)
    }

    @Test func aFailingRefreshFailsEveryoneAndDoesNotRefreshAgain() async {
        let (center, _, authenticator, refreshRequests) = setup(refreshFails: true)
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<20 { group.addTask { await center.sendRecording { $0.api = "data" } } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.events == ["failure:authentication", "finished"] })
        #expect(outcomes.first?.error?.message.contains("could not be refreshed") == true)
        // A later request with the same refused credential fails at once, without another refresh.
        let later = await center.sendRecording { $0.api = "data" }
        #expect(later.error?.code == .authentication)
        #expect(authenticator.refreshCount == 1)
        #expect(refreshRequests.snapshot == 1)
        // A new credential (a new login) clears the failure.
        authenticator.setCredential("fresh")
        #expect(await center.sendRecording { $0.api = "data" }.events == ["success", "finished"])
    }

    @Test func withoutACredentialTheFirstRequestRefreshes() async {
        let (center, _, authenticator, _) = setup(credential: nil)
        #expect(await center.sendRecording { $0.api = "data" }.events == ["success", "finished"])
        #expect(authenticator.refreshCount == 1)
    }

    @Test func aProactiveRefreshBeforeExpiry() async {
        struct Token: Sendable { var value: String; var expires: Date }
        let stub = StubEngine()
        stub.on(.get, "/v1/data") { request in
            request.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer new"
                ? .json(["ok": true]) : .status(401)
        }
        let authenticator = Authenticator(credential: Token(value: "old", expires: Date().addingTimeInterval(10))) {
            token, request in
            request.headers["Authorization"] = "Bearer \(token.value)"
        } refresh: { _, _ in
            Token(value: "new", expires: Date().addingTimeInterval(3600))
        } needsRefresh: { token in
            token.expires < Date().addingTimeInterval(60)
        }
        let center = stubCenter(stub) { $0.authenticator = authenticator }.0
        #expect(await center.sendRecording { $0.api = "data" }.events == ["success", "finished"])
        #expect(stub.requests.count == 1)
        #expect(authenticator.refreshCount == 1)
    }

    @Test func aRequestCanOptOut() async {
        let (center, stub, authenticator, _) = setup()
        let outcome = await center.sendRecording {
            $0.api = "data"; $0.usesAuthenticator = false
        }
        #expect(outcome.error?.status == 401)
        #expect(authenticator.refreshCount == 0)
        #expect(stub.requests.first?.urlRequest.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func againstARealServer() async throws {
        let authenticator = Authenticator(credential: "expired") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, _ in
            "s3cret"
        }
        let center = testCenter { config in
            config.server = Server.loopback.baseURL + "/"
            config.authenticator = authenticator
        }
        let response = try await center.send { $0.api = "bearer-only/s3cret" }
        #expect(response.json?["authenticated"]?.bool == true)
        #expect(authenticator.refreshCount == 1)
    }
}

@Suite struct DeduplicationTests {
    @Test func fiftyIdenticalGetsMakeOneEngineCall() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["shared": true]).delayed(by: .milliseconds(100)))
        let (center, _) = stubCenter(stub) { $0.deduplicatesGETs = true }
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    await center.sendRecording {
                        $0.api = "feed"; $0.parameters = ["p": 1]
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stub.statistics.calls == 1)
        #expect(outcomes.allSatisfy { $0.response?.json?["shared"]?.bool == true })
        #expect(Set(outcomes.map(\.id)).count == 50)
        #expect(center.inFlight.count == 0)
    }

    @Test func differentRequestsAreNotShared() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204).delayed(by: .milliseconds(50)))
        let (center, _) = stubCenter(stub) { $0.deduplicatesGETs = true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await center.sendRecording { $0.api = "a" } }
            group.addTask {
                _ = await center.sendRecording {
                    $0.api = "a"; $0.parameters = ["x": 1]
                }
            }
            group.addTask {
                _ = await center.sendRecording {
                    $0.api = "a"; $0.headers["X-User"] = "2"
                }
            }
            group.addTask {
                _ = await center.sendRecording {
                    $0.api = "a"; $0.method = .post
                }
            }
        }
        #expect(stub.statistics.calls == 4)
    }

    @Test func cancellingFortyNineLeavesOneCompleting() async {
        let stub = StubEngine()
        let gate = Gate()
        stub.on(nil, "*") { _ in
            await gate.wait()
            return .json(["ok": true])
        }
        let (center, _) = stubCenter(stub)
        let ids = Locked<[RequestID]>([])
        let finished = Locked<[Result<Response, HTTPError>]>([])
        for _ in 0..<50 {
            let id = center.send {
                $0.api = "feed"; $0.deduplicate = true
            } onFinished: { result in
                finished.withLock { $0.append(result) }
            }
            ids.withLock { $0.append(id) }
        }
        await waitUntil { stub.statistics.inFlight == 1 }
        for id in ids.snapshot.dropLast() { center.cancel(id) }
        await waitUntil { finished.snapshot.count == 49 }
        #expect(stub.statistics.cancellations == 0)
        gate.open()
        await waitUntil { finished.snapshot.count == 50 }
        let results = finished.snapshot
        #expect(results.filter { $0.failureCode == .cancelled }.count == 49)
        #expect(results.filter(\.isSuccess).count == 1)
        #expect(stub.statistics.calls == 1)
    }

    @Test func cancellingEveryCallerCancelsTheTransfer() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub) { $0.deduplicatesGETs = true }
        let done = Locked(0)
        let ids = (0..<5).map { _ in
            center.send {
                $0.api = "feed"
            } onFinished: { _ in
                done.withLock { $0 += 1 }
            }
        }
        await waitUntil { stub.statistics.inFlight == 1 }
        for id in ids { center.cancel(id) }
        await waitUntil { done.snapshot == 5 && stub.statistics.inFlight == 0 }
        #expect(stub.statistics.cancellations == 1)
        #expect(center.inFlight.count == 0)
    }

    @Test func everyCallerGetsTheSameErrorThroughItsOwnCallbacks() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(502).delayed(by: .milliseconds(50)))
        let (center, _) = stubCenter(stub) { $0.deduplicatesGETs = true }
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<10 { group.addTask { await center.sendRecording { $0.api = "feed" } } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stub.statistics.calls == 1)
        #expect(
            outcomes.allSatisfy { $0.events == ["failure:unacceptableStatus", "finished"] && $0.error?.status == 502 })
    }
}

@Suite struct EnvelopeTests {
    struct User: Decodable, Equatable { var id: Int; var name: String }

    func center(_ body: JSON) -> Center {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(body))
        return stubCenter(stub) { config in
            config.onResponse = { _, response in try response.unwrapping(code: "code", ok: 0, data: "data") }
        }.0
    }

    @Test func anOKEnvelopeIsUnwrappedForDecode() async throws {
        let user = try await center(["code": 0, "message": "ok", "data": ["id": 7, "name": "Ada"]])
            .send(User.self) { $0.api = "me" }
        #expect(user == User(id: 7, name: "Ada"))
    }

    @Test func aNonOKCodeIsABusinessError() async {
        let outcome = await center(["code": 4001, "message": "insufficient balance", "data": nil]).sendRecording {
            $0.api = "pay"
        }
        #expect(outcome.error?.code == .business)
        #expect(outcome.error?.serverCode == 4001)
        #expect(outcome.error?.message == "insufficient balance")
        #expect(outcome.error?.response?.json?["code"] == 4001)
    }

    @Test func codesCompareAsNumbersOrText() throws {
        let response = Response(
            status: 200, data: Data(#"{"status":{"code":"200"},"result":{"items":[{"id":3}]}}"#.utf8))
        let unwrapped = try response.unwrapping(code: "status.code", ok: 200, data: "result.items.0")
        #expect(unwrapped.json == ["id": 3])
        #expect(throws: HTTPError.self) { try response.unwrapping(code: "status.missing") }
    }

    @Test func shapesAreValidatedWithThePathThatFailed() throws {
        let response = Response(status: 200, data: Data(#"{"id":1,"name":"Ada","tags":["a",2],"bio":null}"#.utf8))
        try response.validating(["id": .number, "name": .string, "bio": .optional(.string)])
        let error = #expect(throws: HTTPError.self) {
            try response.validating(["id": .number, "tags": .array(.string)])
        }
        #expect(error?.message == "$.tags[1] should be a string, found a number")
        let missing = #expect(throws: HTTPError.self) { try response.validating(["email": .string]) }
        #expect(missing?.message == "$.email is missing; expected a string")
    }
}
