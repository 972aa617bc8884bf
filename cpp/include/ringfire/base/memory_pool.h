// Caching memory pool (seed 000 §III-E): freed blocks are kept on free lists
// keyed by capacity and handed out again for requests of the same capacity,
// so repeated polynomial temporaries never touch the system allocator.
// Thread-safe. One pool per device; the host pool always exists.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "ringfire/base/device.h"

namespace ringfire {

struct PoolStats {
  std::size_t hits = 0;          // requests served from a free list
  std::size_t misses = 0;        // requests that went to the system allocator
  std::size_t bytes_in_use = 0;  // handed out and not yet released
  std::size_t bytes_cached = 0;  // held on free lists
};

class MemoryPool {
 public:
  virtual ~MemoryPool() = default;

  // Returns a block of at least `bytes` bytes (64-byte aligned); never null.
  void* allocate(std::size_t bytes);
  // Gives a block back to the free list of its capacity.
  void release(void* block, std::size_t bytes);
  // Returns every cached block to the system.
  void flush();
  PoolStats stats() const;
  // Capacity a request of `bytes` is rounded up to.
  static std::size_t capacity_for(std::size_t bytes);

 protected:
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_free(void* block) = 0;

 private:
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_lists_;
  PoolStats stats_;
};

// The process-wide pool of host memory.
MemoryPool& host_pool();

// The pool for a device; raises NotSupported for devices without a backend.
MemoryPool& pool_for(const Device& device);

// Backends of other devices install their pool here when they load.
void register_pool(DeviceType type, MemoryPool* pool);

}  // namespace ringfire
