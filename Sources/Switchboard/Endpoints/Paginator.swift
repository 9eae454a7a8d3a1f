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
    /// Items the responses listed so far.
    private var itemsSeen = 0

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

    /// Reads a page's response: the total when given, and the items when listed; then moves to the next page.
    ///
    /// When responses list their items, the walk counts them: it ends at the total (a server that sends fewer items
    /// than `pageSize` asks, as many cap the page size, still gives every item), at a page without items (the total
    /// was stale, or items went away while paging), or, without a total, at a page shorter than `pageSize`. When
    /// they do not, it ends once `pageSize` items a page reach the total, or after this page when there is no total.
    public mutating func advance(after response: Response) {
        let json = response.json
        if let totalPath, let total = json?[path: totalPath]?.int { self.total = total }
        let listed = itemsPath.flatMap { json?[path: $0]?.array?.count }
        if let listed {
            itemsSeen += listed
            if listed == 0 {
                hasMore = false
            } else if let total {
                hasMore = itemsSeen < total
            } else {
                hasMore = listed >= pageSize
            }
        } else if let total, pageSize > 0 {
            // Overflow-checked: a huge page size (a caller's "everything") stops the walk rather than the process.
            let (asked, overflow) = (page - firstPage + 1).multipliedReportingOverflow(by: pageSize)
            hasMore = !overflow && asked < total
        } else {
            // Nothing to count with: another request could only repeat this one's answer.
            hasMore = false
        }
        // There is no page after the last number there is (a caller's first page of `Int.max` trapped here).
        if page == .max { hasMore = false } else { page += 1 }
    }

    /// Back to the first page.
    public mutating func reset() {
        page = firstPage
        total = nil
        itemsSeen = 0
        hasMore = true
    }
}
