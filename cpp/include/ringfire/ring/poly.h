// Poly: one polynomial in RNS form, limbs x N uint64 words (limb-major) in a
// Buffer on a Device, tagged with its base and its form.
#pragma once

#include <cstddef>

#include "ringfire/base/buffer.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire {

class Poly {
 public:
  // A zero polynomial (coefficient form unless given) over `base` on `device`.
  Poly(RnsBasePtr base, Form form = Form::coeff, Device device = Device::cpu());

  const RnsBase& base() const { return *base_; }
  const RnsBasePtr& base_ptr() const { return base_; }
  Form form() const { return form_; }
  void set_form(Form form) { form_ = form; }
  const Device& device() const { return buffer_.device(); }
  std::size_t n() const { return base_->n(); }
  std::size_t limbs() const { return base_->size(); }
  std::size_t words() const { return buffer_.size(); }

  u64* data() { return buffer_.data(); }
  const u64* data() const { return buffer_.data(); }
  // Start of limb i (N words).
  u64* limb(std::size_t i) { return data() + i * n(); }
  const u64* limb(std::size_t i) const { return data() + i * n(); }

  // An independent copy on the same device.
  Poly clone() const;

 private:
  Poly(RnsBasePtr base, Form form, Buffer buffer);

  RnsBasePtr base_;
  Form form_;
  Buffer buffer_;
};

}  // namespace ringfire
