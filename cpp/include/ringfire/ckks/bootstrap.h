// CKKS bootstrapping: a ciphertext at any level comes back at the top of the
// user's chain with the same slots (up to the bootstrapping error).
//
// The circuit (src/ckks/bootstrap_circuit.h), as the best peers run it:
//   1. ScaleDown: drop to level 0; multiply by 2^j so that q_0 / scale is the
//      configured message ratio (no level).
//   2. Sparse-secret encapsulation (Bossuat, Troncoso, Hubaux 2022): switch
//      to an ephemeral secret of Hamming weight h (32) at level 0,
//   3. ModRaise: lift the level-0 polynomials to the whole chain. The
//      ciphertext now holds t = m + q_0 I with |I| <= (h + 1) / 2 by
//      construction (and below K but with probability ~2^-139, see
//      failure_log2),
//   4. and switch back to the main secret at the top level.
//   5. (Sparse packing) trace: the sum of rotations by multiples of n keeps
//      the subring the slots live in.
//   6. CoeffsToSlots: the inverse DFT as `cts_levels` BSGS linear transforms
//      (bootstrap_dft.h), scaled so the slots hold t_i / (K q_0), then a
//      conjugation splits real and imaginary parts (sparse packing packs
//      both into 2n slots).
//   7. EvalMod: a Chebyshev approximation of a * cos(2 pi (K y - 1/4) / 2^r)
//      on [-1, 1], r double-angle steps c <- 2 c^2 - a^2, and optionally an
//      arcsine correction. The amplitude folds in q_0 / (2 pi scale), so the
//      result holds m_i / scale: the message's coefficients.
//   8. SlotsToCoeffs: the forward DFT as `stc_levels` transforms, the last
//      one landing on the canonical scale of the user's top level.
// Levels: the parameters reserve cts_levels + EvalMod's depth + stc_levels
// top primes for it (Parameters::reserved_levels); the result always sits at
// user_max_level(). Input slots must be bounded: |x| <= 1 is the documented
// range, beyond it EvalMod's approximation (and its K) no longer holds.
//
// SlotsToCoeffs first (`stc_first`, full packing): step 8 runs before step 1,
// on the user's lowest levels (stc_levels .. 1), where it is cheapest: it
// turns the slots z into the coefficients (Re z, Im z), which CoeffsToSlots
// brings back to slots after ModRaise and EvalMod cleans. Only CoeffsToSlots
// and EvalMod are reserved; the input must be at level >= stc_levels, and
// EvalMod's arcsine lands the result on the target scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringfire/ckks/evaluator.h"
#include "ringfire/ckks/linear_transform.h"
#include "ringfire/ckks/polynomial.h"
#include "ringfire/ckks/simulator.h"
#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire::ckks {

struct BootstrapConfig {
  std::size_t slots = 0;            // 0: N/2 (full packing); else a power of two below N/2
  std::size_t cts_levels = 4;       // CoeffsToSlots level budget (the top primes)
  std::size_t stc_levels = 3;       // SlotsToCoeffs level budget (just above the user's chain)
  double k = 16.0;                  // EvalMod's range: |I| < K after ModRaise
  std::size_t double_angles = 3;    // r
  std::size_t cos_degree = 0;       // 0: the least that reaches 2^-50 within EvalMod's levels
  std::size_t arcsine_degree = 0;   // 0: none; else an odd degree (3, 5, 7)
  int log_message_ratio = 0;        // 0: keep the input's q_0 / scale; else raise it to 2^r when above
  std::size_t ephemeral_weight = 32;  // h of the ephemeral secret
  bool stc_first = false;           // SlotsToCoeffs before ModRaise, on the user's levels (full packing)
  // The DFTs' rotations chained (LinearTransform::Evaluation::chained): about a
  // third of the Galois keys, for slower CoeffsToSlots and SlotsToCoeffs.
  bool chained_rotations = false;
};

// The evaluation keys bootstrapping needs besides the relinearization key:
// rotations (CoeffsToSlots, SlotsToCoeffs, trace, repacking) and the
// conjugation, each made only as high as the level it is used at, and the
// two encapsulation keys.
struct BootstrapKeys {
  GaloisKeys galois;
  KeySwitchKey to_sparse;    // s -> ephemeral s', over q_0 p_0 (encapsulation_context)
  KeySwitchKey from_sparse;  // s' -> s, top level

