// Caching memory pool (seed 000 §III-E): freed blocks are kept on free lists
// keyed by capacity and handed out again for requests of the same capacity or,
// for large blocks, a little smaller (best fit, largest_reusable_for), so repeated
// polynomial temporaries never touch the system allocator and the temporaries of
// neighbouring levels share blocks instead of each level keeping its own.
// Thread-safe. One pool per device; the host pool always exists.
//
// Asynchronous devices (seed 000 §III-F/G). A device pool that reports
// reuse_per_queue() keeps a block released on queue Q for requests on Q
// only: Q is in order, so work that used the block runs before work that
// reuses it, without a host synchronisation. After the device has been
// synchronised, settle() makes every cached block usable on any queue.
// Compute frames (§III-G): while a frame is open, released blocks are
// retained (not reused) until the frame ends, so buffers stay valid for the
// whole computation even when several queues share them; end_frame() is
// called after the device is synchronised (ComputeFrame in ring/ does both).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringfire/base/device.h"
#include "ringfire/base/queue.h"

namespace ringfire {

struct PoolStats {
  std::size_t hits = 0;            // requests served from a free list
  std::size_t misses = 0;          // requests that went to the system allocator
  std::size_t bytes_in_use = 0;    // handed out and not yet released
  std::size_t bytes_cached = 0;    // held on free lists
  std::size_t bytes_retained = 0;  // released inside an open frame, held until it ends
  std::size_t open_frames = 0;
  // The most bytes_in_use, and the most taken from the system at once (in use,
  // cached and retained), since the pool began or reset_peaks().
  std::size_t peak_bytes_in_use = 0;
  std::size_t peak_bytes_held = 0;
};

class MemoryPool {
 public:
  virtual ~MemoryPool() = default;

  // Returns a block of at least `bytes` bytes (64-byte aligned) for use on
  // `queue`; never null.
  void* allocate(std::size_t bytes, QueueHandle queue = 0);
  // Gives a block back: to `queue`'s free list of its capacity, or to the
  // retained list while a frame is open.
  void release(void* block, std::size_t bytes, QueueHandle queue = 0);
  // Returns every cached block to the system (the device must be idle).
  void flush();
  // At most `bytes` of released blocks stay cached: a block released beyond it goes back
  // to the system, and lowering the limit gives back cached blocks, the largest first,
  // until the cache fits. No limit by default (SIZE_MAX); 0 caches nothing.
  void set_cache_limit(std::size_t bytes);
  std::size_t cache_limit() const;
  // Every cached block becomes usable on any queue (the device must be idle).
  void settle();
  void begin_frame();
  // Closes a frame; the last one moves retained blocks to the free lists
  // (the device must be idle).
  void end_frame();
  PoolStats stats() const;
  // The peaks start again from the pool's counts now.
  void reset_peaks();
  // Capacity a request of `bytes` is rounded up to.
  static std::size_t capacity_for(std::size_t bytes);
  // The largest cached block a request of `capacity` may take (best fit): the
  // capacity itself below kBestFitMinBytes, else half again as much.
  static std::size_t largest_reusable_for(std::size_t capacity);
  static constexpr std::size_t kBestFitMinBytes = std::size_t{1} << 20;
  // Host blocks of this size or more are mapped apart from the C heap (memory_pool.cpp).
  static constexpr std::size_t kMappedMinBytes = std::size_t{1} << 20;
  // The pool's lock, for fork handlers: the host pool is locked across
  // fork(), so a child never inherits free lists another thread was changing.
  void lock() const { mutex_.lock(); }
  void unlock() const { mutex_.unlock(); }

 protected:
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_free(void* block, std::size_t capacity) = 0;
  // Whether blocks are reused only on the queue that released them.
  virtual bool reuse_per_queue() const { return false; }
  // Cached blocks live on two sets of free lists: blocks in RAM and blocks in
  // spill files (is_spilled). A request of `capacity` takes cached blocks from:
  enum class Reuse { kRamOnly, kRamThenSpilled, kSpilledOnly };
  virtual Reuse reuse_for(std::size_t /*capacity*/) const { return Reuse::kRamOnly; }
  virtual bool is_spilled(const void* /*block*/) const { return false; }
  // A spilled block's contents are dead once it is released: dropping its pages keeps
  // the kernel from writing them back to the file (a temporary rewritten all the time
  // would otherwise cost a disk write each time).
  virtual void discard_spilled(void* /*block*/, std::size_t /*capacity*/) {}

 private:
  static constexpr QueueHandle kAnyQueue = ~QueueHandle{0};
  void settle_locked();
  // Cached blocks beyond the cache limit, taken off the free lists (to give back unlocked).
  std::vector<std::pair<void*, std::size_t>> take_beyond_limit_locked();
  // The smallest cached block of (spilled, queue) that serves `capacity`, or null.
  void* take_cached_locked(bool spilled, QueueHandle queue, std::size_t capacity);

