#include "ringfire/base/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"

namespace ringfire {

namespace {

// A positive integer from an environment variable (the first entry of a
// comma-separated list), or 0 when it is unset or not one.
int threads_from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (end == value || (*end != '\0' && *end != ',') || n < 1 || n > 4096) return 0;
  return static_cast<int>(n);
}

int initial_threads() {
  for (const char* name : {"RINGFIRE_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const int n = threads_from_env(name)) return n;
  // The CPUs this process may use (a container or taskset may allow fewer
  // than the machine has).
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    const int n = CPU_COUNT(&allowed);
    if (n >= 1) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

std::atomic<int> g_threads{initial_threads()};

// Set on pool workers (and on a caller while it runs its own block), so a
// loop inside a task runs serially instead of waiting for busy workers.
thread_local bool t_inside_task = false;

std::size_t block_begin(std::size_t count, std::size_t parts, std::size_t t) { return t * count / parts; }

// Workers sleep on a futex (std::atomic::wait) between loops after a short
// spin, so back-to-back loops (the batched kernels of one operation) do not
// pay a wake-up each (without the spin the digits CNN ran 1.6x slower on a
// 2-vCPU virtual machine). The spin is timed, not counted (a pause takes from
// about 10 to over 100 cycles across x86 CPUs), and it yields the core between
// bursts: where more threads are runnable than there are cores (a server's
// jobs, or a client and a server on one machine), a spinning worker would
// otherwise hold a core the others need (the CNN served on those two cores
// went from 59-65 % to 79-87 % of its in-process throughput).
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or for kSpin; true if done.
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 8; ++i) {
      cpu_relax();
      if (done()) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    sched_yield();  // returns at once when nothing else waits for this core
  }
}

// A loop's blocks are claimed, not assigned: the caller and every worker take
// the next unclaimed block until none is left, and the caller waits only for
// blocks already taken. With a fixed block per worker, a caller whose worker
// had not yet been scheduled slept until it was, and where more threads are
// runnable than there are cores (requests at once, each with its loops) the
// scheduler can leave that worker queued behind another thread while the
// caller's core idles (two digits-MLP inferences at once on two cores kept
// 1.1 of them busy, and ran a third fewer requests a second than with one
// thread each; with claims, about as many).
class ThreadPool {
 public:
  // Blocks a loop may have (the claim word's field).
  static constexpr std::size_t kMaxParts = 0xFFFF;

  ThreadPool() = default;
  // Never destroyed: the pool lives until the process exits (its workers are
  // blocked in a wait then), and a forked child abandons its copy.
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs the blocks; false (nothing run) when another thread holds the pool.
  bool try_run(std::size_t count, std::size_t parts, RangeTask task, void* context) {
    std::unique_lock<std::mutex> lock(submit_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    grow(parts - 1);
    task_ = task;
    context_ = context;
    label_ = op_label_to_carry();
    count_ = count;
    parts_ = parts;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    // Block 0 is the caller's; the others go to whoever claims them first.
    // The release publishes the fields above to every successful claim.
    claims_.store(Claim::pack(++loops_, parts, 1), std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    run_block(0);
    finish_block(parts);
    run_claimed();
    spin_until([&] { return done_.load(std::memory_order_acquire) == parts; });
    for (std::uint32_t now; (now = done_.load(std::memory_order_acquire)) != parts;) done_.wait(now);
    // The error leaves the pool with this caller: the next loop's caller must
    // not drop the pool's hold on it while this one still reads it.
    const std::exception_ptr error = std::exchange(error_, nullptr);
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  // The current loop's number, its block count and its next unclaimed block,
  // in one word: a claim is checked against the word alone (a thread that
  // holds no block of a loop must not read its fields, which the next loop's
  // caller may be writing), and a claim made for a loop that has ended fails.
  struct Claim {
    static std::uint64_t pack(std::uint64_t loop, std::uint64_t parts, std::uint64_t next) {
      return loop << 32 | parts << 16 | next;
    }
    static std::size_t parts(std::uint64_t word) { return (word >> 16) & kMaxParts; }
    static std::size_t next(std::uint64_t word) { return word & kMaxParts; }
  };

  // Claims and runs blocks of the current loop until none is left. A block
  // held keeps its loop open (the caller waits for every block), so the
  // fields read while running it are that loop's.
  void run_claimed() {
    std::uint64_t word = claims_.load(std::memory_order_acquire);
    while (Claim::next(word) < Claim::parts(word)) {
      if (!claims_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
        continue;  // `word` now holds the current claim word
      run_block(Claim::next(word));
      finish_block(Claim::parts(word));
      word = claims_.load(std::memory_order_acquire);
    }
  }

  void finish_block(std::size_t parts) {
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == parts) done_.notify_one();
  }

  void grow(std::size_t workers) {
    while (threads_.size() < workers)
      threads_.emplace_back([this, seen = epoch_.load(std::memory_order_relaxed)] { work(seen); });
  }

  void run_block(std::size_t t) {
    const bool was_inside = t_inside_task;
    t_inside_task = true;
    try {
      const OpLabel label(label_);  // the caller's label on every thread (its own blocks keep it)
      task_(context_, block_begin(count_, parts_, t), block_begin(count_, parts_, t + 1));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_inside_task = was_inside;
  }

  void work(std::uint32_t seen) {
#if defined(__linux__)
    // Named for whatever lists threads (top -H, perf, /proc): `ringfire serve` counts
    // this pool's CPU in its metrics by the name.
    pthread_setname_np(pthread_self(), "ringfire-kernel");
#endif
    t_inside_task = true;
    for (;;) {
      std::uint32_t now = epoch_.load(std::memory_order_acquire);
      spin_until([&] { return (now = epoch_.load(std::memory_order_acquire)) != seen; });
      while (now == seen) {
        epoch_.wait(seen, std::memory_order_acquire);
        now = epoch_.load(std::memory_order_acquire);
      }
      seen = now;
      run_claimed();
    }
  }

  std::mutex submit_;  // one loop at a time
  std::vector<std::thread> threads_;
  // The current loop, written by its caller before claims_ names it; read by
  // the caller and by a thread while it holds one of the loop's blocks.
  RangeTask task_ = nullptr;
  void* context_ = nullptr;
  const char* label_ = nullptr;           // the caller's operation (op_label.h), for every block
  std::size_t count_ = 0, parts_ = 0;
  std::uint64_t loops_ = 0;               // loops run (the caller's, under submit_)
  // On lines of their own: a worker spinning on epoch_ is not disturbed by
  // the claims and completions of the loop running meanwhile.
  alignas(64) std::atomic<std::uint64_t> claims_{0};  // Claim::pack(loop, parts, next unclaimed block)
  alignas(64) std::atomic<std::uint32_t> done_{0};    // blocks of the current loop finished
  alignas(64) std::atomic<std::uint32_t> epoch_{0};   // bumped at each loop: wakes the workers
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// The pool of this process. A forked child starts a new one: the parent's
// workers do not exist there, and its locks may have been held at the fork.
// The old pool is left behind (its threads cannot be joined in the child).
std::mutex g_pool_mutex;
ThreadPool* g_pool = nullptr;

void forget_pool_in_child() {
  new (&g_pool_mutex) std::mutex();
  g_pool = nullptr;
}

const int g_fork_handler = pthread_atfork(nullptr, nullptr, &forget_pool_in_child);

ThreadPool* pool() {
  (void)g_fork_handler;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (g_pool == nullptr) g_pool = new ThreadPool();
  return g_pool;
}

}  // namespace

int num_threads() { return g_threads.load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  require(n >= 1, "set_num_threads", "thread count must be >= 1, got " + std::to_string(n));
  g_threads.store(n, std::memory_order_relaxed);
}

void parallel_run(std::size_t count, std::size_t parts, RangeTask task, void* context) {
  if (parts > count) parts = count;
  if (parts > 1 && parts <= ThreadPool::kMaxParts && !t_inside_task && pool()->try_run(count, parts, task, context))
    return;
  task(context, 0, count);
}

}  // namespace ringfire
