// The thread pool and fork(): loops cover every item once, errors come back
// to the caller, and a forked child neither hangs in a parallel loop nor
// replays its parent's OS-seeded random stream, and spilled memory is the
// child's own copy.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <numeric>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ringfire/base/buffer.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/fork.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {
namespace {

// Runs `child` in a forked process and returns its exit status; a child still
// running after `seconds` is killed and reported as -1 (a hang).
template <class Child>
int run_in_child(Child child, int seconds = 20) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

// Sums i over [0, count) with `parts` blocks; each item is visited once.
std::uint64_t parallel_sum(std::size_t count, std::size_t parts) {
  std::vector<std::uint8_t> visits(count, 0);
  auto body = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) ++visits[i];
  };
  parallel_ranges(count, parts, body);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count; ++i) sum += visits[i] == 1 ? i : (1ull << 40);
  return sum;
}

TEST(ThreadPool, EveryItemOnceForAnyBlockCount) {
  for (std::size_t count : {1u, 2u, 3u, 7u, 64u, 1000u})
    for (std::size_t parts : {1u, 2u, 3u, 4u, 16u}) EXPECT_EQ(parallel_sum(count, parts), count * (count - 1) / 2);
}

TEST(ThreadPool, StaticBlocksLikeOpenMP) {
  std::vector<std::pair<std::size_t, std::size_t>> blocks(4);
  std::atomic<int> seen{0};
  auto body = [&](std::size_t begin, std::size_t end) {
    blocks[static_cast<std::size_t>(seen++)] = {begin, end};
  };
  parallel_ranges(10, 4, body);
  ASSERT_EQ(seen.load(), 4);
  std::sort(blocks.begin(), blocks.end());
  const std::vector<std::pair<std::size_t, std::size_t>> want{{0, 2}, {2, 5}, {5, 7}, {7, 10}};
  EXPECT_EQ(blocks, want);
}

TEST(ThreadPool, NestedLoopsRunSeriallyInsideATask) {
  std::atomic<std::uint64_t> total{0};
  auto outer = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) total += parallel_sum(100, 4);
  };
  parallel_ranges(8, 4, outer);
  EXPECT_EQ(total.load(), 8u * 4950u);
}

TEST(ThreadPool, AnErrorInABlockReachesTheCaller) {
  auto body = [](std::size_t begin, std::size_t) {
    if (begin > 0) throw std::runtime_error("block failed");
  };
  EXPECT_THROW(parallel_ranges(8, 4, body), std::runtime_error);
  EXPECT_EQ(parallel_sum(50, 4), 50u * 49u / 2);  // the pool still works
}

TEST(ThreadPool, ManyCallersAtOnce) {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r)
        if (parallel_sum(257, 3) != 257u * 256u / 2) ++wrong;
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Blocks are claimed by whichever thread is free (the caller too), so the
// loops of callers at once interleave as finely as the scheduler likes: every
// item still runs once, each caller gets its own error, and a loop never
// picks up a block of another.
TEST(ThreadPool, CallersAtOnceWithShortBlocksAndErrors) {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([&, t] {
      for (int r = 0; r < 400; ++r) {
        const std::size_t parts = 2 + static_cast<std::size_t>((t + r) % 7), count = 1 + static_cast<std::size_t>(r % 13);
        if (parallel_sum(count, parts) != count * (count - 1) / 2) ++wrong;
        if (r % 5 == 0) {
          const int mine = t * 1000 + r;
          auto body = [mine](std::size_t begin, std::size_t end) {  // whichever block holds item 5
            if (begin <= 5 && 5 < end) throw std::runtime_error(std::to_string(mine));
          };
          try {
            parallel_ranges(8, parts, body);
            ++wrong;
          } catch (const std::runtime_error& e) {
            if (e.what() != std::to_string(mine)) ++wrong;
          }
        }
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Fork, ChildRunsParallelLoopsAfterTheParentDid) {
  ASSERT_EQ(parallel_sum(1000, 4), 1000u * 999u / 2);  // the parent's workers exist now
  const std::uint64_t before = fork_generation();
  const int status = run_in_child([before] {
    if (fork_generation() != before + 1) return 3;
    for (int r = 0; r < 50; ++r)
      if (parallel_sum(1000, 4) != 1000u * 999u / 2) return 2;
    return 0;
  });
  EXPECT_EQ(status, 0) << "-1 means the child hung in a parallel loop";
  EXPECT_EQ(fork_generation(), before);
}

// The next 32 bytes of `prng` in a forked child, read back through a pipe.
Prng::Seed next_seed_in_child(Prng& prng) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const Prng::Seed s = prng.next_seed();
    _exit(write(fds[1], s.data(), s.size()) == static_cast<ssize_t>(s.size()) ? 0 : 1);
  }
  Prng::Seed got{};
  EXPECT_EQ(read(fds[0], got.data(), got.size()), static_cast<ssize_t>(got.size()));
  close(fds[0]);
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got;
}

TEST(Fork, OsSeededGeneratorsReseedInTheChild) {
  Prng os = Prng::from_os();
  (void)os.next_u64();  // buffered keystream the child must not replay either
  const Prng::Seed child = next_seed_in_child(os);
  const Prng::Seed parent = os.next_seed();
  EXPECT_NE(child, parent);
}

TEST(Fork, SeededGeneratorsStayDeterministic) {
  Prng::Seed seed{};
  seed[0] = 7;
  Prng a = Prng::from_seed(seed);
  const Prng::Seed child = next_seed_in_child(a);
  EXPECT_EQ(child, a.next_seed());
}

TEST(Fork, SpilledBlocksAreTheChildsOwnCopy) {
  host_pool().flush();
  start_host_spill(0, "/tmp");  // every page-sized block goes to a file
  const std::size_t before = host_spill_stats().bytes_spilled;
  Buffer spilled(1 << 16);
  ASSERT_EQ(host_spill_stats().bytes_spilled - before, std::size_t{1} << 19);
  for (std::size_t i = 0; i < spilled.size(); ++i) spilled.data()[i] = i;
  const int status = run_in_child([&] {
    for (std::size_t i = 0; i < spilled.size(); ++i)
      if (spilled.data()[i] != i) return 1;  // inherited bytes are readable
    for (std::size_t i = 0; i < spilled.size(); ++i) spilled.data()[i] = 7;
    Buffer fresh(1 << 16);  // a block of the child's own files
    fresh.data()[0] = 1;
    // A grandchild inherits the child's writes as they are, not the files' bytes.
    const int grandchild = run_in_child([&] { return spilled.data()[5] == 7 && fresh.data()[0] == 1 ? 0 : 1; });
    return grandchild == 0 ? 0 : 2;
  });
  stop_host_spill();
  EXPECT_EQ(status, 0);
  for (std::size_t i = 0; i < spilled.size(); i += 97) ASSERT_EQ(spilled.data()[i], i);  // the child's writes stay there
}

TEST(Fork, AFullSpillDiskIsAClearError) {
  // In a child: a 1 MiB file-size limit plays a full disk.
  const int status = run_in_child([] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    setrlimit(RLIMIT_FSIZE, &limit);
    host_pool().flush();  // a block cached by an earlier test of this process would be reused, not spilled
    start_host_spill(0, "/tmp");
    try {
      Buffer too_big((2 << 20) / 8);
    } catch (const DeviceError& e) {
      return std::string(e.what()).find("[memory.spill] cannot reserve") == 0 ? 0 : 2;
    }
    return 1;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace ringfire
