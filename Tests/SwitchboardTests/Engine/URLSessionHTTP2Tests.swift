import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

#if os(Linux)
/// URLSessionEngine over HTTP/2, against the same Hypercorn server as CurlEngine's tests.
///
/// On Linux, URLSession trusts only the system's CA bundle: there is no per-session CA and no trust challenge, so it
/// cannot reach a server with a certificate made at test time. The requests therefore run in a child process (this
/// test binary, running only `urlSessionEngineRequestsInTheChildProcess`) inside a private mount namespace, where the
/// bundle's path shows a copy that also holds the test certificate. Nothing outside that process sees the change.
/// The child writes what it saw as JSON; the parent checks it.
enum URLSessionHTTP2Child {
    static let environment = ProcessInfo.processInfo.environment
    /// Set in the child: the server's base URL, and where to write the report.
    static let server = environment["SWITCHBOARD_H2_CHILD_SERVER"]
    static let report = environment["SWITCHBOARD_H2_CHILD_REPORT"]
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// A private mount namespace needs `unshare` and the right to mount (root here and in CI).
    static let canIsolate: Bool = {
        guard server == nil, getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            FileManager.default.fileExists(atPath: systemBundle)
        else { return false }
        guard let probe = try? ProcessLaunch.spawn("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/true"])
        else { return false }
        return ProcessLaunch.exitStatus(of: probe) == 0
    }()

    /// Runs the child test with the bundle that trusts `certificate`, and returns its report.
    static func run(server: HTTP2Server, certificate: URL, scratch: Scratch) async throws -> [String: String] {
        let bundle = scratch.file("bundle.crt")
        var trusted = try Data(contentsOf: URL(fileURLWithPath: systemBundle))
        trusted.append(contentsOf: Array("\n".utf8))
        trusted.append(try Data(contentsOf: certificate))
        try trusted.write(to: bundle)
        let report = scratch.file("report.json")
        try await ChildTest.run(
            "urlSessionEngineRequestsInTheChildProcess",
            environment: ["SWITCHBOARD_H2_CHILD_SERVER": server.baseURL, "SWITCHBOARD_H2_CHILD_REPORT": report.path],
            command: [
                "/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"", "sh", bundle.path, systemBundle,
            ], scratch: scratch)
        return try JSONDecoder().decode([String: String].self, from: Data(contentsOf: report))
    }
}

extension HTTP2Tests {
    @Test(.enabled(if: URLSessionHTTP2Child.canIsolate, "needs unshare and the right to mount"))
    func urlSessionEngineNegotiatesHTTP2OverTLS() async throws {
        let server = try await HTTP2Server()
        await TLSServer.waitForListener(on: server.port)
        let scratch = Scratch()
        let report = try await URLSessionHTTP2Child.run(
            server: server, certificate: server.certificate, scratch: scratch)
        let generated = GeneratedBody(length: 200_000)

        #expect(report["get.version"] == "2")
        #expect(report["get.path"] == "/hello")
        // URLSession on Linux gathers no metrics and does not say which protocol it used: the engine leaves the
        // version unknown rather than guess (TransferMetrics documents it).
        #expect(report["get.metrics.version"] == nil)
        #expect(report["get.metrics.total"] == "true")
        // Eight requests at once share one connection: URLSession multiplexes them.
        #expect(report["parallel.count"] == "8")
        #expect(report["parallel.connections"] == "1")
        #expect(report["data.version"] == "2")
        #expect(report["data.length"] == "100000")
        #expect(report["data.sha256"] == SHA256Hasher.hex(Data(repeating: 42, count: 100_000)))
        #expect(report["file.version"] == "2")
        #expect(report["file.length"] == "300000")
        #expect(report["file.content-length"] == "300000")
        #expect(report["file.sha256"] != nil)
        #expect(report["file.sha256"] == report["file.sent-sha256"])
        #expect(report["stream.version"] == "2")
        #expect(report["stream.length"] == "200000")
        #expect(await report["stream.sha256"] == generated.sha256())
        // A stream of known length goes with its Content-Length over HTTP/2 too.
        #expect(report["sized.version"] == "2")
        #expect(report["sized.length"] == "200000")
        #expect(report["sized.content-length"] == "200000")
        #expect(await report["sized.sha256"] == generated.sha256())
        #expect(report["download.equal"] == "true")
        #expect(report["download.length"] == "1048576")
        // A cookie set over HTTP/2 (`set-cookie`, in lower case) is stored and sent on: URLSession on Linux stored
        // the cookies of `Set-Cookie` fields alone.
        #expect(report["cookie.version"] == "2")
        #expect(report["cookie.sent"] == "session=h2")
    }

