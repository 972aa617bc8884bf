// Memory for evaluation keys that are streamed once per bootstrap (tens of
// MB): 2 MiB-aligned and advised onto transparent huge pages, so streaming
// them walks a few dozen page-table entries instead of thousands.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include <sys/mman.h>

namespace ringfire::tfhe {

template <class T>
class KeyBuffer {
 public:
  KeyBuffer() = default;
  explicit KeyBuffer(std::size_t count) : size_(count) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    const std::size_t bytes = (count * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, bytes == 0 ? kHuge : bytes);
    if (p == nullptr) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_ = 0;
};

}  // namespace ringfire::tfhe
