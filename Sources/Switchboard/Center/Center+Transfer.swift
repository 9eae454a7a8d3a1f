import Foundation

extension Center {
    /// Sends a request and returns at once with its progress stream and a way to await its response.
    public func transfer(_ configure: (inout Request) -> Void) -> Transfer {
        let (request, configuration) = configured(configure)
        let (stream, continuation) = AsyncStream<TransferProgress>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let relay = ProgressRelay { continuation.yield($0) }
        let pipeline = pipeline
        let plan = Launcher.Plan(bySignal: false, detached: true)
        let launched = launcher.launch(.single(request), plan) { _ in
            let result = await pipeline.run(request, configuration, progress: relay.report)
            relay.finish()
            continuation.finish()
            return result
        }
        return Transfer(progress: stream, launched: launched)
    }
}
