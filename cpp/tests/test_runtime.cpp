// The device-runtime pieces that need no GPU: per-queue reuse and compute
// frames in the caching pool, queue and operation-label scopes, device copies
// between host buffers, ComputeFrame on the host.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "ringfire/base/buffer.h"
#include "ringfire/base/device_copy.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/queue.h"
#include "ringfire/ring/compute_frame.h"
#include "backends/cuda/cuda_info.h"

namespace ringfire {
namespace {

// A pool over malloc that reuses blocks per queue, as the CUDA pool does.
class QueuedPool final : public MemoryPool {
 public:
  int frees = 0;

 protected:
  void* raw_allocate(std::size_t bytes) override { return ::operator new(bytes); }
  void raw_free(void* block, std::size_t) override {
    ++frees;
    ::operator delete(block);
  }
  bool reuse_per_queue() const override { return true; }
};

constexpr QueueHandle kQueueA = 0x1000, kQueueB = 0x2000;

TEST(QueuedPool, ReusesABlockOnlyOnTheQueueThatReleasedIt) {
  QueuedPool pool;
  void* block = pool.allocate(4096, kQueueA);
  pool.release(block, 4096, kQueueA);
  void* other = pool.allocate(4096, kQueueB);  // another queue: a fresh block
  EXPECT_NE(other, block);
  void* again = pool.allocate(4096, kQueueA);  // same queue: in order, reused
  EXPECT_EQ(again, block);
  EXPECT_EQ(pool.stats().hits, 1u);
  EXPECT_EQ(pool.stats().misses, 2u);
  pool.release(other, 4096, kQueueB);
  pool.release(again, 4096, kQueueA);
  pool.flush();
  EXPECT_EQ(pool.frees, 2);
}

TEST(QueuedPool, SettleMakesCachedBlocksUsableOnEveryQueue) {
  QueuedPool pool;
  void* block = pool.allocate(4096, kQueueA);
  pool.release(block, 4096, kQueueA);
  pool.settle();  // the device was synchronised
  EXPECT_EQ(pool.allocate(4096, kQueueB), block);
  pool.release(block, 4096, kQueueB);
  pool.flush();
}

TEST(QueuedPool, FramesRetainReleasedBlocksUntilTheOutermostEnds) {
  QueuedPool pool;
  pool.begin_frame();
  pool.begin_frame();
  void* block = pool.allocate(8192, kQueueA);
  pool.release(block, 8192, kQueueA);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.open_frames, 2u);
  EXPECT_EQ(s.bytes_retained, 8192u);
  EXPECT_EQ(s.bytes_cached, 0u);
  void* inside = pool.allocate(8192, kQueueA);
  EXPECT_NE(inside, block);  // retained: not reused inside the frame
  pool.end_frame();
  EXPECT_EQ(pool.stats().bytes_retained, 8192u);  // still one frame open
  pool.end_frame();
  s = pool.stats();
  EXPECT_EQ(s.open_frames, 0u);
  EXPECT_EQ(s.bytes_retained, 0u);
  EXPECT_EQ(s.bytes_cached, 8192u);
  EXPECT_EQ(pool.allocate(8192, kQueueB), block);  // after the frame: usable on any queue
  pool.end_frame();                                 // an unmatched end is ignored
  EXPECT_EQ(pool.stats().open_frames, 0u);
  // Hand everything back: a pool frees only what it caches.
  pool.release(block, 8192, kQueueB);
  pool.release(inside, 8192, kQueueA);
  pool.flush();
  EXPECT_EQ(pool.frees, 2);
}

TEST(HostPool, IgnoresQueues) {
  MemoryPool& pool = host_pool();
  pool.flush();
  void* block = pool.allocate(4096, kQueueA);
  pool.release(block, 4096, kQueueA);
  EXPECT_EQ(pool.allocate(4096, kQueueB), block);  // the host is synchronous
  pool.release(block, 4096, kQueueB);
}

TEST(QueueScope, NestsAndRestores) {
  EXPECT_EQ(current_queue(), 0u);
  {
    const QueueScope outer(kQueueA);
    EXPECT_EQ(current_queue(), kQueueA);
    {
      const QueueScope inner(kQueueB);
      EXPECT_EQ(current_queue(), kQueueB);
    }
    EXPECT_EQ(current_queue(), kQueueA);
    EXPECT_EQ(exchange_current_queue(kQueueB), kQueueA);
    EXPECT_EQ(exchange_current_queue(kQueueA), kQueueB);
  }
  EXPECT_EQ(current_queue(), 0u);
}

TEST(Buffer, ReturnsItsBlockToTheQueueItWasAllocatedOn) {
  QueueHandle seen = 0;
  {
    const QueueScope scope(kQueueA);
    Buffer b(64);
    seen = current_queue();
    b.data()[0] = 1;
  }
  EXPECT_EQ(seen, kQueueA);
  EXPECT_EQ(current_queue(), 0u);
}

TEST(OpLabel, TheOutermostLabelWins) {
  EXPECT_STREQ(current_op_label(), "");
  {
    const OpLabel rotate("ckks.rotate");
    {
      const OpLabel inner("ckks.relinearize");  // a rotation's key switch is charged to the rotation
      EXPECT_STREQ(current_op_label(), "ckks.rotate");
    }
    EXPECT_STREQ(current_op_label(), "ckks.rotate");
  }
  EXPECT_STREQ(current_op_label(), "");
}

TEST(DeviceCopy, HostToHostAndClearErrorsForMissingBackends) {
  Buffer a(16);
  for (int i = 0; i < 16; ++i) a.data()[i] = 3 * i + 1;
  const Buffer b = a.to(Device::cpu());
  EXPECT_NE(b.data(), a.data());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), 16 * sizeof(std::uint64_t)), 0);
  copy_between(nullptr, Device::cpu(), nullptr, Device::cpu(), 0);  // nothing to copy: no access
  if (cuda_device_count() == 0) {  // no GPU (or no CUDA backend): a clear error, no crash
    EXPECT_THROW((void)a.to(Device::parse("cuda")), NotSupported);
  }
}

TEST(ComputeFrame, OnTheHostRetainsUntilItEnds) {
  MemoryPool& pool = host_pool();
  pool.flush();
  {
    const ComputeFrame frame(Device::cpu());
    { Buffer temporary(4096); }
    EXPECT_EQ(pool.stats().bytes_retained, 4096u * 8);
  }
  EXPECT_EQ(pool.stats().bytes_retained, 0u);
  EXPECT_GE(pool.stats().bytes_cached, 4096u * 8);
}

}  // namespace
}  // namespace ringfire
