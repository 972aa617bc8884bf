#include "ringfire/base/memory_pool.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/base/spill.h"

namespace ringfire {

namespace {

constexpr std::size_t kAlignment = 64;  // one cache line; AVX-friendly

// Host blocks of MemoryPool::kMappedMinBytes or more are mappings of their own: freeing one
// (flush, a cache limit) returns its pages to the system at once. From glibc's heap, blocks
// below its adaptive mmap threshold (up to 32 MiB) can stay in the process after free(),
// outside the pool's counts.
void* map_block(std::size_t bytes) {
  void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return block == MAP_FAILED ? nullptr : block;
}

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
    ever_spilled_.store(true);
    active_ = arenas_.back().get();
    ram_limit_ = ram_limit;
  }
  void stop_spill() {
    std::lock_guard<std::mutex> lock(spill_mutex_);
    active_ = nullptr;
  }
  bool may_spill() const { return ever_spilled_.load(); }
  void begin_cold() { cold_.fetch_add(1); }
  bool cold_open() const { return cold_.load() > 0; }
  void end_cold() {
    int open = cold_.load();
    while (open > 0 && !cold_.compare_exchange_weak(open, open - 1)) {
    }
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
  // Cold requests take only spilled blocks (cached, or new from the files); the others
  // take RAM blocks first, and spilled ones only where a new block would be spilled too.
  Reuse reuse_for(std::size_t capacity) const override {
    if (!ever_spilled_.load()) return Reuse::kRamOnly;  // the common case, without the lock
    std::lock_guard<std::mutex> lock(spill_mutex_);
    if (active_ == nullptr || capacity % SpillArena::page_bytes() != 0) return Reuse::kRamOnly;
    if (cold_.load() > 0) return Reuse::kSpilledOnly;
    return resident_ + capacity > ram_limit_ ? Reuse::kRamThenSpilled : Reuse::kRamOnly;
  }
  bool is_spilled(const void* block) const override {
    if (!ever_spilled_.load()) return false;
    std::lock_guard<std::mutex> lock(spill_mutex_);
    for (const auto& arena : arenas_)
      if (arena->owns(block)) return true;
    return false;
  }
  void discard_spilled(void* block, std::size_t capacity) override {
    ::madvise(block, capacity, MADV_REMOVE);  // punched: the dirty pages are never written
  }
  void* raw_allocate(std::size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(spill_mutex_);
      if (active_ != nullptr && bytes % SpillArena::page_bytes() == 0 &&
          (cold_.load() > 0 || resident_ + bytes > ram_limit_))
        return active_->allocate(bytes);
      resident_ += bytes;
    }
    void* block = bytes >= kMappedMinBytes ? map_block(bytes) : std::aligned_alloc(kAlignment, bytes);
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
    if (capacity >= kMappedMinBytes) ::munmap(block, capacity);
    else std::free(block);
  }

 private:
  mutable std::mutex spill_mutex_;
  std::vector<std::unique_ptr<SpillArena>> arenas_;  // kept: their blocks may still be in use
  SpillArena* active_ = nullptr;
  std::size_t ram_limit_ = 0;
  std::size_t resident_ = 0;
  std::atomic<int> cold_{0};  // open cold-allocation scopes
  std::atomic<bool> ever_spilled_{false};  // an arena exists: blocks may live in files
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

std::size_t MemoryPool::largest_reusable_for(std::size_t capacity) {
  // Polynomials of neighbouring levels differ by one limb in tens: an exact-size match
  // only would cache every level's temporaries apart (an N16_BOOT bootstrap left 4.7 GiB
  // cached for about 0.5 GiB in use at once; 1.2 GiB with blocks up to half again as
  // large serving, 1.7 GiB with a quarter).
  return capacity < kBestFitMinBytes ? capacity : capacity + capacity / 2;
}

void* MemoryPool::take_cached_locked(bool spilled, QueueHandle queue, std::size_t capacity) {
  const std::size_t largest = largest_reusable_for(capacity);
  for (auto it = free_lists_.lower_bound({spilled, queue, capacity});
       it != free_lists_.end() && it->first.spilled == spilled && it->first.queue == queue &&
       it->first.capacity <= largest;
       ++it) {
    if (it->second.empty()) continue;
    void* block = it->second.back();
    it->second.pop_back();
    const std::size_t held = it->first.capacity;
    if (held != capacity) oversized_[block] = held;
    ++stats_.hits;
    stats_.bytes_cached -= held;
    stats_.bytes_in_use += held;
    note_peaks_locked();
    return block;
  }
  return nullptr;
}

void* MemoryPool::allocate(std::size_t bytes, QueueHandle queue) {
  const std::size_t capacity = capacity_for(bytes);
  const Reuse reuse = reuse_for(capacity);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (bool spilled : {false, true}) {
      if ((spilled && reuse == Reuse::kRamOnly) || (!spilled && reuse == Reuse::kSpilledOnly)) continue;
      // The queue's own blocks first, then blocks settled for any queue.
      for (QueueHandle q : {reuse_per_queue() ? queue : kAnyQueue, kAnyQueue})
        if (void* block = take_cached_locked(spilled, q, capacity)) return block;
    }
  }
  void* block = raw_allocate(capacity);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  stats_.bytes_in_use += capacity;
  note_peaks_locked();
  return block;
}

void MemoryPool::note_peaks_locked() {
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_held =
      std::max(stats_.peak_bytes_held, stats_.bytes_in_use + stats_.bytes_cached + stats_.bytes_retained);
}

