// Products in Z[X]/(X^N + 1) in double precision: the transform the 64-bit
// torus engine multiplies digits by keys with (tfhe-rs and Concrete do the
// same; an NTT over a 64-bit prime costs several times more without AVX-512).
//
// A real polynomial a is evaluated at the N/2 roots x of X^{N/2} = i (the
// other N/2 roots of X^N = -1 are their conjugates, where a real a takes the
// conjugate values): a(x) = sum_{j<N/2} (a_j + i a_{j+N/2}) x^j. With
// x = zeta^{1+4k}, zeta = e^{i pi / N}, that is a length-N/2 DFT of the
// "twisted" c_j = (a_j + i a_{j+N/2}) zeta^j. Pointwise products of two
// transforms are the transform of the negacyclic product.
//
// The forward transform is decimation in frequency (natural order in,
// bit-reversed out) and the backward one decimation in time (bit-reversed in,
// natural out), so no permutation is ever done: products do not care about
// the order. Values are split real / imaginary (structure of arrays) so that
// each butterfly loop runs four lanes wide, or eight where the CPU has
// AVX-512 (negacyclic_fft_avx512.cpp: the same passes, the same arithmetic
// in the same order, so both give the same bits).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringfire/base/cache_aligned.h"
#include "ringfire/tfhe/isa.h"

namespace ringfire::tfhe {

// Cache lines fetched into the level-2 cache a few at a time while a transform
// runs: the blind rotation hands its transforms the keys of the step that
// multiplies next, so that the keys arrive while the transforms compute
// instead of stalling the products that read them (a single bootstrap's keys,
// 60-90 MB at N = 2048, come from the last-level cache or memory each time).
// A transform calls fetch() at each of its prefetch_slots() slots; all the
// lines are asked for in one burst otherwise, which stalled the core (slower
// than no prefetch at all).
class LinesAhead {
 public:
  static constexpr std::size_t kLine = 64;
  // Fetch [begin, begin + bytes), per_slot lines at each slot (0: none).
  void start(const void* begin, std::size_t bytes, std::size_t per_slot) {
    next_ = static_cast<const char*>(begin), end_ = next_ + bytes, per_slot_ = per_slot;
  }
  void fetch() {
    ++calls_;
    for (std::size_t k = 0; k < per_slot_ && next_ < end_; ++k, next_ += kLine) __builtin_prefetch(next_, 0, 2);
  }
  // Bytes not asked for yet.
  std::size_t left() const { return next_ < end_ ? static_cast<std::size_t>(end_ - next_) : 0; }
  // Slots passed since this was made (what NegacyclicFft counts its own by).
  std::size_t calls() const { return calls_; }

 private:
  const char* next_ = nullptr;
  const char* end_ = nullptr;
  std::size_t per_slot_ = 0, calls_ = 0;
};

class NegacyclicFft {
 public:
  // isa: Isa::avx512 runs the blind rotation's transforms (forward_top_digits,
  // forward of digits, backward_add) eight lanes wide where the passes built
  // for N allow it; any other value, or a CPU without AVX-512, four (AVX2) or
  // one. The keys' transforms (forward of words) always take the narrow path.
  explicit NegacyclicFft(std::size_t N, Isa isa = default_isa());
  // Whether the blind rotation's transforms run on AVX-512.
  bool wide() const { return wide_; }

  std::size_t ring_dimension() const { return n_; }
  // Complex values per transform: N / 2.
  std::size_t points() const { return m_; }

  // in: N signed integers (|a_j| < 2^63) -> re, im: N/2 values each.
  void forward(const std::int64_t* in, double* re, double* im) const;
  // The same for digits (|a_j| < 2^31), which convert to doubles four at a time.
  void forward(const std::int32_t* in, double* re, double* im, LinesAhead* ahead = nullptr) const;
  // The transform of one gadget level's digits of N words mod 2^64: the top
  // base_log bits of each, rounded to nearest and read as a signed integer in
  // [-2^(base_log - 1), 2^(base_log - 1)) (the carry out of the top is dropped:
  // it is a multiple of 2^64). The blind rotation's decomposition with one
  // level, done as the words are read, so the digits are never stored.
  // base_log in [1, 30].
  void forward_top_digits(const std::uint64_t* in, unsigned base_log, double* re, double* im,
                          LinesAhead* ahead = nullptr) const;
  // The inverse of forward, rounded to integers and added to out mod 2^64
  // (re and im are overwritten).
  void backward_add(double* re, double* im, std::uint64_t* out, LinesAhead* ahead = nullptr) const;
  // How many times each of the three transforms above calls ahead->fetch():
  // once per iteration of the passes' vector loops (counted when the
  // transform is made: which passes run depends on N and the CPU).
  std::size_t prefetch_slots() const { return prefetch_slots_; }

