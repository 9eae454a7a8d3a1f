import Foundation
import Testing
@testable import Switchboard

/// Numbers pass through unchanged: in `JSON` values, and through an envelope to `decode`.
@Suite struct JSONNumberTests {
    static let literals = [
        "9007199254740993", "-9223372036854775808", "18446744073709551615", "1e400", "0.1", "-0.0", "19.99",
        "123456789012345678901234567890", "6.02214076e23",
        // Integers read from their digits (up to 18) and from their text (more), on each side of the line; `-0`.
        "0", "-0", "-7", "999999999999999999", "-999999999999999999", "1000000000000000000", "-1000000000000000000",
        "9223372036854775807", "9223372036854775808", "18446744073709551616",
    ]

    struct Value<T: Decodable & Sendable>: Decodable, Sendable {
        let v: T
    }

    /// What Foundation's decoder makes of `{"v": literal}` as `T`, and what it makes of the same member after
    /// Switchboard unwrapped it from an envelope: the same value, or a failure on both sides.
    func differential<T: Decodable & Sendable>(_ type: T.Type, _ literal: String, same: (T, T) -> Bool) async throws {
        let direct = Result { try JSONDecoder().decode(Value<T>.self, from: Data("{\"v\":\(literal)}".utf8)).v }
        let unwrapped = try await throughEnvelope(T.self, literal)
        switch (direct, unwrapped) {
        case (.success(let a), .success(let b)):
            #expect(same(a, b), "\(T.self) from \(literal): \(a) directly, \(b) through the envelope")
        case (.failure, .failure):
            break
        default:
            Issue.record("\(T.self) from \(literal): \(direct) directly, \(unwrapped) through the envelope")
        }
    }

