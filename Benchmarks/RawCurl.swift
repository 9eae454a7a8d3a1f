import CCurlShim
import Foundation

/// libcurl driven directly through the package's own shim: one multi handle on a thread of its own, easy handles set
/// up once for one URL and reused as they are (sending the fields CurlEngine sends), a write callback that only
/// counts bytes, and per request nothing but the continuation the async caller waits on. The thread is woken only
/// when it waits (as CurlEngine's is): a request that arrives while it works is taken on its next turn. The floor of
/// this machine's HTTP stack: every other row reads against it.
///
/// With `keepsBody`, the write callback also copies the body into a buffer of its handle's, kept from one request to
/// the next (grown once, never freed between requests): the floor of a client that hands its caller the body in
/// memory, as every other row does.
final class RawCurl: @unchecked Sendable {
    // Safety: `multi`, `idle`, `busy` and the byte counters are touched only by the worker thread; other threads
    // reach the worker through `inbox`, `stopping` and `waiting`, only under `lock`, and `sb_multi_wakeup`, which
    // libcurl allows from any thread.
    private let multi: UnsafeMutableRawPointer
    private let url: String
    private let lock = NSLock()
    private var inbox: [CheckedContinuation<(status: Int, bytes: Int), any Error>] = []
    private var stopping = false
    /// Whether the worker waits in `sb_multi_poll` (or is about to) with the inbox empty: the next to post wakes it.
    private var waiting = false
    private var idle: [UnsafeMutableRawPointer] = []
    private var busy: [UnsafeMutableRawPointer: CheckedContinuation<(status: Int, bytes: Int), any Error>] = [:]
    /// Bytes received per easy handle, and its body buffer: the write callback's context.
    private var counters: [UnsafeMutableRawPointer: UnsafeMutablePointer<RawCurlBody>] = [:]
    private let keepsBody: Bool

    /// The `User-Agent` the handles send: CurlEngine's.
    private let userAgent: String

    /// `nil` when libcurl cannot be loaded here.
    init?(url: String, userAgent: String, keepsBody: Bool = false) {
        var error = [CChar](repeating: 0, count: 256)
        guard sb_curl_load(&error, error.count) == 0, let multi = sb_multi_init() else { return nil }
        self.multi = multi
        self.url = url
        self.userAgent = userAgent
        self.keepsBody = keepsBody
        sb_multi_setopt_long(multi, 6 /* CURLMOPT_MAXCONNECTS */, 128)
        let thread = Thread { [self] in loop() }
        thread.name = "RawCurl"
        thread.start()
    }

    /// Closes the connections the multi handle keeps and frees it, once the loop has ended (its thread holds this
    /// object until then) and no caller is still in `stop` or `get`, which wake the multi handle.
    deinit {
        sb_multi_cleanup(multi)
    }

    /// One GET of the URL: its status and body length.
    func get() async throws -> (status: Int, bytes: Int) {
        try await withCheckedThrowingContinuation { continuation in
            post { $0.inbox.append(continuation) }
        }
    }

    func stop() {
        post { $0.stopping = true }
    }

    /// Changes the inbox, and wakes the worker if it waits.
    private func post(_ change: (RawCurl) -> Void) {
        lock.lock()
        change(self)
        let wake = waiting
        waiting = false
        lock.unlock()
        if wake { sb_multi_wakeup(multi) }
    }

