#include "ringfire/base/buffer.h"

#include <cstring>
#include <utility>

#include "ringfire/base/errors.h"

namespace ringfire {

Buffer::Buffer(std::size_t words, Device device) : words_(words), device_(device) {
  pool_ = &pool_for(device);
  data_ = static_cast<std::uint64_t*>(pool_->allocate(words * sizeof(std::uint64_t)));
}

Buffer::~Buffer() { reset(); }

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      words_(std::exchange(other.words_, 0)),
      device_(other.device_),
      pool_(std::exchange(other.pool_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    words_ = std::exchange(other.words_, 0);
    device_ = other.device_;
    pool_ = std::exchange(other.pool_, nullptr);
  }
  return *this;
}

Buffer Buffer::clone() const {
  if (device_.type != DeviceType::cpu)
    throw_not_supported("buffer.clone", "device copies need the device backend");
  Buffer copy(words_, device_);
  if (words_ != 0) std::memcpy(copy.data_, data_, words_ * sizeof(std::uint64_t));
  return copy;
}

void Buffer::reset() {
  if (pool_ != nullptr && data_ != nullptr) pool_->release(data_, words_ * sizeof(std::uint64_t));
  data_ = nullptr;
  words_ = 0;
  pool_ = nullptr;
}

}  // namespace ringfire
