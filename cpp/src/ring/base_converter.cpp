#include "ringfire/ring/base_converter.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/multiword.h"

namespace ringfire {


BaseConverter::BaseConverter(RnsBasePtr from, RnsBasePtr to) : from_(std::move(from)), to_(std::move(to)) {
  require(from_ && to_, "ring.BaseConverter", "bases must not be null");
  require(from_->n() == to_->n(), "ring.BaseConverter",
          "bases differ in N: " + std::to_string(from_->n()) + " vs " + std::to_string(to_->n()));
  const std::size_t src = from_->size(), dst = to_->size();
  qhat_mod_p_.resize(src * dst);
  q_mod_p_.resize(dst);
  for (std::size_t j = 0; j < dst; ++j) {
    const Modulus& p = to_->modulus(j);
    for (std::size_t i = 0; i < src; ++i) qhat_mod_p_[j * src + i] = multiword::mod_modulus(from_->qhat(i), src, p);
    q_mod_p_[j] = multiword::mod_modulus(from_->product().data(), src, p);
  }
  q_reciprocal_.resize(src);
  for (std::size_t i = 0; i < src; ++i) q_reciprocal_[i] = 1.0 / static_cast<double>(from_->modulus(i).value());
}

}  // namespace ringfire
