import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

@Suite struct BodyBufferPoolTests {
    @Test func aReleasedBodyGivesItsBlockBackForReuse() {
        let pool = BodyBufferPool(retainedLimit: 8 << 20)
        let block = try! #require(pool.take(length: 1 << 20))
        #expect(block.capacity == 1 << 20)
        let bytes = GeneratedContent(seed: 2).bytes(offset: 0, count: 1 << 20)
        bytes.withUnsafeBytes { block.pointer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        var data: Data? = pool.data(block, count: bytes.count)
        var copy = data
        #expect(copy == bytes)
        data = nil
        #expect(pool.retainedBytes == 0, "a copy still holds the block")
        copy!.append(1)  // a mutation copies; the block goes back when the last shared copy does
        copy = nil
        #expect(pool.retainedBytes == 1 << 20)
        let again = try! #require(pool.take(length: 700_000))
        #expect(again.pointer == block.pointer)
        #expect(pool.retainedBytes == 0)
        pool.give(again)
    }

    @Test func lengthsOutsideTheRangeAndBlocksOverTheLimitAreNotKept() {
        let pool = BodyBufferPool(retainedLimit: 3 << 20)
        #expect(pool.take(length: 1000) == nil)
        #expect(pool.take(length: Int64(BodyBufferPool.largest) + 1) == nil)
        let blocks = (0..<4).compactMap { _ in pool.take(length: 1 << 20) }
        #expect(blocks.count == 4)
        blocks.forEach(pool.give)
        #expect(pool.retainedBytes == 3 << 20)
        #expect(BodyBufferPool.sizeClass(for: (1 << 20) + 1) == 2 << 20)
    }

    @Test(arguments: [nil, 300_000, 200_000, 100_000] as [Int64?])
    func theAccumulatorKeepsEveryByteWhateverWasAnnounced(announced: Int64?) {
        let bytes = GeneratedContent(seed: 8).bytes(offset: 0, count: 200_000)
        var body = BodyAccumulator()
        body.reset(expectedLength: announced)
        var offset = 0
        while offset < bytes.count {
            let size = min(16_384, bytes.count - offset)
            body.append(bytes.subdata(in: offset..<offset + size))
            offset += size
        }
        #expect(body.take() == bytes)
        #expect(body.take().isEmpty)
    }
}