  // The same keys on `device` (copies).
  BootstrapKeys to(const Device& device) const {
    return BootstrapKeys{galois.to(device), to_sparse.to(device), from_sparse.to(device)};
  }
  // Expands every seeded key's a_j now (rlwe/keys.h): the fastest bootstraps,
  // for twice the keys' memory.
  void expand() const {
    galois.expand();
    to_sparse.expand();
    from_sparse.expand();
  }
  // Bootstrapping keys made by keygen or loaded seeded expand per use by default
  // (KeySwitchKey::set_expand_per_use): each is used once or twice a bootstrap,
  // so keeping their a_j would double their memory (N16_BOOT: 3.5 GiB) to save
  // about a tenth of a bootstrap's time. expand() keeps them instead.
  void set_expand_per_use(bool per_use) {
    galois.set_expand_per_use(per_use);
    to_sparse.set_expand_per_use(per_use);
    from_sparse.set_expand_per_use(per_use);
  }
  std::uint64_t resident_bytes() const {
    return galois.resident_bytes() + to_sparse.resident_bytes() + from_sparse.resident_bytes();
  }
};

// The phases of one bootstrap, and their wall-clock seconds when asked for
// (GPU phases are synchronized at their ends, which costs a little).
enum class BootstrapPhase { mod_raise, coeffs_to_slots, eval_mod, slots_to_coeffs };
struct BootstrapTimings {
  double mod_raise = 0.0, coeffs_to_slots = 0.0, eval_mod = 0.0, slots_to_coeffs = 0.0;
};

// What a bootstrap costs and gives, known before any key exists.
struct BootstrapPlan {
  std::size_t input_level_min = 0;      // the lowest input level (stc_levels when SlotsToCoeffs runs first)
  std::size_t output_level = 0;         // the user's top level
  std::size_t levels_consumed = 0;      // the reserved levels (and the user's lowest, with stc_first)
  std::size_t cts_levels = 0, eval_mod_levels = 0, stc_levels = 0;
  std::size_t cos_degree = 0, arcsine_degree = 0;
  double cos_fit_error_log2 = 0.0;      // EvalMod polynomial's max error (units of its amplitude)
  std::size_t rotation_keys = 0;        // Galois keys, conjugation included
  std::uint64_t key_bytes = 0;          // Galois + encapsulation keys, in memory
  std::uint64_t plaintext_bytes = 0;    // the precomputed DFT diagonals
  std::size_t diagonals = 0;
  // The circuit's ciphertexts and the evaluator's temporaries at their peak, in
  // the host pool's blocks (Simulator::track_memory): in use at once, and with
  // the blocks the pool keeps cached for reuse (under its cache limit when
  // planned), which is what the bootstrap adds to the process's memory.
  std::uint64_t temporary_in_use_bytes = 0;
  std::uint64_t temporary_bytes = 0;
  double failure_log2 = 0.0;            // log2 P(some |I| >= K), union over the N coefficients
  SimCounts counts;                     // operations of one bootstrap
};

class Bootstrapper {
 public:
  // Raises InvalidArgument when the context does not reserve exactly the
  // levels the configuration needs, or the configuration is out of range.
  Bootstrapper(ContextPtr context, const BootstrapConfig& config);

  const ContextPtr& context() const { return context_; }
  const BootstrapConfig& config() const { return config_; }
  // Raises InvalidArgument naming the first rotation `keys` lack (keys made
  // for the other chained_rotations setting, or not for bootstrapping).
  void check_keys(const BootstrapKeys& keys, const char* op) const;
  // How the DFTs' transforms rotate (config().chained_rotations).
  LinearTransform::Evaluation evaluation() const {
    return config_.chained_rotations ? LinearTransform::Evaluation::chained : LinearTransform::Evaluation::hoisted;
  }
  std::size_t slots() const { return slots_; }
  std::size_t output_level() const { return context_->user_max_level(); }
  // The lowest level a ciphertext can be bootstrapped from: stc_levels when
  // SlotsToCoeffs runs first (on the levels below), else 0.
  std::size_t input_level_min() const { return config_.stc_first ? config_.stc_levels : 0; }

