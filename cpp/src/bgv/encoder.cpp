#include "ringfire/bgv/encoder.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire::bgv {

namespace {

constexpr const char* kOp = "bgv.BatchEncoder";

RnsBasePtr batching_base(std::size_t n, const Modulus& t) {
  require(is_ntt_friendly(t.value(), n), kOp,
          "the plaintext modulus " + std::to_string(t.value()) + " cannot batch N=" + std::to_string(n) +
              " slots: batching needs a prime t = 1 (mod " + std::to_string(2 * n) +
              "); use coefficient encoding, or plain_bits=... to choose such a prime");
  return std::make_shared<const RnsBase>(n, std::vector<u64>{t.value()});
}

// The NTT mod t runs on the host backend.
void ntt(std::vector<u64>& data, const RnsBase& base, bool forward) {
  Backend& be = backend_for(Device::cpu());
  if (forward) be.ntt_forward(data.data(), 1, base);
  else be.ntt_inverse(data.data(), 1, base);
}

}  // namespace

BatchEncoder::BatchEncoder(std::size_t poly_degree, const Modulus& t)
    : base_(batching_base(poly_degree, t)), slot_position_(poly_degree) {
  // The forward NTT leaves m(psi^(2 br(j) + 1)) at index j (bit-reversed
  // order), so the root zeta^e (e odd) sits at index br((e - 1) / 2).
  const std::size_t n = poly_degree, half = n / 2, two_n = 2 * n;
  std::size_t power = 1;  // 5^i mod 2N
  for (std::size_t i = 0; i < half; ++i) {
    slot_position_[i] = reverse_bits((power - 1) / 2, base_->ntt(0).log_n());
    slot_position_[half + i] = reverse_bits((two_n - power - 1) / 2, base_->ntt(0).log_n());
    power = (power * 5) % two_n;
  }
}

std::vector<u64> BatchEncoder::encode(const std::vector<u64>& slots) const {
  const std::size_t n = base_->n();
  const u64 t = base_->modulus(0).value();
  require(slots.size() == n, kOp, "expected " + std::to_string(n) + " slot values, got " + std::to_string(slots.size()));
  std::vector<u64> eval(n);
  for (std::size_t i = 0; i < n; ++i) {
    require(slots[i] < t, kOp, [&] { return "slot value " + std::to_string(slots[i]) + " is not below t=" + std::to_string(t); });
    eval[slot_position_[i]] = slots[i];
  }
  ntt(eval, *base_, false);
  return eval;
}

std::vector<u64> BatchEncoder::decode(const std::vector<u64>& coefficients) const {
  const std::size_t n = base_->n();
  const u64 t = base_->modulus(0).value();
  require(coefficients.size() == n, kOp,
          "expected " + std::to_string(n) + " coefficients, got " + std::to_string(coefficients.size()));
  std::vector<u64> eval(coefficients);
  for (u64 c : eval)
    require(c < t, kOp, [&] { return "coefficient " + std::to_string(c) + " is not below t=" + std::to_string(t); });
  ntt(eval, *base_, true);
  std::vector<u64> slots(n);
  for (std::size_t i = 0; i < n; ++i) slots[i] = eval[slot_position_[i]];
  return slots;
}

}  // namespace ringfire::bgv
