// The bootstrapping circuit's operations on ciphertexts (bootstrap_circuit.h
// names what an `Ops` supplies): the evaluator, the keys, device-resident
// transforms and the phase timer, for the bootstrap and the lookup circuit
// (functional_bootstrap.cpp) alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "bootstrap_circuit.h"
#include "ringfire/ckks/bootstrap.h"
#include "ringfire/ckks/evaluator.h"

namespace ringfire::ckks::detail {

struct BootstrapOps {
  using Value = Ciphertext;
  const Bootstrapper& boot;
  const Evaluator& ev;
  const RelinKey& relin;
  const BootstrapKeys& keys;
  BootstrapTimings* timings;
  Device device;
  mutable std::chrono::steady_clock::time_point mark = std::chrono::steady_clock::now();

  void end_phase(BootstrapPhase phase) const {
    if (timings == nullptr) return;
    backend_for(device).synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - mark).count();
    mark = now;
    switch (phase) {
      case BootstrapPhase::mod_raise: timings->mod_raise += seconds; break;
      case BootstrapPhase::coeffs_to_slots: timings->coeffs_to_slots += seconds; break;
      case BootstrapPhase::eval_mod: timings->eval_mod += seconds; break;
      case BootstrapPhase::slots_to_coeffs: timings->slots_to_coeffs += seconds; break;
    }
  }

  static std::size_t level(const Value& v) { return v.level(); }
  static double scale(const Value& v) { return v.scale(); }
  static void set_scale(Value& v, double s) { v.set_scale(s); }
  static Value copy(const Value& v) { return v.clone(); }
  Value mod_switch(const Value& v, std::size_t level) const { return ev.mod_switch(v, level); }
  Value multiply_integer(const Value& v, std::int64_t k) const { return ev.multiply_integer(v, k); }
  Value to_sparse(const Value& v) const { return detail::switch_to_sparse(v, keys.to_sparse); }
  Value from_sparse(const Value& v) const { return ev.switch_key(v, keys.from_sparse); }
  Value mod_raise(const Value& v, std::size_t level) const { return ev.mod_raise(v, level); }
  Value rotate(const Value& v, long long steps) const { return ev.rotate(v, steps, keys.galois); }
  Value add(const Value& a, const Value& b) const { return ev.add(a, b); }
  Value sub(const Value& a, const Value& b) const { return ev.sub(a, b); }
  Value conjugate(const Value& v) const { return ev.conjugate(v, keys.galois); }
  Value multiply_by_i(const Value& v, bool negative) const { return ev.multiply_by_i(v, negative); }
  Value linear_transform(const Value& v, const LinearTransform& lt, bool rescale) const {
    return ev.linear_transform(v, boot.resident_on(lt, v.device()), keys.galois, rescale);
  }
  Value evaluate_polynomial(const Value& v, const Polynomial& p, double target) const {
    return ev.evaluate_polynomial(v, p, relin, target);
  }
  Value square(const Value& v) const { return ev.square(v); }
  Value relinearize(const Value& v) const { return ev.relinearize(v, relin); }
  Value rescale(const Value& v) const { return ev.rescale(v); }
  Value relinearize_rescale(const Value& v) const { return ev.relinearize_rescale(v, relin); }
  Value weighted_sum(const std::vector<const Value*>& in, const std::vector<double>& v, std::size_t level,
                     double scale, double constant) const {
    return ev.weighted_sum(in, v, level, scale, constant);
  }
};

}  // namespace ringfire::ckks::detail
