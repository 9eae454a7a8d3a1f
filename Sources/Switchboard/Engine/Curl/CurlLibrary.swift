import CCurlShim
import Foundation

/// The system libcurl, loaded once, with its option numbers checked against the library itself.
struct CurlLibrary: Sendable {
    /// libcurl's numbers for the options this engine sets: part of its stable ABI, and checked at load anyway.
    enum Option: Int32, CaseIterable {
        case writeData = 10001
        case url = 10002
        case readData = 10009
        case errorBuffer = 10010
        case writeFunction = 20011
        case readFunction = 20012
        case httpHeader = 10023
        case headerData = 10029
        case customRequest = 10036
        case noProgress = 43
        case noBody = 44
        case upload = 46
        case followLocation = 52
        case xferInfoData = 10057
        case caInfo = 10065
        case headerFunction = 20079
        case httpGet = 80
        case noSignal = 99
        case acceptEncoding = 10102
        case inFileSizeLarge = 30115
        case postFieldSizeLarge = 30120
        case timeoutMilliseconds = 155
        case copyPostFields = 10165
        case xferInfoFunction = 20219
        case pinnedPublicKey = 10230
        case pipeWait = 237
        case seekFunction = 20167
        case seekData = 10168
        case maxSendSpeedLarge = 30145
        case protocols = 181
        case bufferSize = 98
        case userAgent = 10018
        case freshConnect = 74
        case caPath = 10097
        case sslVerifyPeer = 64
        case sslVerifyHost = 81
        case sslCert = 10025
        case sslCertType = 10086
        case sslKey = 10087
        case keyPassword = 10026
        case certInfo = 172
        case forbidReuse = 75
        case sslSessionIDCache = 150
        case prereqFunction = 20312
        case prereqData = 10313

        var name: String {
            switch self {
            case .writeData: "WRITEDATA"
            case .url: "URL"
            case .readData: "READDATA"
            case .errorBuffer: "ERRORBUFFER"
            case .writeFunction: "WRITEFUNCTION"
            case .readFunction: "READFUNCTION"
            case .httpHeader: "HTTPHEADER"
            case .headerData: "HEADERDATA"
            case .customRequest: "CUSTOMREQUEST"
            case .noProgress: "NOPROGRESS"
            case .noBody: "NOBODY"
            case .upload: "UPLOAD"
            case .followLocation: "FOLLOWLOCATION"
            case .xferInfoData: "XFERINFODATA"
            case .caInfo: "CAINFO"
            case .headerFunction: "HEADERFUNCTION"
            case .httpGet: "HTTPGET"
            case .noSignal: "NOSIGNAL"
            case .acceptEncoding: "ACCEPT_ENCODING"
            case .inFileSizeLarge: "INFILESIZE_LARGE"
            case .postFieldSizeLarge: "POSTFIELDSIZE_LARGE"
            case .timeoutMilliseconds: "TIMEOUT_MS"
            case .copyPostFields: "COPYPOSTFIELDS"
            case .xferInfoFunction: "XFERINFOFUNCTION"
            case .pinnedPublicKey: "PINNEDPUBLICKEY"
            case .protocols: "PROTOCOLS"
            case .pipeWait: "PIPEWAIT"
            case .seekFunction: "SEEKFUNCTION"
            case .seekData: "SEEKDATA"
            case .maxSendSpeedLarge: "MAX_SEND_SPEED_LARGE"
            case .bufferSize: "BUFFERSIZE"
            case .userAgent: "USERAGENT"
            case .freshConnect: "FRESH_CONNECT"
            case .caPath: "CAPATH"
            case .sslVerifyPeer: "SSL_VERIFYPEER"
            case .sslVerifyHost: "SSL_VERIFYHOST"
            case .sslCert: "SSLCERT"
            case .sslCertType: "SSLCERTTYPE"
            case .sslKey: "SSLKEY"
            case .keyPassword: "KEYPASSWD"
            case .certInfo: "CERTINFO"
            case .forbidReuse: "FORBID_REUSE"
            case .sslSessionIDCache: "SSL_SESSIONID_CACHE"
            case .prereqFunction: "PREREQFUNCTION"
            case .prereqData: "PREREQDATA"
            }
        }
    }

    /// libcurl's numbers for the multi-handle options this engine sets (CURLMOPT_*), part of its stable ABI.
    enum MultiOption: Int32 {
        /// CURLMOPT_MAXCONNECTS: how many idle connections the connection cache keeps.
        case maxConnects = 6
    }

    static let responseCode: Int32 = 0x200002

    private static func defaultRoots() -> String? {
        var found: String?
        if let easy = sb_easy_init() {
            var path: UnsafePointer<CChar>?
            if sb_easy_getinfo_string(easy, 0x10_0000 + 62, &path) == 0, let path {  // CURLINFO_CAPATH
                found = String(cString: path)
            }
            sb_easy_cleanup(easy)
        }
        var isDirectory: ObjCBool = false
        for candidate in [found, "/etc/ssl/certs"].compactMap({ $0 })
        where FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && isDirectory.boolValue {
            return candidate
        }
        return nil
    }
    /// CURLPROTO_HTTP | CURLPROTO_HTTPS, for CURLOPT_PROTOCOLS.
    static let httpProtocols = 1 | 2

    let version: String
    /// The directory of certificate authorities libcurl reads unless told otherwise (CURLINFO_CAPATH, 7.84+), else
    /// `/etc/ssl/certs` where it exists; `nil` when neither.
    let systemRoots: String?

    /// The library, or why it cannot be used here.
    static let shared: Result<CurlLibrary, HTTPError> = {
        var error = [CChar](repeating: 0, count: 512)
        guard sb_curl_load(&error, error.count) == 0 else {
            let text = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(HTTPError(.unsupported, "CurlEngine: " + text))
        }
        let version = String(cString: sb_curl_version())
        guard sb_curl_version_number() >= 0x07_4400 else {
            return .failure(HTTPError(.unsupported, "CurlEngine needs libcurl 7.68 or newer; this is \(version)"))
        }
        for option in Option.allCases {
            let id = sb_curl_option_id(option.name)
            if id != -1 && id != option.rawValue {
                return .failure(
                    HTTPError(
                        .unsupported,
                        "CurlEngine: libcurl \(version) numbers CURLOPT_\(option.name) \(id), not \(option.rawValue)"))
            }
        }
        return .success(CurlLibrary(version: version, systemRoots: defaultRoots()))
    }()
}
