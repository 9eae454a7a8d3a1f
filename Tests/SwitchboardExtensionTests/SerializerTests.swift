import Foundation
import Switchboard
import SwitchboardTestSupport
import Testing

// Serializers an app adds from outside the module, with nothing but the public API: an image-like decoder chosen by
// media type, a hand-built model decoder (from a request and from typed endpoints), and a request body encoder.

/// An image's format and size, read from its header as an image decoder would.
struct Picture: Sendable, Hashable {
    var format: String
    var width: Int
    var height: Int

    /// A PNG's size, from its `IHDR` chunk.
    static func png(_ data: Data) throws -> Picture {
        let bytes = [UInt8](data)
        guard bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw PictureError.notAnImage("png")
        }
        func word(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return Picture(format: "png", width: word(16), height: word(20))
    }

    /// A GIF's size, from its logical screen descriptor.
    static func gif(_ data: Data) throws -> Picture {
        let bytes = [UInt8](data)
        guard bytes.count >= 10, bytes.starts(with: Array("GIF89a".utf8)) else { throw PictureError.notAnImage("gif") }
        return Picture(
            format: "gif", width: Int(bytes[6]) | Int(bytes[7]) << 8, height: Int(bytes[8]) | Int(bytes[9]) << 8)
    }
}

enum PictureError: Error { case notAnImage(String) }

/// A model built by hand from JSON, not `Decodable` (SporeNetworking's `buildModel`).
final class UserModel: Sendable {
    let name: String
    let tags: [String]

    init(_ json: JSON) throws {
        guard let name = json["name"]?.string else { throw ModelError.missing("name") }
        self.name = name
        tags = json["tags"]?.array?.compactMap(\.string) ?? []
    }
}

enum ModelError: Error { case missing(String) }

extension ResponseSerializer {
    static let png = ResponseSerializer("png", accept: "image/png") { .custom(try Picture.png($0.data)) }
    static let gif = ResponseSerializer("gif", accept: "image/gif") { .custom(try Picture.gif($0.data)) }
    static let images = ResponseSerializer.byMediaType(["image/png": .png, "image/*": .gif, "application/json": .json])
    static let userModel = ResponseSerializer("userModel", accept: "application/json") { response in
        .custom(try UserModel(JSON(data: response.data)))
    }
}

extension RequestSerializer {
    /// `key: value` lines, sorted by key.
    static let lines = RequestSerializer("lines", contentType: "text/x-lines; charset=utf-8") { parameters in
        let lines = parameters.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return Data(lines.joined(separator: "\n").utf8)
    }
}

/// A typed endpoint whose model comes from a serializer.
struct GetUserModel: Endpoint {
    typealias Response = UserModel
    var path: String { "user" }
    func configure(_ request: inout Request) { request.responseSerializer = .userModel }
}

/// A typed endpoint that builds its model in its own `decode(_:)`.
struct GetUserBuilt: Endpoint {
    typealias Response = UserModel
    var path: String { "user" }
    func decode(_ response: Switchboard.Response) throws -> UserModel {
        guard let json = response.json else { throw ModelError.missing("body") }
        return try UserModel(json)
    }
}

/// A typed endpoint whose picture comes from the center's default serializer.
struct GetPicture: Endpoint {
    typealias Response = Picture
    var path: String
}

/// A 3 x 2 PNG header: the signature and an `IHDR` chunk, enough for `Picture.png`.
let pngHeader = Data(
    [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 0, 3, 0, 0, 0, 2]
        + [8, 6, 0, 0, 0])
/// A 5 x 4 GIF header.
let gifHeader = Data(Array("GIF89a".utf8) + [5, 0, 4, 0, 0, 0, 0])

