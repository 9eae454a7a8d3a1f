import Foundation

/// Identical requests in flight share one engine call.
///
/// Each caller waits on the shared exchange with its own progress handler; when a caller is cancelled it stops
/// waiting (and ends as `.cancelled`), and the exchange itself is cancelled only when no caller is left. Validation,
/// decoding, hooks and callbacks run for every caller on its own, so each gets its own `Response` or error.
final class InFlight: Sendable {
    /// What makes two requests identical: method, URL, headers, body and speed limits (a limited request does not
    /// wait on an unlimited transfer, nor holds one back).
    struct Key: Hashable {
        let method: String
        let url: String
        let headers: [String]
        let body: Data
        let limits: [Int64?]

        init?(_ request: EngineRequest) {
            guard request.destination == .memory, let url = request.url else { return nil }
            switch request.body {
            case .none: body = Data()
            case .data(let data): body = data
            case .file, .stream: return nil
            }
            method = request.method.rawValue
            self.url = url.absoluteString
            headers = request.headers.map { "\($0.name.lowercased()):\($0.value)" }.sorted()
            limits = [request.maxReceiveBytesPerSecond, request.maxSendBytesPerSecond, request.maxResponseBytes]
        }
    }

    private struct Waiter {
        let continuation: CheckedContinuation<EngineResponse, any Error>
        let progress: @Sendable (TransferProgress) -> Void
    }

    /// One exchange shared by identical requests, and the callers waiting on it.
    private struct Shared {
        let id: UUID
        var waiters: [UUID: Waiter] = [:]
        var task: Task<Void, Never>?
    }

    private let exchanges = Locked<[Key: Shared]>([:])

    /// How many shared exchanges are running.
    var count: Int { exchanges.withLock { $0.count } }

    /// Joins the running exchange for an identical request, or starts one; returns its response.
    func perform(
        _ request: EngineRequest, key: Key, engine: any Engine,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        let waiter = UUID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Cancellation sets the flag before it runs `leave`; checking it under the same lock as joining
                // means a caller is either seen by `leave` or sees that it was cancelled.
                enum Join { case cancelled, joined, started(UUID) }
                let join = exchanges.withLock { exchanges -> Join in
                    if Task.isCancelled { return .cancelled }
                    if exchanges[key] != nil {
                        exchanges[key]!.waiters[waiter] = Waiter(continuation: continuation, progress: progress)
                        return .joined
                    }
                    var exchange = Shared(id: UUID())
                    exchange.waiters[waiter] = Waiter(continuation: continuation, progress: progress)
                    exchanges[key] = exchange
                    return .started(exchange.id)
                }
                let exchangeID: UUID
                switch join {
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                    return
                case .joined:
                    return
                case .started(let id):
                    exchangeID = id
                }
                var request = request
                request.observesProgress = true  // callers that join later may listen
                let task = Task { [request, self] in
                    let result: Result<EngineResponse, any Error>
                    do {
                        result = .success(
                            try await engine.perform(request) { [self] report in
                                fanOut(report, key: key, exchange: exchangeID)
                            })
                    } catch {
                        result = .failure(error)
                    }
                    finish(key, exchange: exchangeID, with: result)
                }
                let cancelNow = exchanges.withLock { exchanges -> Bool in
                    guard exchanges[key]?.id == exchangeID else { return false }
                    exchanges[key]!.task = task
                    return exchanges[key]!.waiters.isEmpty
                }
                if cancelNow { task.cancel() }
            }
        } onCancel: {
            leave(key, waiter: waiter)
        }
    }

    /// A cancelled caller stops waiting; the last one to leave cancels the exchange.
    private func leave(_ key: Key, waiter: UUID) {
        let (left, abandoned) = exchanges.withLock { exchanges -> (Waiter?, Task<Void, Never>?) in
            guard let removed = exchanges[key]?.waiters.removeValue(forKey: waiter) else { return (nil, nil) }
            guard exchanges[key]!.waiters.isEmpty else { return (removed, nil) }
            let task = exchanges[key]!.task
            exchanges[key] = nil
            return (removed, task)
        }
        left?.continuation.resume(throwing: CancellationError())
        abandoned?.cancel()
    }

    private func finish(_ key: Key, exchange: UUID, with result: Result<EngineResponse, any Error>) {
        let waiters = exchanges.withLock { exchanges -> [Waiter] in
            guard exchanges[key]?.id == exchange else { return [] }
            defer { exchanges[key] = nil }
            return Array(exchanges[key]!.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume(with: result) }
    }

    private func fanOut(_ report: TransferProgress, key: Key, exchange: UUID) {
        let handlers = exchanges.withLock { exchanges -> [@Sendable (TransferProgress) -> Void] in
            guard exchanges[key]?.id == exchange else { return [] }
            return exchanges[key]!.waiters.values.map(\.progress)
        }
        for handler in handlers { handler(report) }
    }
}