  // Rotation steps with the level their key is needed at (the highest use).
  const std::map<long long, std::size_t>& rotation_levels() const { return rotation_levels_; }
  // The level of the conjugation key.
  std::size_t conjugation_level() const { return conjugation_level_; }
  BootstrapPlan plan() const;

  // The bootstrapped ciphertext at output_level(), landing on the canonical
  // scale there (or on `target_scale`, which re-encodes the last transform).
  // With `timings`, each phase's time is recorded there. `bound`: the slots
  // hold |x| <= bound (an integer >= 1), refreshed as x / bound and multiplied
  // back, so the full precision (relative to bound) holds past |x| = 1.
  Ciphertext bootstrap(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin, const BootstrapKeys& keys,
                       double target_scale = 0.0, BootstrapTimings* timings = nullptr,
                       std::int64_t bound = 1) const;
  // Meta-BTS (Bae et al. 2022): bootstrap, bootstrap the error scaled by
  // 2^correction_bits, subtract. The result has scale 2^correction_bits times
  // the input's (the precision it gained), at output_level().
  Ciphertext bootstrap_twice(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                             const BootstrapKeys& keys, int correction_bits) const;
  // Two real-valued ciphertexts in one bootstrap: z = a + i b is
  // bootstrapped (landing at half the canonical scale), then a = (z + z̄)/2
  // and b = (z - z̄)/(2i) are split with one conjugation and no level, each
  // on the canonical scale of output_level(). a and b must share level and
  // scale; the result holds real values. `bound` as for bootstrap().
  std::pair<Ciphertext, Ciphertext> bootstrap_pair(const Evaluator& ev, const Ciphertext& a, const Ciphertext& b,
                                                   const RelinKey& relin, const BootstrapKeys& keys,
                                                   std::int64_t bound = 1) const;
  // The same circuit on placeholders.
  SimCiphertext bootstrap(const Simulator& sim, const SimCiphertext& ct) const;

  // Functional bootstrapping (Alexandru, Kim, Polyakov, CRYPTO 2025; the
  // circuit in src/ckks/functional_bootstrap.cpp): the slots hold integers m
  // (real, within a small error), read modulo p = table.size() (2 .. 4096);
  // the result holds table[m mod p] in every slot, refreshed like a
  // bootstrap, at functional_output_level(p) on the canonical scale. Needs
  // an input at level stc_levels or above (SlotsToCoeffs runs first, on the
  // user's lowest levels, whatever stc_first says); with sparse packing (n
  // slots) it reads an n-periodic vector and returns one. The
  // input's error e (|e| well below 1/2) is not rounded away: it reaches the
  // output times about the table's largest step (the noise estimate says it).
  // `flat` (p a power of two): the table's curve is made flat at every
  // integer (Hermite: sin(2 pi x) / (2 pi) times the interpolated slope is
  // subtracted, sin(2 pi x) being Im z^p), so e reaches the output as about
  // e^2 times the table's curvature: integers come out cleaned. One level
  // more (functional_output_level(p, true)).
  Ciphertext functional_bootstrap(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                  const BootstrapKeys& keys, const std::vector<double>& table,
                                  BootstrapTimings* timings = nullptr, bool flat = false) const;
  // Several tables of one size on the same input (multi-value functional
  // bootstrapping): the circuit runs once up to z's powers; each table adds
  // weighted sums, a conjugation and the scale's adjustment.
  std::vector<Ciphertext> functional_bootstrap(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                               const BootstrapKeys& keys,
                                               const std::vector<std::vector<double>>& tables,
                                               BootstrapTimings* timings = nullptr, bool flat = false) const;
  // Both parts of complex slots a + i b (a and b integers): the tables of a
  // and of b as two lists of real ciphertexts, from one SlotsToCoeffs,
  // ModRaise and CoeffsToSlots (the lookup itself runs once per part).
  std::pair<std::vector<Ciphertext>, std::vector<Ciphertext>> functional_bootstrap_pair(
      const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin, const BootstrapKeys& keys,
      const std::vector<std::vector<double>>& tables, BootstrapTimings* timings = nullptr, bool flat = false) const;
  // Where functional_bootstrap lands for a table of p entries: the user's top
  // level, or lower when the table's polynomial (degree p/2, ceil(log2(p/2 + 1))
  // levels) and the scale's adjustment (one level) need more than EvalMod's
  // arcsine and SlotsToCoeffs leave.
  // Raises when the chain is too short for it.
  std::size_t functional_output_level(std::size_t table_size, bool flat = false) const;
  std::size_t functional_input_level_min() const { return config_.stc_levels; }

