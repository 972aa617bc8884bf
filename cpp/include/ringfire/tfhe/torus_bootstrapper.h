// Programmable bootstrapping on the 64-bit torus (KS-PBS, torus_params.h):
// the key switch to the small key, the centred modulus switch to 2N, the blind
// rotation of a test polynomial by the switched phase, and the sample
// extraction back to the big key.
//
// Blind rotation (CGGI with a binary secret): acc = X^-b (0, TV); for each i,
// acc += BK_i [x] (X^{a_i} acc - acc), where [x] is the external product
// with RGSW(s_i): both polynomials of the difference are cut into signed
// digits, transformed (negacyclic_fft.h), multiplied by the key's rows in the
// FFT domain and summed there, and transformed back once per output
// polynomial: 2 L forward and 2 backward transforms per coefficient.
//
// Multi-bit (TorusParams::grouping g > 1; Bergerat et al., ASIACRYPT 2023,
// as tfhe-rs runs it): the key holds RGSW([s's group k is p]) for each
// pattern p != 0 of g bits, and one step turns acc into X^{<a, s>} acc for the
// whole group: acc += sum_p (X^{m_p} - 1) (BK_{k,p} [x] acc), m_p the sum of
// the a_t that p selects. Since products commute, the monomials are applied in
// the FFT domain, where X^m is a table lookup (NegacyclicFft::exponents): the
// accumulator's digits are transformed once per group, not once per bit, so a
// step costs the transforms of one bit plus 2^g - 1 key products -- the
// transforms, most of a one-bit step, are paid n / g times. Its added noise is
// 2 (2^g - 1) key products per g bits instead of one per bit (key and FFT
// errors: far below the modulus switch's at the presets). The
// constant coefficient of the result is TV[phase] for phase < N and
// -TV[phase - N] above (negacyclic), as in the 32-bit engine (bootstrapper.h).
#pragma once

#include <cstdint>
#include <memory>

#include "ringfire/tfhe/torus_keys.h"

namespace ringfire::tfhe {

class TorusBootstrapper {
 public:
  // Generates the evaluation keys of `key`.
  TorusBootstrapper(const TorusSecretKey& key, Prng& prng);
  // From saved keys: each key's seed and bodies (TorusBootstrapKey::bodies(),
  // TorusKeySwitchKey::bodies()).
  TorusBootstrapper(const TorusParams& params, const Prng::Seed& bootstrap_seed, const u64* bootstrap_bodies,
                    const Prng::Seed& key_switch_seed, const u64* key_switch_bodies);

  const TorusParams& params() const { return params_; }

  // count ciphertexts (count x (N + 1) words) through the test vector (N
  // words), on up to `threads` threads (0: the library's count). With
  // `outputs` > 1 (many-LUT), each switched phase is rounded to a multiple of
  // `outputs` and out holds count x outputs ciphertexts, the k-th of each the
  // coefficient k of X^-phase TV, i.e. TV[phase + k] (negacyclic).
  void bootstrap_many(const u64* in, std::size_t count, const u64* test_vector, u64* out, int threads = 0,
                      std::size_t outputs = 1) const;

  // The key switch and the (centred) modulus switch alone: switched gets n + 1
  // words mod 2N, multiples of `outputs` (rounded to 2N / outputs first, for
  // many-LUT); small (if not null) the key switch's n + 1 words (mod 2^32, as
  // multiples of 2^32 mod 2^64: phases under s stay comparable).
  void switch_input(const u64* in, std::uint32_t* switched, u64* small = nullptr, std::size_t outputs = 1) const;
  // The instruction set its transforms and key products run on: avx512 where
  // they run eight lanes wide (NegacyclicFft::wide), else avx2 (or scalar in
  // a build without AVX2). The key switch follows default_isa() likewise.
  Isa isa() const;
  std::size_t bootstrap_key_bytes() const { return bsk_->bytes(); }
  std::size_t key_switch_key_bytes() const { return ksk_->bytes(); }
  const TorusBootstrapKey& bootstrap_key() const { return *bsk_; }
  const TorusKeySwitchKey& key_switch_key() const { return *ksk_; }

 private:
  // Ciphertexts a thread bootstraps in lockstep: each step's key is streamed
  // from memory once for all of them (the rotation's largest memory cost).
  static constexpr std::size_t kBatch = 4;
  static_assert(kBatch <= TorusKeySwitchKey::kBatchLimit);
  // The centred modulus switch of the key switch's n + 1 words (switch_input).
  void switch_modulus(const std::uint32_t* words, std::uint32_t* switched, std::size_t outputs) const;
  struct Scratch;  // one ciphertext's rotation state
  // words: the batch's key-switched ciphertexts (count x (n + 1)), made by
  // bootstrap_many for up to TorusKeySwitchKey::kBatchLimit ciphertexts at once.
  void bootstrap_batch(const std::uint32_t* words, std::size_t count, const u64* test_vector, u64* out,
                       std::size_t outputs, Scratch* batch) const;
  void rotate(const u64* test_vector, Scratch* batch, std::size_t count) const;
  // acc += BK_i [x] (X^{a_i} acc - acc) for each ciphertext of the batch.
  // Each step's transforms fetch the keys of the next one (`ahead`).
  void step(std::size_t i, Scratch* batch, std::size_t count, LinesAhead& ahead) const;
  // acc += sum_p (X^{m_p} - 1) (BK_{group, p} [x] acc): group `group`'s g bits at once.
  void multi_bit_step(std::size_t group, Scratch* batch, std::size_t count, LinesAhead& ahead) const;
  // Starts fetching the keys of step `next` (a coefficient, or a multi-bit
  // group), if there is one, spread over the transforms of one step of
  // `count` ciphertexts.
  void fetch_keys_of(std::size_t next, std::size_t count, LinesAhead& ahead) const;
  // The signed digits of poly (component c of the accumulator or of a
  // difference), transformed into the scratch's spectra.
  void transform_digits(const u64* poly, std::size_t c, Scratch& scratch, LinesAhead& ahead) const;
  // The scratch's two sums transformed back and added to its accumulator.
  void add_sums_back(Scratch& scratch, LinesAhead& ahead) const;

  TorusParams params_;
  std::unique_ptr<NegacyclicFft> fft_;
  std::unique_ptr<TorusKeySwitchKey> ksk_;
  std::unique_ptr<TorusBootstrapKey> bsk_;
  // The fetch slots of one ciphertext's step: those of its 2 L + 2
  // transforms (0: the transforms fetch nothing).
  std::size_t slots_per_step_ = 0;
};

}  // namespace ringfire::tfhe