    /// `{"v": literal}` decoded as `T` after Switchboard unwrapped it from an envelope.
    func throughEnvelope<T: Decodable & Sendable>(_ type: T.Type, _ literal: String) async throws -> Result<
        T, any Error
    > {
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .data(
                Data("{\"code\":0,\"data\":{\"v\":\(literal)}}".utf8),
                headers: ["Content-Type": "application/json"]))
        let (center, _) = stubCenter(stub) { config in
            config.onResponse = { _, response in try response.unwrapping(code: "code", ok: 0, data: "data") }
        }
        let response = try await center.send { $0.api = "n" }
        return Result { try response.decode(Value<T>.self).v }
    }

    @Test(arguments: literals)
    func anEnvelopeHandsDecodeTheNumberAsTheServerSentIt(literal: String) async throws {
        try await differential(Int64.self, literal, same: ==)
        try await differential(UInt64.self, literal, same: ==)
        try await differential(Double.self, literal) { $0.bitPattern == $1.bitPattern }
        try await differential(Decimal.self, literal, same: ==)
        // `JSON` comes back as the server wrote it, where `JSONDecoder` would make a `Double` of a number past 64
        // bits (or fail on one past `Double`'s range).
        #expect(try await throughEnvelope(JSON.self, literal).get() == JSON(data: Data(literal.utf8)))
    }

    @Test(arguments: literals)
    func aJSONValueKeepsEveryNumberExactly(literal: String) throws {
        let json = try JSON(data: Data("[\(literal)]".utf8))
        let number = try #require(json[0]?.number)
        #expect(json.description == "[\(literal)]")  // printed as it came, in full
        #expect(try JSON(data: Data(json.description.utf8)) == json)
        // An integral value is an integer whatever its spelling: `-0.0` is 0.
        #expect(number.int64 == Int64(literal) ?? (literal == "-0.0" ? 0 : nil))
        #expect(number.uint64 == UInt64(literal) ?? (literal == "-0.0" ? 0 : nil))
        #expect(number.double.bitPattern == Double(literal)!.bitPattern)
    }

    @Test func integersAcrossBothRangesAreExact() throws {
        let json = try JSON(
            data: Data(#"{"a":9007199254740993,"b":-9223372036854775808,"c":18446744073709551615}"#.utf8))
        #expect(json["a"]?.int64 == 9_007_199_254_740_993)
        #expect(json["a"]?.int == 9_007_199_254_740_993)
        #expect(json["b"]?.int64 == .min)
        #expect(json["c"]?.uint64 == .max)
        #expect(json["c"]?.int64 == nil)
        #expect(json["a"] != JSON.number(9_007_199_254_740_992))  // the same Double, not the same number
        #expect(JSON.number(1) == (try JSON(data: Data("1.0".utf8))))
        #expect(Set([JSON.number(1), try JSON(data: Data("1e0".utf8))]).count == 1)
        #expect(try JSON(data: Data("19.99".utf8)).decimal == Decimal(string: "19.99"))
        // Beyond 38 significant digits a Decimal would be rounded: none is given, and equality is not fooled.
        let long = try JSON(data: Data("1234567890123456789012345678901234567891".utf8))  // 40 digits
        let rounded = try JSON(data: Data("1234567890123456789012345678901234567900".utf8))  // 38, then zeros
        #expect(long.decimal == nil)
        #expect(rounded.decimal != nil)
        #expect(try JSON(data: Data("1e45".utf8)).decimal != nil)  // trailing zeros are not significant
        #expect(long != rounded)
        #expect(try JSON(data: Data("1.50e2".utf8)) == JSON.number(150))
        #expect(try JSON(data: Data("0.000150E6".utf8)) == JSON.number(150))
        #expect(try JSON(data: Data("-0.0".utf8)) == JSON.number(0))
        #expect(try JSON(data: Data("1e400".utf8)) != (try JSON(data: Data("2e400".utf8))))
        #expect(try JSON(data: Data("1e400".utf8)) == (try JSON(data: Data("10e399".utf8))))
    }

    /// The body of a `POST` with these parameters, as `serializer` encodes it; `nil` when it has none in memory.
    func postBody(_ parameters: [String: any Sendable], _ serializer: RequestSerializer = .json) throws(HTTPError)
        -> Data?
    {
        var request = Request()
        request.url = "https://api.example.com/items"
        request.method = .post
        request.requestSerializer = serializer
        request.parameters = parameters
        guard case .data(let body) = try RequestEncoding.encode(request).body else { return nil }
        return body
    }

    @Test func parametersFromJSONKeepTheirNumbers() throws {
        let filter = try JSON(data: Data(#"{"id":9007199254740993,"max":18446744073709551615,"ratio":0.1}"#.utf8))
        let body = try #require(try postBody(["filter": filter]))
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"filter":{"id":9007199254740993,"max":18446744073709551615,"ratio":0.1}}"#)
    }

    /// A `Decimal` parameter (money) is sent with every digit it has, in a JSON body, a form body and a query: it
    /// went through `Double`, and `19.99` was sent as `19.990000000000002`, `12345678901234567.891` as
    /// `12345678901234568`.
    @Test(arguments: ["12345678901234567.891", "19.99", "-0.000000000000000000001", "99999999999999999999999999999"])
    func decimalParametersKeepEveryDigit(literal: String) throws {
        let amount = try #require(Decimal(string: literal))
        for serializer in [RequestSerializer.json, .form] {
            let body = try #require(try postBody(["amount": amount], serializer))
            let text = String(decoding: body, as: UTF8.self)
            #expect(text == (serializer == .json ? #"{"amount":\#(amount)}"# : "amount=\(amount)"))
            if serializer == .json { #expect(try JSON(data: body)["amount"]?.decimal == amount) }
        }
        var query = Request()
        query.url = "https://api.example.com/quote"
        query.parameters = ["amount": amount]
        #expect(try RequestEncoding.encode(query).urlText == "https://api.example.com/quote?amount=\(amount)")
        #expect(amount.description == literal)
    }

    /// A `Decimal` that is not a number fails a JSON body, as a `Double` NaN does.
    @Test func aDecimalNaNFailsAJSONBody() {
        #expect(throws: HTTPError.self) { try postBody(["amount": Decimal.nan]) }
    }

    /// Numbers from Foundation (JSONSerialization's, `NSNumber`, `NSDecimalNumber`) are sent as what they hold: on
    /// Linux an `NSNumber` holding 1 cast to `Bool` first, and was sent as `true`; a decimal went through `Double`.
    @Test func foundationNumbersAreSentAsTheyAre() throws {
        let parsed = try JSONSerialization.jsonObject(
            with: Data(
                #"{"one":1,"zero":0,"yes":true,"price":19.99,"id":9007199254740993,"huge":123456789012345678901234567890}"#
                    .utf8))
        let parameters: [String: any Sendable] = [
            "parsed": try #require(parsed as? [String: any Sendable]), "number": NSNumber(value: 1),
            "decimal": NSDecimalNumber(string: "12345678901234567.891"), "flag": NSNumber(value: false),
        ]
        let body = try #require(try postBody(parameters))
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"decimal":12345678901234567.891,"flag":false,"number":1,"parsed":{"huge":123456789012345678901234567890,"id":9007199254740993,"one":1,"price":19.99,"yes":true,"zero":0}}"#
        )
        let form = try #require(try postBody(parameters, .form))
        #expect(String(decoding: form, as: UTF8.self).contains("number=1&"))
    }

    /// A `Float` is sent as its own shortest text (it was widened to `Double` first: 0.1 went as 0.10000000149011612),
    /// -0.0 keeps its sign, a `CGFloat` is a number and `NSNull` is JSON's null (JSONSerialization gives it).
    @Test func floatsSignedZerosAndNullsAreSentAsGiven() throws {
        let body = try #require(
            try postBody([
                "float": Float(0.1), "big": Float(3.4028235e38), "zero": -0.0, "cg": CGFloat(0.25), "none": NSNull(),
            ]))
        let text = String(decoding: body, as: UTF8.self)
        #expect(text == #"{"big":3.4028235e+38,"cg":0.25,"float":0.1,"none":null,"zero":-0.0}"#)
        let json = try JSON(data: body)
        #expect(json["float"]?.number?.double == 0.1)
        #expect(json["zero"]?.number?.double.sign == .minus)
    }
}
