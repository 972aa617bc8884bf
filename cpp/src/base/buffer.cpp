#include "ringfire/base/buffer.h"

#include <utility>

#include "ringfire/base/device_copy.h"

namespace ringfire {

Buffer::Buffer(std::size_t words, Device device) : words_(words), device_(device), queue_(current_queue()) {
  pool_ = &pool_for(device);
  data_ = static_cast<std::uint64_t*>(pool_->allocate(words * sizeof(std::uint64_t), queue_));
}

Buffer::~Buffer() { reset(); }

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      words_(std::exchange(other.words_, 0)),
      device_(other.device_),
      pool_(std::exchange(other.pool_, nullptr)),
      queue_(other.queue_),
      owner_(std::move(other.owner_)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    words_ = std::exchange(other.words_, 0);
    device_ = other.device_;
    pool_ = std::exchange(other.pool_, nullptr);
    queue_ = other.queue_;
    owner_ = std::move(other.owner_);
  }
  return *this;
}

Buffer Buffer::view(const std::uint64_t* data, std::size_t words, std::shared_ptr<const void> owner) {
  Buffer b;
  b.data_ = const_cast<std::uint64_t*>(data);  // read only: see the header
  b.words_ = words;
  b.device_ = Device::cpu();
  b.owner_ = std::move(owner);
  return b;
}

Buffer Buffer::clone() const { return to(device_); }

Buffer Buffer::to(const Device& device) const {
  Buffer copy(words_, device);
  copy_between(copy.data_, device, data_, device_, words_ * sizeof(std::uint64_t));
  return copy;
}

void Buffer::reset() {
  if (pool_ != nullptr && data_ != nullptr) pool_->release(data_, words_ * sizeof(std::uint64_t), queue_);
  data_ = nullptr;
  words_ = 0;
  pool_ = nullptr;
  owner_.reset();
}

}  // namespace ringfire
