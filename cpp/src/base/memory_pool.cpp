#include "ringfire/base/memory_pool.h"

#include <pthread.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/base/spill.h"

namespace ringfire {

namespace {

constexpr std::size_t kAlignment = 64;  // one cache line; AVX-friendly

class HostPool final : public MemoryPool {
 public:
  void start_spill(std::size_t ram_limit, const std::string& directory) {
    {
      std::lock_guard<std::mutex> lock(spill_mutex_);
      for (const auto& arena : arenas_)
        if (arena->directory() == directory) {  // its files and reserved space serve again
          active_ = arena.get();
          ram_limit_ = ram_limit;
          return;
        }
    }
    auto arena = std::make_unique<SpillArena>(directory);  // raises before anything changes
    std::lock_guard<std::mutex> lock(spill_mutex_);
    arenas_.push_back(std::move(arena));
    active_ = arenas_.back().get();
    ram_limit_ = ram_limit;
  }
  void stop_spill() {
    std::lock_guard<std::mutex> lock(spill_mutex_);
    active_ = nullptr;
  }
  HostSpillStats spill_stats() const {
    std::lock_guard<std::mutex> lock(spill_mutex_);
    HostSpillStats s;
    s.active = active_ != nullptr;
    s.ram_limit = ram_limit_;
    if (active_ != nullptr) s.directory = active_->directory();
    s.bytes_resident = resident_;
    for (const auto& arena : arenas_) {
      const SpillStats a = arena->stats();
      s.bytes_spilled += a.bytes_in_use;
      s.bytes_mapped += a.bytes_mapped;
    }
    return s;
  }
  // Fork handlers: the forking thread holds both locks across fork().
  void lock_all() {
    lock();
    spill_mutex_.lock();
  }
  void unlock_all(bool in_child) {
    if (in_child)
      for (const auto& arena : arenas_) arena->after_fork_in_child();
    spill_mutex_.unlock();
    unlock();
  }

 protected:
  void* raw_allocate(std::size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(spill_mutex_);
      if (active_ != nullptr && bytes % SpillArena::page_bytes() == 0 && resident_ + bytes > ram_limit_)
        return active_->allocate(bytes);
      resident_ += bytes;
    }
    void* block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) {
      std::lock_guard<std::mutex> lock(spill_mutex_);
      resident_ -= bytes;
      throw std::bad_alloc();
    }
    return block;
  }
  void raw_free(void* block, std::size_t capacity) override {
    std::lock_guard<std::mutex> lock(spill_mutex_);
    for (const auto& arena : arenas_)
      if (arena->owns(block)) return arena->release(block, capacity);
    resident_ -= capacity;
    std::free(block);
  }

 private:
  mutable std::mutex spill_mutex_;
  std::vector<std::unique_ptr<SpillArena>> arenas_;  // kept: their blocks may still be in use
  SpillArena* active_ = nullptr;
  std::size_t ram_limit_ = 0;
  std::size_t resident_ = 0;
};

HostPool& the_host_pool() {
  // Leaked on purpose: buffers in static objects may be released after main.
  static HostPool* pool = new HostPool();
  return *pool;
}

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
    for (void* block : blocks) raw_free(block, key.second);
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

MemoryPool& host_pool() { return the_host_pool(); }

void start_host_spill(std::size_t ram_limit_bytes, const std::string& directory) {
  the_host_pool().start_spill(ram_limit_bytes, directory);
}
void stop_host_spill() { the_host_pool().stop_spill(); }
HostSpillStats host_spill_stats() { return the_host_pool().spill_stats(); }

namespace {

void lock_host_pool() { the_host_pool().lock_all(); }
void unlock_host_pool_in_parent() { the_host_pool().unlock_all(false); }
void unlock_host_pool_in_child() { the_host_pool().unlock_all(true); }

// The forking thread holds the host pool's locks across fork(): the parent and
// the child each release their copy afterwards (the child after remapping the
// spill files privately, see spill.h).
const int g_fork_handlers = pthread_atfork(&lock_host_pool, &unlock_host_pool_in_parent, &unlock_host_pool_in_child);

}  // namespace

MemoryPool& pool_for(const Device& device) {
  if (device.is_host()) return host_pool();
  const PoolResolver resolver = device_pool_resolver(device.kind);
  if (resolver == nullptr) throw_not_supported("device", "device '" + device.str() + "' has no memory in this build");
  return resolver(device.index);
}

}  // namespace ringfire