  // Where output k evaluates: x_k = zeta^{exponents()[k]} (odd exponents mod
  // 2N), so the transform of the monomial X^m is root(exponents()[k] m mod 2N)
  // at k -- what the multi-bit blind rotation multiplies by, without a transform.
  const std::uint32_t* exponents() const { return exponents_.data(); }
  // Whether each block of four outputs k..k+3 (k a multiple of 4) evaluates at
  // exponents e_k + lane_offsets()[i]: X^m's transform is then root(e_k m)
  // times root(lane_offsets()[i] m), one lookup per block.
  bool shifted_blocks() const { return shifted_blocks_; }
  const std::array<std::uint32_t, 4>& lane_offsets() const { return lane_offsets_; }
  // zeta^t for t < 2N, real and imaginary parts.
  const double* roots_re() const { return roots_re_.data(); }
  const double* roots_im() const { return roots_im_.data(); }

 private:
  void find_evaluation_points();
  // source.at(j) is input j as a double (source.at4(j): inputs j..j+3 where
  // AVX2 is compiled in).
  template <class Source>
  void twist_and_transform(const Source& source, double* re, double* im, LinesAhead* ahead = nullptr) const;
  // The forward passes from step `from` on; the backward ones down to `down_to`.
  void dif(double* re, double* im, std::size_t from, LinesAhead* ahead = nullptr) const;
  void dit(double* re, double* im, std::size_t down_to, LinesAhead* ahead = nullptr) const;

  // The AVX-512 forms (negacyclic_fft_avx512.cpp; called only where wide_).
  bool wide_passes() const;
  void forward_top_digits_wide(const std::uint64_t* in, unsigned base_log, double* re, double* im,
                               LinesAhead* ahead) const;
  void forward_wide(const std::int32_t* in, double* re, double* im, LinesAhead* ahead) const;
  void backward_add_wide(double* re, double* im, std::uint64_t* out, LinesAhead* ahead) const;
  // The forward passes after the first (which the twist runs in).
  void forward_passes_wide(double* re, double* im, LinesAhead* ahead) const;

  std::size_t n_, m_;
  bool wide_ = false;
  std::size_t prefetch_slots_ = 0;
  CacheAlignedVector<double> twist_re_, twist_im_;      // zeta^j
  CacheAlignedVector<double> untwist_re_, untwist_im_;  // zeta^-j / (N/2)
  // The forward transform's passes in order (the backward one runs them in
  // reverse): radix 2 over blocks of len (twiddles W^j, j < len/2, W =
  // e^{-2 pi i / len}), radix 2^2 (two stages in one pass; W^j, W^2j, W^3j for
  // j < len/4), or 16 (the last four stages, len = 16, 8, 4 and 2, on groups
  // of 16; the twiddles of len 16 then those of len 8).
  struct Step {
    unsigned radix;
    std::size_t len, twiddles;
  };
  std::vector<Step> steps_;
  CacheAlignedVector<double> tw_re_, tw_im_;
  // Whether the first step is radix 2 or 2^2 over the whole length: the twist
  // then runs in its pass.
  bool fused_first_ = false;
  std::vector<std::uint32_t> exponents_;
  CacheAlignedVector<double> roots_re_, roots_im_;
  std::array<std::uint32_t, 4> lane_offsets_{};
  bool shifted_blocks_ = false;
};

// Pointwise: (acc_re + i acc_im) += (a_re + i a_im)(b_re + i b_im), `count` values.
void multiply_accumulate(const double* a_re, const double* a_im, const double* b_re, const double* b_im,
                         double* acc_re, double* acc_im, std::size_t count);

}  // namespace ringfire::tfhe
