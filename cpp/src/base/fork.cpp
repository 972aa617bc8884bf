#include "ringfire/base/fork.h"

#include <pthread.h>

#include <atomic>

namespace ringfire {

namespace {

std::atomic<std::uint64_t> g_generation{0};

void on_fork_child() { g_generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library loads, before any of its state exists.
const int g_registered = pthread_atfork(nullptr, nullptr, &on_fork_child);

}  // namespace

std::uint64_t fork_generation() {
  (void)g_registered;
  return g_generation.load(std::memory_order_relaxed);
}

}  // namespace ringfire
