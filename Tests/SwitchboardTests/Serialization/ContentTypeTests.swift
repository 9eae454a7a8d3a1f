import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Which `Content-Type` a request is sent with: its own, else its body's (the form, JSON or plist the center encodes,
/// a multipart form's with its boundary, an explicit body's), else the center's general one. A general
/// `Content-Type: application/json`, a common start-up setting, labelled form bodies as JSON and sent multipart
/// uploads without their boundary, which no server can read.
@Suite struct ContentTypeTests {
    /// The `Content-Type` each request the stub saw was sent with, by path.
    func sentTypes(_ stub: StubEngine) -> [String: String] {
        Dictionary(
            stub.requests.map { ($0.url?.path ?? "", $0.headers["Content-Type"] ?? "none") },
            uniquingKeysWith: { _, last in last })
    }

    @Test func aBodysOwnTypeWinsOverTheCentersGeneralOne() async throws {
        let (center, stub) = stubCenter { $0.headers["Content-Type"] = "application/json" }
        stub.on(nil, "*", reply: .json(["ok": true]))
        _ = try await center.send {
            $0.api = "form"; $0.method = .post; $0.parameters = ["x": 1]
        }
        _ = try await center.send { request in
            request.api = "upload"
            request.kind = .upload
            request.addFormData(name: "f", data: Data("x".utf8), fileName: "x.txt")
        }
        _ = try await center.send {
            $0.api = "png"; $0.method = .put; $0.body = .data(Data([0x89]), contentType: "image/png")
        }
        _ = try await center.send {
            $0.api = "untyped"; $0.method = .put; $0.body = .data(Data("{}".utf8))
        }
        _ = try await center.send { $0.api = "get" }
        let types = sentTypes(stub)
        #expect(types["/v1/form"] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(types["/v1/upload"]?.hasPrefix("multipart/form-data; boundary=") == true, "\(types)")
        #expect(types["/v1/png"] == "image/png")
        // The center's type stays where the center cannot know the body's: an untyped body, or none.
        #expect(types["/v1/untyped"] == "application/json")
        #expect(types["/v1/get"] == "application/json")
    }

    @Test func theRequestsOwnTypeWins() async throws {
        let (center, stub) = stubCenter { $0.headers["Content-Type"] = "text/plain" }
        stub.on(nil, "*", reply: .json(["ok": true]))
        _ = try await center.send { request in
            request.api = "vendor"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["x": 1]
            request.headers["content-type"] = "application/vnd.api+json"
        }
        _ = try await center.send { request in
            request.api = "patch"
            request.method = .patch
            request.body = .json(["x": 1])
            request.headers["Content-Type"] = "application/merge-patch+json"
        }
        let types = sentTypes(stub)
        #expect(types["/v1/vendor"] == "application/vnd.api+json")
        #expect(types["/v1/patch"] == "application/merge-patch+json")
    }

    /// `multipart/form-data` without a boundary (a common hand-written header) gets the form's boundary; another
    /// type cannot describe a form with parts and fails before anything is sent.
    @Test func aFormsOwnTypeMustBeMultipartFormData() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .json(["ok": true]))
        _ = try await center.send { request in
            request.api = "bare"
            request.kind = .upload
            request.addFormData(name: "f", data: Data("x".utf8))
            request.headers["Content-Type"] = "Multipart/Form-Data"
        }
        #expect(sentTypes(stub)["/v1/bare"]?.hasPrefix("multipart/form-data; boundary=") == true)
        let other = await center.sendRecording { request in
            request.api = "related"
            request.kind = .upload
            request.addFormData(name: "f", data: Data("x".utf8))
            request.headers["Content-Type"] = "multipart/related"
        }
        #expect(other.error?.code == .encoding)
        #expect(other.error?.message.contains("\"multipart/related\" cannot describe it") == true)
        #expect(stub.requests.count == 1)
    }

    /// An upload has form parts or a body: with both, which one to send is not for the center to guess, and nothing
    /// is sent. A form without parts and a body is a body with its parameters in the query.
    @Test func anUploadWithFormPartsAndABodyIsRefused() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let both = await center.sendRecording { request in
            request.api = "both"
            request.kind = .upload
            request.addFormData(name: "f", data: Data("x".utf8))
            request.body = .data(Data("raw".utf8), contentType: "text/plain")
        }
        #expect(both.error?.code == .encoding)
        #expect(both.error?.message == "an upload has either form parts or a body, not both")
        #expect(stub.requests.isEmpty)
        _ = try await center.send { request in
            request.api = "body"
            request.kind = .upload
            request.method = .put
            request.parameters = ["x": 1]
            request.body = .data(Data("raw".utf8), contentType: "text/plain")
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.url?.query == "x=1")
        #expect(sent.headers["Content-Type"] == "text/plain")
        guard case .data(let body) = sent.body else {
            Issue.record("the body was sent as \(sent.body)")
            return
        }
        #expect(body == Data("raw".utf8))
    }

    /// Over loopback, on both engines: with the center's `Content-Type: application/json`, the server reads a
    /// multipart upload's fields and file, and a form body's fields.
    @Test(arguments: bothEngines)
    func theServerReadsFormsSentByACenterWithAGeneralJSONType(engineName: String) async throws {
        let center = try loopbackCenter(engineName) { $0.headers["Content-Type"] = "application/json" }
        let upload = try await center.send { request in
            request.api = "post"
            request.kind = .upload
            request.parameters = ["caption": "Sunset"]
            request.addFormData(name: "photo", data: Data("jpeg bytes".utf8), fileName: "p.jpg")
        }
        #expect(upload.json?["form"]?["caption"]?.string == "Sunset", "\(engineName)")
        #expect(upload.json?["files"]?["photo"]?.string == "jpeg bytes", "\(engineName)")
        let form = try await center.send {
            $0.api = "post"; $0.method = .post; $0.parameters = ["name": "Ada"]
        }
        #expect(form.json?["form"]?["name"]?.string == "Ada", "\(engineName)")
        #expect(form.json?["json"] == .null, "\(engineName)")
    }
}
