// Buffer: a run of uint64 words on a Device, borrowed from that device's
// caching pool (for the calling thread's current queue) and returned to it on
// destruction. Move-only; copies are explicit (clone, to) so no hidden
// transfers happen. A host buffer may instead view memory something else owns
// (a read-only file mapping: io/key_image.h), kept alive while the view lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ringfire/base/device.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/queue.h"

namespace ringfire {

class Buffer {
 public:
  Buffer() = default;
  // Allocates `words` uint64 words on `device`. Contents are unspecified.
  explicit Buffer(std::size_t words, Device device = Device::cpu());
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // A host buffer over `words` words at `data`, which `owner` keeps valid; the
  // words are read, never written (a mapping may be read-only), and nothing
  // returns to a pool.
  static Buffer view(const std::uint64_t* data, std::size_t words, std::shared_ptr<const void> owner);
  // Whether this buffer views memory it does not own (view()).
  bool is_view() const { return owner_ != nullptr; }

  // A new buffer on the same device holding the same words.
  Buffer clone() const;
  // A copy on `device` (an upload or download; see device_copy.h).
  Buffer to(const Device& device) const;

  std::uint64_t* data() { return data_; }
  const std::uint64_t* data() const { return data_; }
  std::size_t size() const { return words_; }
  const Device& device() const { return device_; }

 private:
  void reset();

  std::uint64_t* data_ = nullptr;
  std::size_t words_ = 0;
  Device device_;
  MemoryPool* pool_ = nullptr;
  QueueHandle queue_ = 0;  // where the block goes back to (see memory_pool.h)
  std::shared_ptr<const void> owner_;  // a view's owner (pool_ is then null)
};

}  // namespace ringfire
