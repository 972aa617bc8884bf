// Programmable bootstrapping (FHEW/TFHE): the blind rotation of a test
// polynomial by an LWE ciphertext's phase, then back to a gate ciphertext.
//
// Blind rotation (GINX/CGGI with a ternary secret, as OpenFHE's binfhe; or
// LMKCDEY where the parameters choose it, automorphism_key.h):
// acc = X^-b TV, then for each LWE coefficient i
//   acc <- acc + acc [x] ((X^{a_i} - 1) BK+_i + (X^{-a_i} - 1) BK-_i),
// where BK+_i, BK-_i are RGSW encryptions of [s_i = 1] and [s_i = -1]
// under the ring secret z and [x] is the external product. One decomposition
// of acc, 2 d_g forward NTTs and 2 inverse NTTs per coefficient; the two keys
// and the monomials meet in the evaluation form: with D_r the digits,
//   acc' = sum_r D_r (BK+_r (X^a - 1) + BK-_r (X^-a - 1))
//        = (X^a - 1) sum_r D_r BK+_r + (X^-a - 1) sum_r D_r BK-_r,
// two lazy sums per output polynomial, reduced once (Montgomery), and one
// product with each monomial (a table of NTT(X^k) - 1 for k < 2N). The
// constant coefficient of the result is TV[phase] for phase < N and
// -TV[phase - N] above (negacyclic).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ringfire/tfhe/automorphism_key.h"
#include "ringfire/tfhe/key_buffer.h"
#include "ringfire/tfhe/lwe.h"
#include "ringfire/tfhe/ntt32.h"

namespace ringfire::tfhe {

// RGSW encryptions of the LWE secret's two indicator vectors, in the
// evaluation layout (Montgomery form), interleaved for one sequential pass
// per coefficient: [i][chunk of 16 slots][row r][b+, a+, b-, a-][16].
//
// Every row is an RLWE pair (A, B) whose A is expanded from one public seed
// (in the order i, indicator t, row r): a row of the a-digits holds its
// message as B = A z + e - m g_r z rather than A + m g_r (the same phase, so
// the same external product), so no row's A depends on the secret and the
// key travels as the seed and the B polynomials: half its size in memory.
class BootstrapKey {
 public:
  BootstrapKey(const SecretKey& key, const Ntt32& ntt, Prng& prng);
  // From its seed and bodies (bodies(): n x 2 x R x N words below Q, in
  // coefficient form), as saved.
  BootstrapKey(const Params& params, const Ntt32& ntt, const Prng::Seed& seed, const u32* bodies);

  const u32* coefficient(std::size_t i) const { return data_.data() + i * stride_; }
  std::size_t bytes() const { return data_.size() * sizeof(u32); }
  const Prng::Seed& seed() const { return seed_; }
  // The B polynomials in coefficient form, [i][t][r][N].
  std::vector<u32> bodies(const Ntt32& ntt) const;

 private:
  void init(const Params& params);
  // Stores row (i, t, r) from A and B in the evaluation form.
  void store_row(const Ntt32& ntt, std::size_t i, std::size_t t, std::size_t r, const u32* ahat, const u32* bhat);

  Params params_;
  Prng::Seed seed_{};
  std::size_t stride_ = 0;
  KeyBuffer<u32> data_;
};

class Bootstrapper {
 public:
  // Generates the evaluation keys (bootstrapping and key-switching) of
  // `key`; the kernels run on `isa` (isa.h; every path gives the same bits).
  Bootstrapper(const SecretKey& key, Prng& prng, Isa isa = default_isa());
  // From loaded keys (io/serialize.h): GINX's or, where the parameters say so, LMKCDEY's.
  Bootstrapper(const Params& params, std::unique_ptr<BootstrapKey> bsk, std::unique_ptr<KeySwitchKey> ksk,
               Isa isa = default_isa());
  Bootstrapper(const Params& params, std::unique_ptr<AutomorphismKey> bsk, std::unique_ptr<KeySwitchKey> ksk,
               Isa isa = default_isa());
  // An Ntt32 for params on isa: what a BootstrapKey is built or loaded against.
  static std::unique_ptr<Ntt32> make_ntt(const Params& params, Isa isa = default_isa());

  const Params& params() const { return params_; }
  Isa isa() const { return ntt_->isa(); }

  // out = the LWE ciphertext (n + 1 words mod q) of the constant coefficient
  // of X^-phase(in) TV. test_vector: N words mod Q.
  void bootstrap(const u32* in, const u32* test_vector, u32* out) const;
  // The same for `count` ciphertexts, on up to `threads` threads (0: the
  // library's thread count). With `outputs` > 1, one blind rotation per
  // ciphertext serves several tables (many-LUT, Carpov-Izabachene-Mollimard):
  // out holds count x outputs ciphertexts, the k-th of each the coefficient
  // k of X^-phase TV, i.e. TV[phase + k] (negacyclic). `batch` ciphertexts
  // per thread step through the key together (GINX; 1 to kMaxRotationBatch):
  // each block of a step's key, read from memory once, serves all of them
  // while it sits in the nearest caches. The same bits for every batch.
  void bootstrap_many(const u32* in, std::size_t count, const u32* test_vector, u32* out, int threads = 0,
                      std::size_t outputs = 1, std::size_t batch = kRotationBatch) const;