/// Answers `/avatar.png`, `/avatar.gif`, `/broken.png`, `/user`, `/nameless`, and echoes anything else: the body,
/// its type, and the request's `Accept`, in header fields.
func serializerServer() throws -> LoopbackServer {
    try LoopbackServer { request in
        func answer(_ type: String, _ body: Data) -> ServerResponse {
            ServerResponse(
                headers: [("Content-Type", type), ("X-Accept", request.header("Accept") ?? "none")], body: body)
        }
        switch request.path {
        case "/avatar.png": return answer("image/png", pngHeader)
        case "/avatar.gif": return answer("IMAGE/GIF", gifHeader)
        case "/broken.png": return answer("image/png", Data("not a png".utf8))
        case "/user": return answer("application/json", Data(#"{"name":"Ada","tags":["x","y"]}"#.utf8))
        case "/nameless": return answer("application/json", Data(#"{"tags":[]}"#.utf8))
        default:
            return ServerResponse(
                headers: [("Content-Type", "text/plain"), ("X-Body-Type", request.header("Content-Type") ?? "none")],
                body: request.body)
        }
    }
}

let engines = ["URLSessionEngine", "CurlEngine"]

func center(
    _ engineName: String, _ server: LoopbackServer, _ configure: (inout Center.Configuration) -> Void = { _ in }
)
    throws -> Center
{
    let engine: any Engine = engineName == "CurlEngine" ? try CurlEngine() : URLSessionEngine()
    return Center {
        $0.engine = engine
        $0.server = server.baseURL + "/"
        configure(&$0)
    }
}

@Suite struct SerializerTests {
    @Test(arguments: engines)
    func centerDefaultChoosesByMediaType(engineName: String) async throws {
        let server = try serializerServer()
        defer { server.stop() }
        let center = try center(engineName, server) { $0.responseSerializer = .images }

        let png = try await center.send { $0.api = "avatar.png" }
        #expect(png.value(as: Picture.self) == Picture(format: "png", width: 3, height: 2))
        #expect(png.value == .custom(Picture(format: "png", width: 3, height: 2)))
        #expect(png.headers["X-Accept"] == "application/json, image/*, image/png, */*;q=0.8")
        // An upper-case type reaches its family's serializer.
        let gif = try await center.send { $0.api = "avatar.gif" }
        #expect(gif.value(as: Picture.self) == Picture(format: "gif", width: 5, height: 4))
        let json = try await center.send { $0.api = "user" }
        #expect(json.value(as: JSON.self)?["name"]?.string == "Ada")
        // The typed endpoint takes the picture the center's serializer made.
        #expect(try await center.send(GetPicture(path: "avatar.png")).width == 3)
        // Text is none of the table's types: the bytes as they came.
        let text = try await center.send {
            $0.api = "echo"; $0.method = .post; $0.body = .string("hi")
        }
        #expect(text.value == .data(Data("hi".utf8)))
        // A request's own serializer wins over the center's.
        let raw = try await center.send {
            $0.api = "avatar.png"; $0.responseSerializer = .raw
        }
        #expect(raw.value == .data(pngHeader))
    }

    @Test(arguments: engines)
    func serializerErrorsAreDecodingErrors(engineName: String) async throws {
        let server = try serializerServer()
        defer { server.stop() }
        let center = try center(engineName, server) { $0.responseSerializer = .images }
        do {
            _ = try await center.send { $0.api = "broken.png" }
            Issue.record("a broken image decoded")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.message.contains("png serializer failed"), "\(error.message)")
            #expect(error.message.contains("image/png, 9 bytes"), "\(error.message)")
            #expect(error.response?.data == Data("not a png".utf8))
            #expect(error.underlying is PictureError)
        }
        // A typed endpoint whose serializer made another type fails the same way, naming what was missing.
        do {
            _ = try await center.send(GetPicture(path: "user"))
            Issue.record("JSON made a picture")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.message.contains("made no Picture"), "\(error.message)")
        }
    }

    @Test(arguments: engines)
    func handBuiltModelFromRequestAndEndpoints(engineName: String) async throws {
        let server = try serializerServer()
        defer { server.stop() }
        let center = try center(engineName, server)

        let response = try await center.send {
            $0.api = "user"; $0.responseSerializer = .userModel
        }
        let model = try #require(response.value(as: UserModel.self))
        #expect(model.name == "Ada" && model.tags == ["x", "y"])
        #expect(response.headers["X-Accept"] == "application/json")

        #expect(try await center.send(GetUserModel()).tags == ["x", "y"])
        #expect(try await center.send(GetUserBuilt()).name == "Ada")
        let delivered = await withCheckedContinuation { continuation in
            center.send(GetUserModel(), onFinished: { continuation.resume(returning: $0) })
        }
        #expect((try? delivered.get())?.name == "Ada")

        // A model that cannot be built fails with `.decoding`, from the serializer and from `decode(_:)`.
        let fromSerializer = await Result { () async throws(HTTPError) in
            try await center.send {
                $0.api = "nameless"; $0.responseSerializer = .userModel
            }.value
        }
        let fromEndpoint = await Result { () async throws(HTTPError) in
            try await center.send(GetUserBuiltFrom(path: "nameless"))
        }
        for error in [fromSerializer.error, fromEndpoint.error] {
            #expect(error?.code == .decoding)
            #expect(error?.underlying is ModelError, "\(String(describing: error))")
        }
    }

    @Test(arguments: engines)
    func requestSerializerMakesTheBody(engineName: String) async throws {
        let server = try serializerServer()
        defer { server.stop() }
        let center = try center(engineName, server) {
            $0.requestSerializer = .lines
            $0.responseSerializer = .raw
            $0.parameters = ["app": "demo"]
        }
        let response = try await center.send {
            $0.api = "echo"
            $0.method = .post
            $0.parameters = ["b": 2, "a": "one"]
        }
        #expect(response.data == Data("a: one\napp: demo\nb: 2".utf8))
        #expect(response.headers["X-Body-Type"] == "text/x-lines; charset=utf-8")

        let failing = RequestSerializer("refusing", contentType: "text/plain") { _ in throw ModelError.missing("all") }
        do {
            _ = try await center.send {
                $0.api = "echo"; $0.method = .post; $0.requestSerializer = failing
            }
            Issue.record("a failing serializer sent a request")
        } catch {
            #expect(error.code == .encoding)
            #expect(error.message.contains("refusing serializer failed"), "\(error.message)")
        }
    }
}

/// `GetUserBuilt` at another path.
struct GetUserBuiltFrom: Endpoint {
    typealias Response = UserModel
    var path: String
    func decode(_ response: Switchboard.Response) throws -> UserModel {
        guard let json = response.json else { throw ModelError.missing("body") }
        return try UserModel(json)
    }
}

extension Result {
    /// The outcome of an async throwing call.
    init(_ body: () async throws(Failure) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }

    var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