  // Internals the circuit reads.
  const std::vector<LinearTransform>& coeffs_to_slots() const { return cts_; }
  const LinearTransform& slots_to_coeffs(std::size_t i, double target_scale) const;
  std::size_t stc_count() const { return stc_.size(); }
  const Polynomial& cos_polynomial() const { return cos_; }
  double eval_mod_scale() const { return eval_mod_scale_; }
  double stc_input_scale() const { return stc_input_scale_; }
  // One of the transforms above with its diagonals on `device`: uploaded at
  // the first bootstrap there and kept for the next ones (the DFT plaintexts
  // are GiBs at N = 2^16: moving them per call would cost more than the
  // bootstrap's arithmetic on a GPU). The host's is the transform itself.
  const LinearTransform& resident_on(const LinearTransform& transform, const Device& device) const;

 private:
  void build_transforms();
  LinearTransform make_stc_last(double target_scale) const;
  double stc_scale(std::size_t i, double target_scale) const;

  ContextPtr context_;
  BootstrapConfig config_;
  std::size_t slots_, eval_mod_levels_ = 0;
  std::size_t cos_levels_ = 0;  // EvalMod's levels left to its cosine (functional bootstrapping fits there too)
  Polynomial cos_;
  double cos_error_log2_ = 0.0, eval_mod_scale_ = 0.0, stc_input_scale_ = 0.0;
  std::vector<LinearTransform> cts_, stc_;
  std::map<long long, std::size_t> rotation_levels_;
  std::size_t conjugation_level_ = 0;
  mutable std::mutex retarget_mutex_;
  mutable std::map<double, std::shared_ptr<const LinearTransform>> retargeted_;
  mutable std::mutex resident_mutex_;
  mutable std::map<std::pair<const LinearTransform*, std::string>, std::unique_ptr<const LinearTransform>> resident_;

  // Functional bootstrapping's own parts, made at its first use (bootstraps
  // alone never pay for them): the fits of cos and sin(2 pi K y / 2^r), the
  // SlotsToCoeffs-first transforms after the first, and the first per the
  // encoding scale that lands the coefficients on m q_0 / p.
  struct FunctionalParts;
  const FunctionalParts& functional_parts() const;
  std::vector<Ciphertext> functional_circuit(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                             const BootstrapKeys& keys, const std::vector<std::vector<double>>& tables,
                                             BootstrapTimings* timings, bool imaginary_too, bool flat) const;
  // The first transform at this encoding scale, and whether the cache keeps it.
  std::pair<std::shared_ptr<const LinearTransform>, bool> functional_first_stc(double encoding_scale) const;
  mutable std::once_flag functional_once_;
  mutable std::shared_ptr<const FunctionalParts> functional_;
  mutable std::mutex functional_mutex_;
  mutable std::map<double, std::shared_ptr<const LinearTransform>> functional_first_;
};

// The context of the key into the ephemeral sparse secret: q_0 and the first
// special prime only. A sparse (h = 32) secret is secure only under a small
// modulus: Bossuat, Troncoso and Hubaux size the encapsulation for q_0 p_0
// (about 120 bits at N = 2^16), as Lattigo does; the same key over q_0 and
// all of P would expose the ephemeral secret to sparse-secret attacks. The
// level-0 data is the same in both contexts (same primes, same N), so the
// key switch runs on the main ciphertext's q_0 limb.
RlweContextPtr encapsulation_context(const RlweContext& main);

// The keys of Bootstrapper::rotation_levels() and the encapsulation keys.
BootstrapKeys generate_bootstrap_keys(const Bootstrapper& bootstrapper, const SecretKey& secret, Prng& prng);

}  // namespace ringfire::ckks