void MemoryPool::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.peak_bytes_held = 0;
  note_peaks_locked();
}

void MemoryPool::release(void* block, std::size_t bytes, QueueHandle queue) {
  if (block == nullptr) return;
  std::size_t capacity = capacity_for(bytes);
  const bool spilled = is_spilled(block);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!oversized_.empty()) {
    if (auto it = oversized_.find(block); it != oversized_.end()) {
      capacity = it->second;  // a larger cached block served the request
      oversized_.erase(it);
    }
  }
  stats_.bytes_in_use -= capacity;
  if (stats_.open_frames > 0) {
    retained_.push_back({block, capacity, spilled});
    stats_.bytes_retained += capacity;
    return;
  }
  // Before another request can take it; not while a frame may still read it.
  if (spilled) discard_spilled(block, capacity);
  if (stats_.bytes_cached + capacity > cache_limit_) {
    lock.unlock();  // raw_free takes the spill lock; allocate() never holds both
    raw_free(block, capacity);
    return;
  }
  free_lists_[{spilled, reuse_per_queue() ? queue : kAnyQueue, capacity}].push_back(block);
  stats_.bytes_cached += capacity;
}

void MemoryPool::set_cache_limit(std::size_t bytes) {
  // A device's released blocks may still be read by queued work: only the free lists keep them safe.
  require(!reuse_per_queue(), "memory.cache_limit", "a pool of an asynchronous device keeps every block it caches");
  std::vector<std::pair<void*, std::size_t>> beyond;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_limit_ = bytes;
    beyond = take_beyond_limit_locked();
  }
  for (const auto& [block, capacity] : beyond) raw_free(block, capacity);
}

std::vector<std::pair<void*, std::size_t>> MemoryPool::take_beyond_limit_locked() {
  std::vector<std::pair<void*, std::size_t>> taken;
  // Blocks in RAM before spilled ones (their pages are already dropped), the largest first:
  // the fewest blocks leave for the bytes given back.
  for (bool spilled : {false, true})
    for (auto it = free_lists_.rbegin(); it != free_lists_.rend() && stats_.bytes_cached > cache_limit_; ++it) {
      if (it->first.spilled != spilled) continue;
      auto& blocks = it->second;
      while (!blocks.empty() && stats_.bytes_cached > cache_limit_) {
        taken.emplace_back(blocks.back(), it->first.capacity);
        stats_.bytes_cached -= it->first.capacity;
        blocks.pop_back();
      }
    }
  return taken;
}

std::size_t MemoryPool::cache_limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_limit_;
}

void MemoryPool::flush() {
  std::map<ListKey, std::vector<void*>> lists;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lists.swap(free_lists_);
    stats_.bytes_cached = 0;
  }
  for (auto& [key, blocks] : lists)
    for (void* block : blocks) raw_free(block, key.capacity);
}

void MemoryPool::settle_locked() {
  for (auto it = free_lists_.begin(); it != free_lists_.end();) {
    if (it->first.queue == kAnyQueue) {
      ++it;
      continue;
    }
    auto& any = free_lists_[{it->first.spilled, kAnyQueue, it->first.capacity}];
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
  std::vector<std::pair<void*, std::size_t>> beyond;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.open_frames == 0) return;
    if (--stats_.open_frames > 0) return;
    for (const Retained& r : retained_) free_lists_[{r.spilled, kAnyQueue, r.capacity}].push_back(r.block);
    stats_.bytes_cached += stats_.bytes_retained;
    stats_.bytes_retained = 0;
    retained_.clear();
    settle_locked();
    beyond = take_beyond_limit_locked();  // the frame's blocks count against the limit too
  }
  for (const auto& [block, capacity] : beyond) raw_free(block, capacity);
}

PoolStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

MemoryPool& host_pool() { return the_host_pool(); }

std::size_t PoolModel::allocate(std::size_t bytes) {
  std::size_t capacity = MemoryPool::capacity_for(bytes);
  const auto it = cached_.lower_bound(capacity);
  if (it != cached_.end() && it->first <= MemoryPool::largest_reusable_for(capacity)) {
    capacity = it->first;
    cached_bytes_ -= capacity;
    if (--it->second == 0) cached_.erase(it);
  }
  in_use_ += capacity;
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  peak_held_ = std::max(peak_held_, held());
  return capacity;
}

void PoolModel::release(std::size_t capacity) {
  in_use_ -= capacity;
  if (cached_bytes_ + capacity > cache_limit_) return;  // back to the system
  ++cached_[capacity];
  cached_bytes_ += capacity;
}

void start_host_spill(std::size_t ram_limit_bytes, const std::string& directory) {
  the_host_pool().start_spill(ram_limit_bytes, directory);
}
void stop_host_spill() { the_host_pool().stop_spill(); }
void begin_cold_host_allocations() { the_host_pool().begin_cold(); }
void end_cold_host_allocations() { the_host_pool().end_cold(); }
bool cold_host_allocations_open() { return the_host_pool().cold_open(); }

void prefetch_host_block(const void* block, std::size_t bytes) {
  if (block == nullptr || bytes == 0 || !the_host_pool().may_spill()) return;
  // MADV_WILLNEED on a file mapping starts readahead and returns; on RAM it does nothing.
  const std::uintptr_t page = SpillArena::page_bytes();
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(block) & ~(page - 1);
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(block) + bytes;
  ::madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED);
}
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
