#include "ringfire/base/parallel.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

int initial_threads() {
  if (const char* env = std::getenv("RINGFIRE_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

std::atomic<int> g_threads{initial_threads()};

}  // namespace

int num_threads() { return g_threads.load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  require(n >= 1, "set_num_threads", "thread count must be >= 1, got " + std::to_string(n));
  g_threads.store(n, std::memory_order_relaxed);
}

}  // namespace ringfire
