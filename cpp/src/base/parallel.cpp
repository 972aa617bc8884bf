#include "ringfire/base/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringfire/base/errors.h"

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

class ThreadPool {
 public:
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
    count_ = count;
    parts_ = parts;
    error_ = nullptr;
    pending_.store(threads_.size(), std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    run_block(0);
    spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
    for (std::size_t left; (left = pending_.load(std::memory_order_acquire)) != 0;) pending_.wait(left);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void grow(std::size_t workers) {
    while (threads_.size() < workers) {
      const std::size_t index = threads_.size() + 1;  // block 0 is the caller's
      threads_.emplace_back([this, index, seen = epoch_.load(std::memory_order_relaxed)] { work(index, seen); });
    }
  }

  void run_block(std::size_t t) {
    const bool was_inside = t_inside_task;
    t_inside_task = true;
    try {
      task_(context_, block_begin(count_, parts_, t), block_begin(count_, parts_, t + 1));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_inside_task = was_inside;
  }

  void work(std::size_t index, std::uint32_t seen) {
    t_inside_task = true;
    for (;;) {
      std::uint32_t now = epoch_.load(std::memory_order_acquire);
      spin_until([&] { return (now = epoch_.load(std::memory_order_acquire)) != seen; });
      while (now == seen) {
        epoch_.wait(seen, std::memory_order_acquire);
        now = epoch_.load(std::memory_order_acquire);
      }
      seen = now;
      // Every worker acknowledges every loop, so the caller cannot start the
      // next one (and rewrite the fields) before all have read this one's.
      if (index < parts_) run_block(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
  }

  std::mutex submit_;  // one loop at a time
  std::vector<std::thread> threads_;
  // The current loop; written before epoch_ is bumped, read after it changes.
  // pending_ counts the workers that have not yet finished with it.
  RangeTask task_ = nullptr;
  void* context_ = nullptr;
  std::size_t count_ = 0, parts_ = 0;
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<std::size_t> pending_{0};
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
  if (parts > 1 && !t_inside_task && pool()->try_run(count, parts, task, context)) return;
  task(context, 0, count);
}

}  // namespace ringfire
