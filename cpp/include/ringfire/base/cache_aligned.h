// std::vector storage that starts on a cache line (64 bytes). Kernels that
// load 64 bytes at a time (AVX-512) split every load across two lines when
// their arrays start elsewhere, and where a plain vector's storage starts
// depends on what the heap held before: the same loop then runs at speeds
// that differ by a tenth from one process to the next (measured on the
// blind rotation's transforms, whose speed moved with the environment's size).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace ringfire {

template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) { return static_cast<T*>(::operator new(count * sizeof(T), kAlignment)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlignment); }

  template <class U>
  bool operator==(const CacheAlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace ringfire
