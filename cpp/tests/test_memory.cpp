// Caching pool and Buffer behaviour.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
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

// A cache limit: blocks released beyond it go back to the system, and lowering it gives
// back cached blocks, the largest first, until the cache fits.
TEST(MemoryPool, CacheLimitBoundsWhatStaysCached) {
  MemoryPool& pool = host_pool();
  pool.flush();
  constexpr std::size_t kMiB = (1u << 20) / sizeof(std::uint64_t);  // words
  {
    Buffer a(2 * kMiB), b(3 * kMiB), c(4 * kMiB);
  }
  EXPECT_EQ(pool.stats().bytes_cached, std::size_t{9} << 20);
  pool.set_cache_limit(std::size_t{6} << 20);  // the 4 MiB block leaves: 5 MiB fit
  EXPECT_EQ(pool.stats().bytes_cached, std::size_t{5} << 20);
  EXPECT_EQ(pool.cache_limit(), std::size_t{6} << 20);
  {
    Buffer d(5 * kMiB);  // a miss; released, it would pass the limit: given back
  }
  EXPECT_EQ(pool.stats().bytes_cached, std::size_t{5} << 20);
  pool.set_cache_limit(std::size_t{8} << 20);
  {
    Buffer e(1 * kMiB);  // a miss; released, 6 MiB cached: within the limit
  }
  EXPECT_EQ(pool.stats().bytes_cached, std::size_t{6} << 20);
  pool.set_cache_limit(0);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  { Buffer f(100); }
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  // Blocks retained by a frame count against the limit when it ends.
  pool.set_cache_limit(std::size_t{1} << 20);
  pool.begin_frame();
  { Buffer g(3 * kMiB); }
  EXPECT_EQ(pool.stats().bytes_retained, std::size_t{3} << 20);
  pool.end_frame();
  EXPECT_EQ(pool.stats().bytes_retained, 0u);
  EXPECT_LE(pool.stats().bytes_cached, std::size_t{1} << 20);
  pool.set_cache_limit(~std::size_t{0});
  pool.flush();
}

// The model planners use (PoolModel) takes and caches blocks as the pool does: the
// same counts and peaks after every step of a sequence that reuses, best-fits and misses.
TEST(PoolModel, HoldsWhatThePoolHolds) {
  MemoryPool& pool = host_pool();
  pool.flush();
  const PoolStats start = pool.stats();
  pool.reset_peaks();
  PoolModel model;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  std::vector<std::pair<void*, std::size_t>> live;  // (block, requested bytes), and the model's capacities
  std::vector<std::size_t> held;
  const auto take = [&](std::size_t bytes) {
    live.emplace_back(pool.allocate(bytes), bytes);
    held.push_back(model.allocate(bytes));
  };
  const auto give = [&](std::size_t i) {
    pool.release(live[i].first, live[i].second);
    model.release(held[i]);
  };
  const auto same = [&](const char* step) {
    const PoolStats s = pool.stats();
    EXPECT_EQ(s.bytes_in_use - start.bytes_in_use, model.in_use()) << step;
    EXPECT_EQ(s.bytes_in_use + s.bytes_cached - start.bytes_in_use, model.held()) << step;
    EXPECT_EQ(s.peak_bytes_in_use - start.bytes_in_use, model.peak_in_use()) << step;
    EXPECT_EQ(s.peak_bytes_held - start.bytes_in_use, model.peak_held()) << step;
  };
  take(4 * kMiB), take(3 * kMiB), take(100);
  same("three blocks");
  give(0), give(2);
  same("two cached");
  take(3 * kMiB + 12345);  // the cached 4 MiB block serves it (within half again)
  same("best fit");
  take(2 * kMiB);  // 3 MiB is live, 4 MiB taken: a miss
  take(100);       // the cached small block
  same("a miss and a small hit");
  for (std::size_t i = 1; i < live.size(); ++i)
    if (i != 2) give(i);
  same("all given back");
  pool.flush();
}

std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0, resident = 0;
  if (f == nullptr || std::fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
  if (f != nullptr) std::fclose(f);
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Blocks of 1 MiB or more leave the process when the pool gives them back, even where
// live small allocations sit between them (the C heap could not shrink past those).
TEST(MemoryPool, GivenBackLargeBlocksLeaveTheProcess) {
  MemoryPool& pool = host_pool();
  pool.flush();
  // glibc raises its mmap threshold to the size of a mapped chunk it frees: from then on,
  // 4 MiB requests to malloc come from its heap.
  void* volatile mapped = std::malloc(std::size_t{8} << 20);  // volatile: the pair is not optimized away
  std::free(mapped);
  constexpr std::size_t kWords = (4u << 20) / sizeof(std::uint64_t), kBlocks = 32;  // 128 MiB
  std::vector<Buffer> large, small;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    large.emplace_back(kWords);
    std::fill(large.back().data(), large.back().data() + kWords, i + 1);  // resident
    small.emplace_back(16);
  }
  const std::size_t with_blocks = resident_bytes();
  large.clear();
  pool.flush();
  const std::size_t after = resident_bytes();
  if (with_blocks == 0) GTEST_SKIP() << "no /proc/self/statm";
  EXPECT_LT(after + (std::size_t{96} << 20), with_blocks) << "resident " << with_blocks << " -> " << after;
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