  // The bootstrap without its last steps: out holds count x (N + 1) words mod Q,
  // the constant coefficient of X^-phase TV as an LWE ciphertext of dimension N
  // under the ring secret z (a, then b), with only the blind rotation's error.
  // The way from FHEW back into another scheme's ring starts there
  // (rlwe/lwe_packing.h): the key switch to s and Q -> q would add theirs.
  void bootstrap_to_ring_many(const u32* in, std::size_t count, const u32* test_vector, u32* out, int threads = 0,
                              std::size_t batch = kRotationBatch) const;

  // The blind rotation alone: acc (2 x N words, b then a, mod Q) =
  // X^-phase(in) TV under the ring secret (for tests and noise analysis). With
  // LMKCDEY the phase is that of odd_exponents(in) unless `exact` (one more RGSW
  // product per even a_i, what many-LUT bootstraps use); GINX is always exact.
  void blind_rotate(const u32* in, const u32* test_vector, u32* acc, bool exact = false) const;

  // LWE ciphertexts of dimension N under the ring secret z, mod Q (count x
  // (N + 1) words), to gate ciphertexts (count x (n + 1) words mod q): the
  // bootstrap's last steps (Q -> Q_ks, the key switch to s, Q_ks -> q), for
  // ciphertexts that come from another scheme's ring (scheme switching).
  void switch_ring_lwe(const u32* in, std::size_t count, u32* out) const;

  // Ciphertexts key-switched together by bootstrap_many and switch_ring_lwe.
  static constexpr std::size_t kSwitchBatch = 64;
  // Ciphertexts per thread that share each step's key in bootstrap_many (BENCHMARKS.md,
  // "FHEW gates in batches that share the key"), and the most it takes.
  static constexpr std::size_t kRotationBatch = 8;
  static constexpr std::size_t kMaxRotationBatch = 16;

  std::size_t bootstrap_key_bytes() const { return bsk_ ? bsk_->bytes() : lmk_->bytes(); }
  std::size_t key_switch_key_bytes() const { return ksk_->bytes(); }
  // The blind rotation's key, whichever it is: its public seed and its bodies (as saved).
  const Prng::Seed& blind_rotation_seed() const { return bsk_ ? bsk_->seed() : lmk_->seed(); }
  std::vector<u32> blind_rotation_bodies() const { return bsk_ ? bsk_->bodies(*ntt_) : lmk_->bodies(*ntt_); }
  const KeySwitchKey& key_switch_key() const { return *ksk_; }
  const Ntt32& ntt() const { return *ntt_; }

 private:
  // The table behind monomial() below.
  void build_monomials();
  // Raises InvalidArgument unless every coefficient is below Q.
  void check_test_vector(const u32* test_vector) const;
  // bootstrap() and blind_rotate() after the test vector was checked.
  void bootstrap_checked(const u32* in, const u32* test_vector, u32* out, std::size_t outputs) const;
  // Coefficient k of the accumulator (2 x N words, b then a) as an LWE ciphertext
  // under z: N + 1 words mod Q.
  void extract(const u32* acc, std::size_t k, u32* out) const;
  // The blind rotations of `count` ciphertexts (in: count x (n + 1) words), `batch` at a
  // time (accs: batch x 2N words of scratch), and coefficients 0 .. outputs-1 of each
  // extracted into `extracted` (count x outputs x (N + 1) words).
  void rotate_and_extract(const u32* in, std::size_t count, const u32* test_vector, std::size_t outputs,
                          std::size_t batch, u32* accs, u32* extracted) const;
  // `count` extracted ciphertexts (count x (N + 1) words mod Q, overwritten) -> out
  // (count x (n + 1) words mod q), key-switched together.
  void switch_to_gate(u32* extracted, std::size_t count, u32* out) const;
  void rotate_blindly(const u32* in, const u32* test_vector, u32* acc, bool exact) const;
  // The same for `count` ciphertexts (at most kMaxRotationBatch) into accs (count x 2N
  // words): GINX's steps taken together (step below); LMKCDEY's one ciphertext at a time.
  void rotate_blindly_many(const u32* in, std::size_t count, const u32* test_vector, u32* accs, bool exact) const;
  // Step i of the blind rotation for each accumulator whose exponent is nonzero:
  // acc_j <- acc_j X^{s_i exponents[j]} (accs: count x 2N words; scratch: count x
  // (2 d_g + 2) N words). The next step's exponents name the monomials prefetched
  // meanwhile, as its key is.
  void step(u32* accs, std::size_t count, std::size_t i, const u32* exponents, const u32* next_exponents,
            u32* scratch) const;
  // Montgomery(NTT(X^k) - 1) for k mod 2N.
  const u32* monomial(std::size_t k) const {
    const std::size_t N = params_.ring_dimension;
    return monomials_.data() + (k % (2 * N)) * N;
  }

  Params params_;
  std::unique_ptr<Ntt32> ntt_;
  std::unique_ptr<BootstrapKey> bsk_;     // GINX, or
  std::unique_ptr<AutomorphismKey> lmk_;  // LMKCDEY (params.automorphism_window >= 1)
  std::unique_ptr<KeySwitchKey> ksk_;
  KeyBuffer<u32> monomials_;  // [k][N]: Montgomery(NTT(X^k) - 1), k < 2N
};

}  // namespace ringfire::tfhe
