import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// `EngineRequest` keeps its method, URL, headers and idle timeout as Switchboard values; `urlRequest` presents and
/// takes them as a Foundation `URLRequest`.
@Suite struct EngineRequestTests {
    private let url = URL(string: "https://api.example.com/v1/items?page=2")!

    @Test func aURLRequestIsReadIntoTheFields() {
        var source = URLRequest(url: url)
        source.httpMethod = "PATCH"
        source.setValue("application/json", forHTTPHeaderField: "Content-Type")
        source.setValue("abc", forHTTPHeaderField: "X-Trace")
        source.timeoutInterval = 2.5
        let request = EngineRequest(urlRequest: source, totalTimeout: .seconds(9))
        #expect(request.method == .patch)
        #expect(request.url == url)
        #expect(request.headers == ["Content-Type": "application/json", "X-Trace": "abc"])
        #expect(request.timeout == .milliseconds(2_500))
        #expect(request.totalTimeout == .seconds(9))
    }

    @Test func theURLRequestShowsTheFieldsAsChanged() {
        var request = EngineRequest(method: .post, url: url, headers: ["Accept": "application/json"])
        request.headers["Authorization"] = "Bearer t"
        request.headers["Accept"] = nil
        request.method = .put
        request.timeout = .seconds(3)
        let made = request.urlRequest
        #expect(made.httpMethod == "PUT")
        #expect(made.url == url)
        #expect(made.allHTTPHeaderFields == ["Authorization": "Bearer t"])
        #expect(made.timeoutInterval == 3)
        #expect(made.httpBody == nil, "the body stays in `body`")
    }

    @Test func settingTheURLRequestKeepsItsOtherSettings() {
        var request = EngineRequest(url: url)
        var changed = request.urlRequest
        changed.cachePolicy = .reloadIgnoringLocalCacheData
        changed.httpShouldHandleCookies = false
        changed.setValue("1", forHTTPHeaderField: "X-Plugin")
        request.urlRequest = changed
        #expect(request.headers["x-plugin"] == "1")
        request.headers["X-Later"] = "2"
        let made = request.urlRequest
        #expect(made.cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(made.httpShouldHandleCookies == false)
        #expect(made.value(forHTTPHeaderField: "X-Plugin") == "1")
        #expect(made.value(forHTTPHeaderField: "X-Later") == "2")
    }

    @Test func aRequestIsEncodedWithoutAURLRequest() throws {
        let request = Request {
            $0.url = "https://api.example.com/items"
            $0.method = .delete
            $0.parameters = ["id": 7]
            $0.headers["X-Client"] = "tests"
            $0.timeout = .seconds(4)
        }
        let encoded = try RequestEncoding.encode(request)
        #expect(encoded.method == .delete)
        #expect(encoded.url?.absoluteString == "https://api.example.com/items?id=7")
        #expect(encoded.headers["X-Client"] == "tests")
        #expect(encoded.headers["User-Agent"] == EngineRequest.defaultUserAgent)
        #expect(encoded.timeout == .seconds(4))
    }
}
