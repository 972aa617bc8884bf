// Caching pool and Buffer behaviour.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "ringfire/base/buffer.h"
#include "backends/cuda/cuda_info.h"
#include "ringfire/base/errors.h"

namespace ringfire {
namespace {

TEST(MemoryPool, ReusesBlocksOfTheSameCapacity) {
  MemoryPool& pool = host_pool();
  pool.flush();
  const PoolStats before = pool.stats();
  void* first;
  {
    Buffer a(1 << 16);
    first = a.data();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  }
  Buffer b(1 << 16);
  const PoolStats after = pool.stats();
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_GE(after.bytes_in_use, (std::size_t{1} << 16) * 8);
}

// Large requests take the smallest cached block up to half again their size
// (the temporaries of neighbouring levels share blocks), are counted at the
// block's whole capacity, and give all of it back.
TEST(MemoryPool, BestFitServesSmallerRequestsFromLargerBlocks) {
  MemoryPool& pool = host_pool();
  pool.flush();
  constexpr std::size_t kWord = sizeof(std::uint64_t), big = (2u << 20) / kWord;
  void* block;
  {
    Buffer a(big);
    block = a.data();
  }
  const PoolStats cached = pool.stats();
  {
    Buffer smaller(big * 3 / 4);  // 1.5 MiB: the 2 MiB block is at most half again larger
    EXPECT_EQ(smaller.data(), block);
    EXPECT_EQ(pool.stats().bytes_in_use, cached.bytes_in_use + big * kWord);
    EXPECT_EQ(pool.stats().bytes_cached, cached.bytes_cached - big * kWord);
  }
  EXPECT_EQ(pool.stats().bytes_cached, cached.bytes_cached);  // the whole block came back
  {
    Buffer much_smaller(big * 5 / 8);  // 1.25 MiB: 2 MiB would waste more than a third
    EXPECT_NE(much_smaller.data(), block);
  }
  {
    Buffer small_a(100000);  // 800 KB, below 1 MiB: exact capacities only
    void* p = small_a.data();
    small_a = Buffer();
    Buffer small_b(80000);  // 640 KB: a quarter smaller, which a large request would take
    EXPECT_NE(small_b.data(), p);
  }
  pool.flush();
}

TEST(MemoryPool, FlushReturnsCachedBlocks) {
  MemoryPool& pool = host_pool();
  { Buffer a(12345); }
  EXPECT_GT(pool.stats().bytes_cached, 0u);
  pool.flush();
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
}

TEST(MemoryPool, ThreadSafe) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 500; ++i) {
        Buffer b(1000 + (i % 7) * 512);
        b.data()[0] = static_cast<std::uint64_t>(i);
      }
    });
  for (auto& th : threads) th.join();
  SUCCEED();
}

TEST(Buffer, MoveAndCloneAndDevices) {
  Buffer a(8);
  for (int i = 0; i < 8; ++i) a.data()[i] = i;
  Buffer c = a.clone();
  Buffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.data()[i], static_cast<std::uint64_t>(i));
  EXPECT_EQ(b.device().str(), "cpu");
  if (cuda_device_count() == 0) {
    EXPECT_THROW(Buffer(8, Device::parse("cuda:0")), NotSupported);
  }
}

}  // namespace
}  // namespace ringfire
