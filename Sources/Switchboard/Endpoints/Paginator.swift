/// Walks a paged list: adds the page and its size to each request, and reads the total from each response.
///
/// ```swift
/// var pages = Paginator(pageSize: 20)                 // `page` and `per_page`; the total at "total"
/// var items: [JSON] = []
/// while pages.hasMore {
///     let response = try await center.send { request in
///         request.api = "items"
///         pages.apply(to: &request)
///     }
///     items += response.json?["items"]?.array ?? []
///     pages.advance(after: response)
/// }
/// ```
public struct Paginator: Sendable, Hashable {
    /// The page the next request asks for.
    public private(set) var page: Int
    /// Items per page.
    public var pageSize: Int
    /// The parameter for the page number.
    public var pageKey: String
    /// The parameter for the page size.
    public var sizeKey: String
    /// Where responses give the total number of items (a dotted key path), if they do.
    public var totalPath: String?
    /// Where responses list their items, to tell the last page by a short one when there is no total.
    public var itemsPath: String?
    /// The total number of items, once a response gave it.
    public private(set) var total: Int?
    /// Whether there is another page to ask for.
    public private(set) var hasMore = true
    private let firstPage: Int

    /// Creates a paginator at its first page.
    public init(
        firstPage: Int = 1, pageSize: Int = 20, pageKey: String = "page", sizeKey: String = "per_page",
        totalPath: String? = "total", itemsPath: String? = "items"
    ) {
        self.firstPage = firstPage
        page = firstPage
        self.pageSize = pageSize
        self.pageKey = pageKey
        self.sizeKey = sizeKey
        self.totalPath = totalPath
        self.itemsPath = itemsPath
    }

    /// Adds the page and its size to a request's parameters.
    public func apply(to request: inout Request) {
        request.parameters[pageKey] = page
        request.parameters[sizeKey] = pageSize
    }

    /// Reads a page's response: the total when given, else whether the page was full; then moves to the next page.
    public mutating func advance(after response: Response) {
        let json = response.json
        if let totalPath, let total = json?[path: totalPath]?.int { self.total = total }
        let pagesSeen = page - firstPage + 1
        if let total {
            hasMore = pagesSeen * pageSize < total
        } else if let itemsPath, let count = json?[path: itemsPath]?.array?.count {
            hasMore = count >= pageSize
        } else {
            hasMore = false
        }
        page += 1
    }

    /// Back to the first page.
    public mutating func reset() {
        page = firstPage
        total = nil
        hasMore = true
    }
}