    /// The child's half of `urlSessionEngineNegotiatesHTTP2OverTLS`; it runs only in that child process.
    @Test(.enabled(if: URLSessionHTTP2Child.server != nil, "runs in the child process of an HTTP/2 test"))
    func urlSessionEngineRequestsInTheChildProcess() async throws {
        let center = Center { config in
            config.engine = URLSessionEngine()
            config.server = URLSessionHTTP2Child.server
            config.totalTimeout = .seconds(60)
        }
        var report: [String: String] = [:]
        func record(_ name: String, _ response: Response) {
            report["\(name).version"] = response.json?["http_version"]?.string
            report["\(name).length"] = response.json?["length"]?.int.map(String.init)
            report["\(name).sha256"] = response.json?["sha256"]?.string
            report["\(name).content-length"] = response.json?["content_length"]?.string
        }

        let hello = try await center.send { $0.api = "hello" }
        record("get", hello)
        report["get.path"] = hello.json?["path"]?.string
        report["get.metrics.version"] = hello.metrics?.httpVersion
        report["get.metrics.total"] = hello.metrics.map { String($0.total > .zero) }

        let ports = try await withThrowingTaskGroup(of: Int?.self) { group in
            for index in 0..<8 {
                group.addTask { try await center.send { $0.api = "parallel/\(index)" }.json?["client_port"]?.int }
            }
            return try await group.reduce(into: [Int]()) { ports, port in port.map { ports.append($0) } }
        }
        report["parallel.count"] = String(ports.count)
        report["parallel.connections"] = String(Set(ports).count)

        let scratch = Scratch()
        let file = scratch.write("upload.bin", bytes: 300_000, seed: 4)
        report["file.sent-sha256"] = try SHA256Hasher.hex(ofFile: file)
        let generated = GeneratedBody(length: 200_000)
        let uploads: [(name: String, method: HTTPMethod, body: Request.Body)] = [
            ("data", .post, .data(Data(repeating: 42, count: 100_000))),
            ("file", .put, .file(file)),
            ("stream", .post, .stream { generated.open() }),
            ("sized", .post, .stream(length: 200_000) { generated.open() }),
        ]
        for upload in uploads {
            record(
                upload.name,
                try await center.send { request in
                    request.api = upload.name
                    request.method = upload.method
                    request.body = upload.body
                })
        }

        let target = scratch.file("h2.bin")
        _ = try await center.send { request in
            request.kind = .download
            request.api = "bytes/1048576"
            request.destination = .file(target)
        }
        let downloaded = try Data(contentsOf: target)
        report["download.length"] = String(downloaded.count)
        report["download.equal"] = String(downloaded == Data(String(repeating: "0123456789abcdef", count: 65_536).utf8))

        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = privateCookieStorage()
        let cookies = Center { config in
            config.engine = URLSessionEngine(configuration: configuration)
            config.server = URLSessionHTTP2Child.server
            config.totalTimeout = .seconds(60)
        }
        _ = try await cookies.send { $0.api = "set-cookie" }
        let echo = try await cookies.send { $0.api = "hello" }
        report["cookie.version"] = echo.json?["http_version"]?.string
        report["cookie.sent"] = echo.json?["cookie"]?.string

        let path = try #require(URLSessionHTTP2Child.report)
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: path))
    }
}
#endif