    private func makeHandle() -> UnsafeMutableRawPointer? {
        guard let easy = sb_easy_init() else { return nil }
        let counter = UnsafeMutablePointer<RawCurlBody>.allocate(capacity: 1)
        counter.initialize(to: RawCurlBody())
        counters[easy] = counter
        url.withCString { _ = sb_easy_setopt_pointer(easy, 10002 /* CURLOPT_URL */, $0) }
        sb_easy_setopt_long(easy, 99 /* CURLOPT_NOSIGNAL */, 1)
        // The request CurlEngine sends, so that both rows do the same exchange: its `User-Agent`, and the compressed
        // encodings asked for (libcurl's list; a compressed answer would be decoded).
        userAgent.withCString { _ = sb_easy_setopt_pointer(easy, 10018 /* CURLOPT_USERAGENT */, $0) }
        "".withCString { _ = sb_easy_setopt_pointer(easy, 10102 /* CURLOPT_ACCEPT_ENCODING */, $0) }
        sb_easy_setopt_data_callback(easy, 20011 /* CURLOPT_WRITEFUNCTION */, keepsBody ? rawCurlKeep : rawCurlWrite)
        sb_easy_setopt_pointer(easy, 10001 /* CURLOPT_WRITEDATA */, counter)
        // Kept bodies are received in CurlEngine's chunks (64 KiB rather than libcurl's 16), so that the copy is
        // made as CurlEngine makes it.
        if keepsBody { sb_easy_setopt_long(easy, 98 /* CURLOPT_BUFFERSIZE */, 64 << 10) }
        return easy
    }

    private func loop() {
        while true {
            lock.lock()
            let arrived = inbox
            inbox = []
            let stop = stopping
            waiting = false
            lock.unlock()
            for continuation in arrived {
                guard let easy = idle.popLast() ?? makeHandle() else {
                    continuation.resume(throwing: URLError(.unknown))
                    continue
                }
                counters[easy]!.pointee.count = 0
                busy[easy] = continuation
                sb_multi_add_handle(multi, easy)
            }
            if stop && busy.isEmpty { break }
            var active: Int32 = 0
            sb_multi_perform(multi, &active)
            var done: UnsafeMutableRawPointer?
            var code: Int32 = 0
            while sb_multi_next_done(multi, &done, &code) == 1, let easy = done {
                sb_multi_remove_handle(multi, easy)
                guard let continuation = busy.removeValue(forKey: easy) else { continue }
                var status = 0
                sb_easy_getinfo_long(easy, 0x200002 /* CURLINFO_RESPONSE_CODE */, &status)
                idle.append(easy)
                if code == 0 {
                    continuation.resume(returning: (status, counters[easy]!.pointee.count))
                } else {
                    continuation.resume(throwing: URLError(.networkConnectionLost))
                }
            }
            // Waits only with the inbox empty; what came during this turn is taken at once.
            lock.lock()
            let mayWait = inbox.isEmpty && stopping == stop
            if mayWait { waiting = true }
            lock.unlock()
            if mayWait {
                var descriptors: Int32 = 0
                sb_multi_poll(multi, busy.isEmpty ? 1000 : 100, &descriptors)
            }
        }
        for easy in idle {
            sb_easy_cleanup(easy)
            if let counter = counters[easy] {
                counter.pointee.storage?.deallocate()
                counter.deallocate()
            }
        }
    }
}

/// A handle's body so far: its length, and (with `keepsBody`) the bytes, in a buffer kept between requests.
struct RawCurlBody {
    var count = 0
    var storage: UnsafeMutableRawBufferPointer?
}

private let rawCurlWrite: SBDataCallback = { _, size, count, context in
    context!.assumingMemoryBound(to: RawCurlBody.self).pointee.count += size * count
    return size * count
}

private let rawCurlKeep: SBDataCallback = { data, size, count, context in
    let body = context!.assumingMemoryBound(to: RawCurlBody.self)
    let length = size * count
    let needed = body.pointee.count + length
    if needed > body.pointee.storage?.count ?? 0 {
        // Grows by doubling, keeping what arrived: a handle reaches the largest body's size once.
        let grown = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(needed, 2 * (body.pointee.storage?.count ?? 0)), alignment: 16)
        if let old = body.pointee.storage {
            grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: old[..<body.pointee.count]))
            old.deallocate()
        }
        body.pointee.storage = grown
    }
    if let data, length > 0 {
        (body.pointee.storage!.baseAddress! + body.pointee.count).copyMemory(from: data, byteCount: length)
    }
    body.pointee.count = needed
    return length
}