  mutable std::mutex mutex_;
  struct ListKey {
    bool spilled;
    QueueHandle queue;
    std::size_t capacity;
    bool operator<(const ListKey& o) const {
      return std::tie(spilled, queue, capacity) < std::tie(o.spilled, o.queue, o.capacity);
    }
  };
  struct Retained {
    void* block;
    std::size_t capacity;
    bool spilled;
  };
  std::map<ListKey, std::vector<void*>> free_lists_;
  std::vector<Retained> retained_;
  // Blocks handed out for a smaller request than their capacity: release() is told
  // the request's size, and must give back (and count) the whole block.
  std::unordered_map<void*, std::size_t> oversized_;
  PoolStats stats_;
  std::size_t cache_limit_ = ~std::size_t{0};
  void note_peaks_locked();
};

// The pool's rules without memory, for planning what a circuit will hold
// (ckks::Simulator::track_memory): blocks of MemoryPool::capacity_for, a
// released block cached (within the cache limit) and reused by the smallest
// request it may serve (largest_reusable_for), as MemoryPool does. held() is
// what the real pool would have taken from the system: in use and cached.
class PoolModel {
 public:
  explicit PoolModel(std::size_t cache_limit = ~std::size_t{0}) : cache_limit_(cache_limit) {}
  // Takes a block for `bytes`; returns its capacity, which release() gives back.
  std::size_t allocate(std::size_t bytes);
  void release(std::size_t capacity);
  std::size_t in_use() const { return in_use_; }
  std::size_t held() const { return in_use_ + cached_bytes_; }
  std::size_t peak_in_use() const { return peak_in_use_; }
  std::size_t peak_held() const { return peak_held_; }

 private:
  std::size_t cache_limit_;
  std::map<std::size_t, std::size_t> cached_;  // capacity -> blocks
  std::size_t in_use_ = 0, cached_bytes_ = 0, peak_in_use_ = 0, peak_held_ = 0;
};

// The process-wide pool of host memory.
MemoryPool& host_pool();

// Spilling (base/spill.h): while on, host blocks of whole pages that the pool
// would take from the system beyond `ram_limit_bytes` of resident blocks
// come from files in `directory` instead. Blocks already handed out stay
// where they are; turning it off (or on again elsewhere) affects only later
// allocations. Raises InvalidArgument when the directory is unusable.
void start_host_spill(std::size_t ram_limit_bytes, const std::string& directory);
void stop_host_spill();
// While at least one scope is open (process-wide, any thread) and spilling is on,
// host blocks of whole pages come from the spill files whatever the RAM limit: cached
// spilled blocks or new ones, never cached RAM blocks. For data made once and read
// rarely (a transform's encoded diagonals, reused by every input), so that the RAM
// under the limit serves the blocks rewritten all the time (temporaries), whose pages
// in a file the kernel would keep writing back. Freed spilled blocks serve other
// requests only where a new block would be spilled too.
void begin_cold_host_allocations();
void end_cold_host_allocations();
// Whether a cold scope is open now (a seeded key made in one expands cold too).
bool cold_host_allocations_open();
// A cold scope for the lifetime of the object, when `open` (else nothing).
class ColdHostAllocations {
 public:
  explicit ColdHostAllocations(bool open = true) : open_(open) {
    if (open_) begin_cold_host_allocations();
  }
  ~ColdHostAllocations() {
    if (open_) end_cold_host_allocations();
  }
  ColdHostAllocations(const ColdHostAllocations&) = delete;
  ColdHostAllocations& operator=(const ColdHostAllocations&) = delete;

 private:
  bool open_;
};
// Asks the kernel to start reading a host block's pages from its spill file in the
// background, so that the disk works while the caller computes on what it already
// holds (a linear transform reads its next giant step's diagonals this way). Returns at
// once; a no-op unless blocks may live in spill files.
void prefetch_host_block(const void* block, std::size_t bytes);

struct HostSpillStats {
  bool active = false;
  std::size_t ram_limit = 0;
  std::string directory;
  std::size_t bytes_resident = 0;  // blocks the pool holds in RAM (in use or cached)
  std::size_t bytes_spilled = 0;   // blocks the pool holds in files (in use or cached)
  std::size_t bytes_mapped = 0;    // file space mapped so far
};
HostSpillStats host_spill_stats();

// The pool for a device: the host pool, or the one its kind registered
// (device.h); raises NotSupported for a kind without a pool.
MemoryPool& pool_for(const Device& device);

}  // namespace ringfire
