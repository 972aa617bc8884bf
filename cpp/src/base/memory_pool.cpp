#include "ringfire/base/memory_pool.h"

#include <pthread.h>

#include <cstdlib>
#include <new>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

constexpr std::size_t kAlignment = 64;  // one cache line; AVX-friendly

class HostPool final : public MemoryPool {
 protected:
  void* raw_allocate(std::size_t bytes) override {
    void* block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) throw std::bad_alloc();
    return block;
  }
  void raw_free(void* block) override { std::free(block); }
};

}  // namespace

std::size_t MemoryPool::capacity_for(std::size_t bytes) {
  // Small requests share 64-byte granules; large ones are rounded to 4 KiB so
  // polynomials of the same shape land in the same free list.
  const std::size_t granule = bytes <= 4096 ? kAlignment : 4096;
  const std::size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? granule : rounded;
}

void* MemoryPool::allocate(std::size_t bytes, QueueHandle queue) {
  const std::size_t capacity = capacity_for(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The queue's own blocks first, then blocks settled for any queue.
    for (QueueHandle q : {reuse_per_queue() ? queue : kAnyQueue, kAnyQueue}) {
      auto it = free_lists_.find({q, capacity});
      if (it == free_lists_.end() || it->second.empty()) continue;
      void* block = it->second.back();
      it->second.pop_back();
      ++stats_.hits;
      stats_.bytes_cached -= capacity;
      stats_.bytes_in_use += capacity;
      return block;
    }
  }
  void* block = raw_allocate(capacity);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  stats_.bytes_in_use += capacity;
  return block;
}

void MemoryPool::release(void* block, std::size_t bytes, QueueHandle queue) {
  if (block == nullptr) return;
  const std::size_t capacity = capacity_for(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= capacity;
  if (stats_.open_frames > 0) {
    retained_.emplace_back(block, capacity);
    stats_.bytes_retained += capacity;
    return;
  }
  free_lists_[{reuse_per_queue() ? queue : kAnyQueue, capacity}].push_back(block);
  stats_.bytes_cached += capacity;
}

void MemoryPool::flush() {
  std::map<std::pair<QueueHandle, std::size_t>, std::vector<void*>> lists;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lists.swap(free_lists_);
    stats_.bytes_cached = 0;
  }
  for (auto& [key, blocks] : lists)
    for (void* block : blocks) raw_free(block);
}

void MemoryPool::settle_locked() {
  for (auto it = free_lists_.begin(); it != free_lists_.end();) {
    if (it->first.first == kAnyQueue) {
      ++it;
      continue;
    }
    auto& any = free_lists_[{kAnyQueue, it->first.second}];
    any.insert(any.end(), it->second.begin(), it->second.end());
    it = free_lists_.erase(it);
  }
}

void MemoryPool::settle() {
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();
}

void MemoryPool::begin_frame() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.open_frames;
}

void MemoryPool::end_frame() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.open_frames == 0) return;
  if (--stats_.open_frames > 0) return;
  for (auto [block, capacity] : retained_) free_lists_[{kAnyQueue, capacity}].push_back(block);
  stats_.bytes_cached += stats_.bytes_retained;
  stats_.bytes_retained = 0;
  retained_.clear();
  settle_locked();
}

PoolStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

MemoryPool& host_pool() {
  // Leaked on purpose: buffers in static objects may be released after main.
  static MemoryPool* pool = new HostPool();
  return *pool;
}

namespace {

void lock_host_pool() { host_pool().lock(); }
void unlock_host_pool() { host_pool().unlock(); }

// The forking thread holds the host pool's lock across fork(): the parent and
// the child each release their copy afterwards.
const int g_fork_handlers = pthread_atfork(&lock_host_pool, &unlock_host_pool, &unlock_host_pool);

}  // namespace

MemoryPool& pool_for(const Device& device) {
  if (device.is_host()) return host_pool();
  const PoolResolver resolver = device_pool_resolver(device.kind);
  if (resolver == nullptr) throw_not_supported("device", "device '" + device.str() + "' has no memory in this build");
  return resolver(device.index);
}

}  // namespace ringfire
