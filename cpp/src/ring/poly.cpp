#include "ringfire/ring/poly.h"

#include <utility>

#include "ringfire/base/errors.h"

namespace ringfire {

Poly::Poly(RnsBasePtr base, Form form, Device device)
    : base_(std::move(base)), form_(form), buffer_(base_ ? base_->size() * base_->n() : 0, device) {
  require(base_ != nullptr, "ring.Poly", "base must not be null");
  backend_for(device).zero(buffer_.data(), buffer_.size());
}

Poly::Poly(RnsBasePtr base, Form form, Buffer buffer)
    : base_(std::move(base)), form_(form), buffer_(std::move(buffer)) {}

Poly Poly::clone() const { return Poly(base_, form_, buffer_.clone()); }

}  // namespace ringfire
