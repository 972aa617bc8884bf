#include "ringfire/rlwe/key_switch_shape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace ringfire {

namespace {

// Measured on the 2-vCPU AMD EPYC (Zen 3, AVX2) CI machine, one thread
// (BENCHMARKS.md, "Key-switching shape"): ns per NTT butterfly, per
// base-conversion product (source limb x target limb x coefficient), per
// inner-product term and word (both outputs), per element-wise word.
constexpr double kNsPerButterfly = 0.92;
constexpr double kNsPerConversionProduct = 1.8;
constexpr double kNsPerInnerProductTerm = 1.2;
constexpr double kNsPerElementWord = 0.5;

double widest_digit_bits(const std::vector<double>& q_bits, std::size_t alpha) {
  double widest = 0.0;
  for (std::size_t begin = 0; begin < q_bits.size(); begin += alpha) {
    const std::size_t end = std::min(q_bits.size(), begin + alpha);
    widest = std::max(widest, std::accumulate(q_bits.begin() + begin, q_bits.begin() + end, 0.0));
  }
  return widest;
}

}  // namespace

std::size_t fewest_digits(const std::vector<double>& q_bits, double p_bits) {
  const std::size_t count = q_bits.size();
  for (std::size_t dnum = 1; dnum <= count; ++dnum) {
    const std::size_t alpha = (count + dnum - 1) / dnum;
    if (widest_digit_bits(q_bits, alpha) <= p_bits + 1.0) return (count + alpha - 1) / alpha;
  }
  return count;
}

double key_switch_cost(std::size_t n, const std::vector<int>& q_bits, std::size_t special_count, std::size_t dnum,
                       bool top_level_only) {
  const std::size_t count = q_bits.size(), k = special_count;
  const std::size_t alpha = (count + dnum - 1) / dnum;
  const double ntt_limb = 0.5 * static_cast<double>(n) * std::log2(static_cast<double>(n)) * kNsPerButterfly;
  const double word = static_cast<double>(n);
  double total = 0.0;
  for (std::size_t limbs = top_level_only ? count : 1; limbs <= count; ++limbs) {  // a ciphertext at level limbs - 1
    const std::size_t digits = (limbs + alpha - 1) / alpha;
    double ntts = static_cast<double>(limbs + 2 * (k + limbs));  // iNTT of c; ModDown of both sums
    double conversions = 2.0 * static_cast<double>(k * limbs);  // ModDown: P -> Q
    for (std::size_t j = 0; j < digits; ++j) {
      const std::size_t own = std::min(alpha, limbs - j * alpha), others = limbs + k - own;
      ntts += static_cast<double>(others);
      conversions += static_cast<double>(own * others);
    }
    const double terms = 2.0 * static_cast<double>(digits * (limbs + k));
    const double passes = static_cast<double>(digits * (limbs + k) + 4 * limbs);  // copies, ModDown's sub and scale
    total += ntts * ntt_limb + word * (conversions * kNsPerConversionProduct + terms * kNsPerInnerProductTerm +
                                       passes * kNsPerElementWord);
  }
  return top_level_only ? total : total / static_cast<double>(count);
}

KeySwitchShape choose_key_switch_shape(std::size_t n, const std::vector<int>& q_bits, int special_bits,
                                       double max_log_qp, bool top_level_only) {
  const double q_total = std::accumulate(q_bits.begin(), q_bits.end(), 0.0);
  // Nominal sizes (the primes lie just below 2^bits): strict coverage so the
  // real primes pass Parameters' check, and the bound on the nominal sum.
  const std::vector<double> sizes(q_bits.begin(), q_bits.end());
  auto digits_for = [&](std::size_t k) { return fewest_digits(sizes, static_cast<double>(k) * special_bits - 1.0); };
  auto within_bound = [&](std::size_t k) { return q_total + static_cast<double>(k * special_bits) <= max_log_qp; };
  struct Candidate {
    std::size_t k, dnum;
    double cost;
  };
  std::vector<Candidate> candidates;
  for (std::size_t k = 1; k <= q_bits.size() + 1 && (k == 1 || within_bound(k)); ++k) {
    const std::size_t dnum = digits_for(k);
    candidates.push_back({k, dnum, key_switch_cost(n, q_bits, k, dnum, top_level_only)});
    if (dnum == 1) break;  // one digit: more special primes cannot help
  }
  double fastest = candidates.front().cost;
  for (const Candidate& c : candidates) fastest = std::min(fastest, c.cost);
  // Ties (within the model's accuracy) go to the fewest digits: smaller keys.
  const Candidate* chosen = &candidates.front();
  for (const Candidate& c : candidates)
    if (c.cost <= 1.03 * fastest && (c.dnum < chosen->dnum || chosen->cost > 1.03 * fastest)) chosen = &c;
  KeySwitchShape best;
  best.one_prime_cost = candidates.front().cost;
  best.special_count = chosen->k;
  best.dnum = chosen->dnum;
  best.cost = chosen->cost;
  char text[200];
  std::snprintf(text, sizeof text, "key switching modelled at %.0f%% of one special prime's time; %s",
                100.0 * best.cost / best.one_prime_cost,
                within_bound(best.special_count + 1) ? "more special primes would not be faster"
                                                     : "one more special prime would exceed the security bound");
  best.reason = text;
  return best;
}

}  // namespace ringfire
