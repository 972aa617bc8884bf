#include "ringfire/ring/poly.h"

#include <algorithm>
#include <utility>

#include "ringfire/base/errors.h"

namespace ringfire {

Poly::Poly(RnsBasePtr base, Form form, Device device)
    : base_(std::move(base)), form_(form), buffer_(base_ ? base_->size() * base_->n() : 0, device) {
  require(base_ != nullptr, "ring.Poly", "base must not be null");
  if (device.type != DeviceType::cpu)
    throw_not_supported("ring.Poly", "zero-initialising device memory needs the device backend");
  std::fill(buffer_.data(), buffer_.data() + buffer_.size(), u64{0});
}

Poly::Poly(RnsBasePtr base, Form form, Buffer buffer)
    : base_(std::move(base)), form_(form), buffer_(std::move(buffer)) {}

Poly Poly::clone() const { return Poly(base_, form_, buffer_.clone()); }

}  // namespace ringfire
