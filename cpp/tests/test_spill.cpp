// Spilling host memory to files: blocks keep their bytes, come back for reuse,
// free their disk pages, and the host pool spills only beyond its RAM limit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ringfire/base/buffer.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/spill.h"

namespace ringfire {
namespace {

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

TEST(SpillArena, BlocksKeepTheirBytesAndAreReused) {
  SpillArena arena(temp_dir(), 1 << 20);
  constexpr std::size_t kBytes = 64 * 4096;
  std::vector<std::uint64_t*> blocks;
  for (int b = 0; b < 40; ++b) {  // 40 x 256 KiB: ten 1 MiB files
    auto* p = static_cast<std::uint64_t*>(arena.allocate(kBytes));
    for (std::size_t i = 0; i < kBytes / 8; ++i) p[i] = i * 31 + static_cast<std::uint64_t>(b);
    blocks.push_back(p);
  }
  EXPECT_EQ(arena.stats().files, 10u);
  EXPECT_EQ(arena.stats().bytes_in_use, 40 * kBytes);
  for (int b = 0; b < 40; ++b) {
    EXPECT_TRUE(arena.owns(blocks[b]));
    for (std::size_t i = 0; i < kBytes / 8; i += 511) ASSERT_EQ(blocks[b][i], i * 31 + static_cast<std::uint64_t>(b));
  }
  arena.release(blocks[7], kBytes);
  EXPECT_EQ(blocks[7][0], 0u);  // punched out: the page reads as zero again
  EXPECT_EQ(arena.allocate(kBytes), blocks[7]);
  EXPECT_EQ(arena.stats().files, 10u);
  int on_stack = 0;
  EXPECT_FALSE(arena.owns(&on_stack));
}

TEST(SpillArena, AnUnusableDirectoryIsAClearError) {
  try {
    SpillArena arena("/nonexistent/ringfire-spill");
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create a file in '/nonexistent/ringfire-spill'"), std::string::npos);
  }
  EXPECT_THROW(start_host_spill(0, "/nonexistent/ringfire-spill"), InvalidArgument);
  EXPECT_FALSE(host_spill_stats().active);
}

TEST(HostSpill, OnlyBlocksBeyondTheLimitGoToFiles) {
  host_pool().flush();
  const std::size_t resident = host_spill_stats().bytes_resident;
  start_host_spill(resident + (1 << 20), temp_dir());
  const std::size_t spilled_before = host_spill_stats().bytes_spilled;
  Buffer small(100);                 // below a page: always in RAM
  Buffer first((1 << 20) / 8 - 512);  // fits under the limit
  Buffer second((1 << 20) / 8);      // beyond it: a file
  for (std::size_t i = 0; i < second.size(); ++i) second.data()[i] = ~i;
  HostSpillStats s = host_spill_stats();
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.directory, temp_dir());
  EXPECT_EQ(s.bytes_spilled - spilled_before, std::size_t{1} << 20);
  stop_host_spill();
  Buffer third((1 << 20) / 8);  // spilling is off: RAM again
  EXPECT_EQ(host_spill_stats().bytes_spilled - spilled_before, std::size_t{1} << 20);
  for (std::size_t i = 0; i < second.size(); i += 1001) ASSERT_EQ(second.data()[i], ~i);
  EXPECT_FALSE(host_spill_stats().active);
}

TEST(HostSpill, ColdBlocksGoToFilesBelowTheLimit) {
  host_pool().flush();
  start_host_spill(std::size_t{1} << 40, temp_dir());  // a limit nothing here reaches
  constexpr std::size_t kWords = (1 << 20) / 8 + 8;   // 1 MiB + 64 bytes: 1 MiB + a page in the pool
  constexpr std::size_t kCapacity = (1 << 20) + 4096;
  const std::size_t spilled_before = host_spill_stats().bytes_spilled;
  const std::size_t resident_before = host_spill_stats().bytes_resident;
  { Buffer cached(kWords); }  // freed into the pool's cache, in RAM
  EXPECT_EQ(host_spill_stats().bytes_resident - resident_before, kCapacity);

  begin_cold_host_allocations();
  const std::uint64_t* cold_block = nullptr;
  {
    Buffer cold(kWords);  // a new block from a file, not the cached RAM one
    for (std::size_t i = 0; i < cold.size(); ++i) cold.data()[i] = i * 7;
    for (std::size_t i = 0; i < cold.size(); i += 997) ASSERT_EQ(cold.data()[i], i * 7);
    cold_block = cold.data();
  }
  end_cold_host_allocations();
  end_cold_host_allocations();  // unbalanced: ignored, the count stays at zero
  EXPECT_EQ(host_spill_stats().bytes_spilled - spilled_before, kCapacity);

  {
    Buffer hot(kWords);  // under the limit: the cached RAM block, not the freed cold one
    EXPECT_NE(hot.data(), cold_block);
    EXPECT_EQ(host_spill_stats().bytes_resident - resident_before, kCapacity);
    begin_cold_host_allocations();
    Buffer cold_again(kWords);  // the cached cold block serves the next cold request
    end_cold_host_allocations();
    EXPECT_EQ(cold_again.data(), cold_block);
    EXPECT_EQ(host_spill_stats().bytes_spilled - spilled_before, kCapacity);
  }
  stop_host_spill();
  begin_cold_host_allocations();  // not spilling: cold requests are ordinary ones
  Buffer after(kWords);
  end_cold_host_allocations();
  EXPECT_EQ(host_spill_stats().bytes_spilled - spilled_before, kCapacity);
}

TEST(HostSpill, AReleasedSpilledBlockIsNeverWrittenBack) {
  host_pool().flush();
  start_host_spill(0, temp_dir());
  const std::uint64_t* first = nullptr;
  {
    Buffer temporary((1 << 20) / 8);
    for (std::size_t i = 0; i < temporary.size(); ++i) temporary.data()[i] = i + 1;
    first = temporary.data();
  }
  Buffer reused((1 << 20) / 8);  // the cached block again, its dirty pages dropped: zeros
  stop_host_spill();
  ASSERT_EQ(reused.data(), first);
  for (std::size_t i = 0; i < reused.size(); i += 509) ASSERT_EQ(reused.data()[i], 0u);
}

TEST(HostSpill, PrefetchingLeavesTheBytesAsTheyAre) {
  host_pool().flush();
  start_host_spill(0, temp_dir());  // every whole-page block goes to a file
  Buffer spilled((1 << 20) / 8);
  Buffer in_ram(100);  // below a page: RAM
  for (std::size_t i = 0; i < spilled.size(); ++i) spilled.data()[i] = i * 13;
  for (std::size_t i = 0; i < in_ram.size(); ++i) in_ram.data()[i] = i;
  prefetch_host_block(spilled.data(), spilled.size() * 8);
  prefetch_host_block(spilled.data() + 1000, 12345);  // unaligned start and length
  prefetch_host_block(in_ram.data(), in_ram.size() * 8);
  prefetch_host_block(nullptr, 4096);
  prefetch_host_block(spilled.data(), 0);
  stop_host_spill();
  for (std::size_t i = 0; i < spilled.size(); i += 101) ASSERT_EQ(spilled.data()[i], i * 13);
  for (std::size_t i = 0; i < in_ram.size(); ++i) ASSERT_EQ(in_ram.data()[i], i);
}

}  // namespace
}  // namespace ringfire
