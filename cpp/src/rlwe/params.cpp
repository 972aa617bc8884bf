#include "ringfire/rlwe/params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "ringfire/arith/primes.h"
#include "ringfire/arith/wide.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/warning.h"
#include "ringfire/rlwe/key_switch_shape.h"
#include "ringfire/rlwe/security.h"

namespace ringfire {

namespace {

constexpr const char* kOp = "rlwe.Parameters";
constexpr int kMinPrimeBits = 20;
// The plaintext modulus t and the scale stay below 2^60.
constexpr int kMaxPrimeBits = 60;
// Ciphertext and special primes may take the arithmetic's whole range (q <
// 2^61). A bootstrap's EvalMod gains about a bit of precision from 61-bit
// primes, and 61-bit special primes still cover key-switching digits of them.
constexpr int kMaxRnsPrimeBits = kMaxModulusBits;

void check_bits(const std::vector<int>& bits, const char* name) {
  for (int b : bits)
    require(b >= kMinPrimeBits && b <= kMaxRnsPrimeBits, kOp,
            std::string(name) + " entries must be in [" + std::to_string(kMinPrimeBits) + ", " +
                std::to_string(kMaxRnsPrimeBits) + "], got " + std::to_string(b));
}

// NTT-friendly primes (q = 1 mod 2N) nearest to 2^bits on either side,
// `count` of each, nearest first.
std::vector<u64> primes_around(int bits, std::size_t count, std::size_t n) {
  std::vector<u64> out = find_ntt_primes(bits, count, n);  // below 2^bits, largest first
  const u64 step = 2 * n;
  std::size_t above = 0;
  for (u64 q = (u64{1} << bits) + 1; above < count && q < (u64{1} << 61); q += step)
    if (is_prime(q)) out.push_back(q), ++above;
  return out;
}

// Assigns primes to every requested size; no prime repeats across Q and P.
//
// The rescaling primes (those of scale_bits bits, q_1..q_L) are chosen
// greedily from q_L down: each is the unused NTT prime nearest to the
// current canonical scale, on either side of 2^scale_bits. The scale after a
// rescale is scale^2 / q, so its distance from 2^scale_bits doubles at every
// level unless q follows it; with always-below primes the chain drifts by
// tens of bits over 20 levels at N = 2^16.
//
// Reserved levels (bootstrapping's) sit above the user's chain and keep their
// own scales, so the greedy choice starts at the user's top level.
void assign_primes(std::size_t n, const std::vector<int>& q_bits, const std::vector<int>& p_bits, int scale_bits,
                   std::size_t user_top, std::vector<u64>& q, std::vector<u64>& p) {
  std::map<int, std::size_t> needed;
  for (int b : q_bits) ++needed[b];
  for (int b : p_bits) ++needed[b];
  std::map<int, std::vector<u64>> pool;
  // Spares, in case the rescaling primes below take some of a size's largest.
  const std::size_t spare = q_bits.size() + p_bits.size();
  for (auto [bits, count] : needed) {
    try {
      pool[bits] = find_ntt_primes(bits, count + spare, n);
    } catch (const InvalidArgument&) {
      pool[bits] = find_ntt_primes(bits, count, n);
    }
  }
  std::set<u64> used;
  // The special primes take the largest of their size first.
  std::map<int, std::size_t> next;
  auto take_largest = [&](int bits) {
    std::vector<u64>& list = pool[bits];
    while (next[bits] < list.size() && used.count(list[next[bits]])) ++next[bits];
    require(next[bits] < list.size(), kOp, "not enough " + std::to_string(bits) + "-bit NTT-friendly primes");
    const u64 prime = list[next[bits]++];
    used.insert(prime);
    return prime;
  };
  for (int b : p_bits) p.push_back(take_largest(b));
  q.assign(q_bits.size(), 0);
  if (scale_bits > 0 && needed.count(scale_bits)) {
    const std::vector<u64> near = primes_around(scale_bits, needed[scale_bits] + p_bits.size() + 1, n);
    double scale = std::ldexp(1.0, scale_bits);
    for (std::size_t i = user_top + 1; i-- > 1;) {
      if (q_bits[i] != scale_bits) continue;
      u64 best = 0;
      for (u64 cand : near)
        if (!used.count(cand) && (best == 0 || std::fabs(static_cast<double>(cand) - scale) <
                                                   std::fabs(static_cast<double>(best) - scale)))
          best = cand;
      q[i] = best;
      used.insert(best);
      scale = scale * scale / static_cast<double>(best);
    }
  }
  for (std::size_t i = 0; i < q_bits.size(); ++i)
    if (q[i] == 0) q[i] = take_largest(q_bits[i]);
}

void check_reserved_levels(std::size_t reserved, std::size_t primes) {
  require(reserved < primes, kOp,
          "reserved_levels (" + std::to_string(reserved) + ") must leave the user at least level 0 of the " +
              std::to_string(primes) + " primes");
}

// The largest batching-friendly prime t of `bits` bits (t = 1 mod 2N) that
// none of the ciphertext or special primes equals.
u64 choose_plain_modulus(int bits, std::size_t n, const std::vector<u64>& q, const std::vector<u64>& p) {
  const int min_bits = bit_length(2 * n) + 1;
  require(bits >= min_bits && bits <= kMaxPrimeBits, kOp,
          "plain_bits must be in [" + std::to_string(min_bits) + ", " + std::to_string(kMaxPrimeBits) +
              "] for N=" + std::to_string(n) + " (a batching prime is 1 mod 2N), got " + std::to_string(bits));
  std::set<u64> used(q.begin(), q.end());
  used.insert(p.begin(), p.end());
  const u64 step = 2 * n;
  // Candidates 1 mod 2N, from the top of the size down.
  const u64 top = (u64{1} << bits) - 1;
  for (u64 t = top - (top - 1) % step; t > (u64{1} << (bits - 1)); t -= step)
    if (!used.count(t) && is_prime(t)) return t;
  throw_invalid(kOp, "no " + std::to_string(bits) + "-bit prime is 1 mod 2N=" + std::to_string(step) +
                         " (besides the ciphertext primes): choose another plain_bits, or a plain_modulus "
                         "(then slots cannot be batched)");
}

double log2_product(const std::vector<u64>& q, const std::vector<u64>& p) {
  double bits = 0.0;
  for (const auto* primes : {&q, &p})
    for (u64 prime : *primes) bits += std::log2(static_cast<double>(prime));
  return bits;
}

}  // namespace

const char* scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::ckks: return "CKKS";
    case Scheme::bgv: return "BGV";
    case Scheme::bfv: return "BFV";
  }
  return "unknown";
}

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t state) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    state ^= p[i];
    state *= 0x100000001b3ULL;
  }
  return state;
}

Parameters::Parameters(const ParameterLiteral& lit)
    : scheme_(lit.scheme),
      plain_modulus_(lit.plain_modulus),
      n_(lit.poly_degree),
      dnum_(lit.dnum),
      reserved_levels_(lit.reserved_levels),
      security_(lit.security),
      scale_bits_(lit.scale_bits) {
  check_security_level(lit.insecure_no_security_check);
  require(n_ >= 1024 && n_ <= (1u << 17) && (n_ & (n_ - 1)) == 0, kOp,
          "poly_degree must be a power of two in [1024, 131072], got " + std::to_string(n_));
  if (!lit.q_primes.empty()) {
    q_ = lit.q_primes;
    p_ = lit.p_primes;
    require(!p_.empty(), kOp, "needs at least one special prime for key switching");
    // The bound first, from the primes' sizes alone: oversized input (a
    // crafted file) is refused before any primality test or table is computed.
    for (const auto* primes : {&q_, &p_})
      for (u64 q : *primes)
        require(bit_length(q) <= kMaxRnsPrimeBits, kOp,
                std::to_string(q) + " has more than " + std::to_string(kMaxRnsPrimeBits) + " bits");
    if (security_ != 0) check_security(n_, log2_product(q_, p_), security_);
    for (const auto* primes : {&q_, &p_})
      for (u64 q : *primes)
        require(is_ntt_friendly(q, n_), kOp, std::to_string(q) + " is not an NTT-friendly prime for this N");
  } else {
    require(!lit.q_bits.empty(), kOp, "coeff_bits needs at least one prime");
    std::vector<int> p_bits = lit.p_bits;
    if (p_bits.empty() && lit.special_prime_bits != 0) {
      check_bits({lit.special_prime_bits}, "special_bits");
      check_bits(lit.q_bits, "coeff_bits");
      const double bound = security_ == 0 ? std::numeric_limits<double>::infinity()
                                          : static_cast<double>(max_log_qp(n_, security_));
      // BFV keeps its ciphertexts at the top level: shape key switching for it there.
      const KeySwitchShape shape =
          choose_key_switch_shape(n_, lit.q_bits, lit.special_prime_bits, bound, scheme_ == Scheme::bfv);
      p_bits.assign(shape.special_count, lit.special_prime_bits);
      if (dnum_ == 0) dnum_ = shape.dnum;
      shape_note_ = std::to_string(shape.special_count) + " special prime" + (shape.special_count > 1 ? "s" : "") +
                    " chosen for speed (" + shape.reason + ")";
    }
    require(!p_bits.empty(), kOp, "needs at least one special prime for key switching");
    check_bits(lit.q_bits, "coeff_bits");
    check_bits(p_bits, "special_bits");
    check_reserved_levels(lit.reserved_levels, lit.q_bits.size());
    assign_primes(n_, lit.q_bits, p_bits, lit.scale_bits, lit.q_bits.size() - 1 - reserved_levels_, q_, p_);
  }
  if (dnum_ == 0) {
    // The fewest digits the special primes cover (generated or explicit primes):
    // wider digits than P would leave key-switching noise that swamps the message.
    double log_p = 0.0;
    for (u64 p : p_) log_p += std::log2(static_cast<double>(p));
    std::vector<double> q_sizes;
    for (u64 q : q_) q_sizes.push_back(std::log2(static_cast<double>(q)));
    dnum_ = fewest_digits(q_sizes, log_p);
  }
  if (scheme_ != Scheme::ckks && plain_modulus_ == 0 && lit.plain_bits != 0)
    plain_modulus_ = choose_plain_modulus(lit.plain_bits, n_, q_, p_);
  validate();
}

void Parameters::check_plain_modulus() const {
  if (scheme_ == Scheme::ckks) {
    require(plain_modulus_ == 0, kOp, "CKKS has no plaintext modulus, got " + std::to_string(plain_modulus_));
    return;
  }
  const std::string name = scheme_name(scheme_);
  require(scheme_ == Scheme::bgv || scheme_ == Scheme::bfv, kOp, "unknown scheme");
  require(plain_modulus_ >= 2 && bit_length(plain_modulus_) <= kMaxPrimeBits, kOp,
          name + " needs a plaintext modulus t in [2, 2^60), got " + std::to_string(plain_modulus_));
  require(scale_bits_ == 0, kOp, name + " has no scale: scale_bits must be 0, got " + std::to_string(scale_bits_));
  for (const auto* primes : {&q_, &p_})
    for (u64 q : *primes)
      require(plain_modulus_ % q != 0, kOp,
              "the plaintext modulus " + std::to_string(plain_modulus_) + " shares the factor " + std::to_string(q) +
                  " with the ciphertext modulus");
}

void Parameters::check_security_level(bool insecure_no_security_check) {
  if (insecure_no_security_check) {
    security_ = 0;
    return;
  }
  require(security_ == 128 || security_ == 192 || security_ == 256, kOp,
          "security must be 128, 192 or 256 bits, got " + std::to_string(security_) +
              " (toy parameters for tests: insecure_no_security_check)");
}

void Parameters::validate() {
  const std::size_t count = q_.size();
  check_reserved_levels(reserved_levels_, count);
  require(dnum_ >= 1 && dnum_ <= count, kOp,
          "dnum must be in [1, " + std::to_string(count) + "] (the number of ciphertext primes), got " +
              std::to_string(dnum_));
  alpha_ = (count + dnum_ - 1) / dnum_;
  dnum_ = (count + alpha_ - 1) / alpha_;  // e.g. 7 primes, dnum 5 -> alpha 2 -> 4 digits
  std::vector<u64> all(q_);
  all.insert(all.end(), p_.begin(), p_.end());
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) require(all[i] != all[j], kOp, "prime " + std::to_string(all[i]) + " repeats");
  log_qp_ = log2_product(q_, p_);
  require(scale_bits_ >= 0 && scale_bits_ <= kMaxPrimeBits, kOp,
          "scale_bits must be in [0, 60], got " + std::to_string(scale_bits_));
  if (security_ == 0)
    warn("[rlwe.Parameters] the security check is disabled (insecure_no_security_check; no security level is "
         "enforced): N=" + std::to_string(n_) + " with log2(QP)=" + describe_log_qp() +
         " may offer no security; never use these parameters for real data");
  else
    check_security(n_, log_qp_, security_);

  // Key switching divides the digits' noise by P; a digit wider than P
  // leaves noise that swamps the message (rotations return garbage).
  double log_p = 0.0, widest_digit = 0.0;
  for (u64 p : p_) log_p += std::log2(static_cast<double>(p));
  for (std::size_t begin = 0; begin < count; begin += alpha_) {
    double bits = 0.0;
    for (std::size_t i = begin; i < std::min(begin + alpha_, count); ++i) bits += std::log2(static_cast<double>(q_[i]));
    widest_digit = std::max(widest_digit, bits);
  }
  require(log_p + 1.0 >= widest_digit, kOp,
          "the special primes (" + std::to_string(static_cast<int>(std::round(log_p))) +
              " bits) must cover the widest key-switching digit (" +
              std::to_string(static_cast<int>(std::round(widest_digit))) +
              " bits): add or enlarge special primes, or raise dnum");

  check_plain_modulus();
  std::vector<std::uint64_t> words{n_, dnum_, static_cast<std::uint64_t>(security_),
                                   static_cast<std::uint64_t>(scale_bits_), q_.size(), p_.size()};
  words.insert(words.end(), all.begin(), all.end());
  // CKKS digests stay those of format version 1 (files from then still load);
  // the other schemes add what changes a ciphertext's meaning.
  if (scheme_ != Scheme::ckks) words.insert(words.end(), {static_cast<std::uint64_t>(scheme_), plain_modulus_});
  if (reserved_levels_ != 0) words.insert(words.end(), {0x7265736572766564ULL /* "reserved" */, reserved_levels_});
  legacy_fingerprint_ = fnv1a64(words.data(), words.size() * sizeof(std::uint64_t));
  compute_identity();
}

void Parameters::compute_identity() {
  // A domain tag, then every field as a little-endian u64 in a fixed order
  // (the counts first, so no two parameter sets share an encoding).
  std::vector<std::uint8_t> bytes;
  const char tag[] = "ringfire parameters v3";
  bytes.insert(bytes.end(), tag, tag + sizeof tag - 1);
  auto put = [&bytes](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  for (std::uint64_t v : {static_cast<std::uint64_t>(scheme_), plain_modulus_, static_cast<std::uint64_t>(n_),
                          static_cast<std::uint64_t>(dnum_), static_cast<std::uint64_t>(security_),
                          static_cast<std::uint64_t>(scale_bits_), static_cast<std::uint64_t>(reserved_levels_),
                          static_cast<std::uint64_t>(q_.size()), static_cast<std::uint64_t>(p_.size())})
    put(v);
  for (u64 q : q_) put(q);
  for (u64 p : p_) put(p);
  identity_ = sha256(bytes.data(), bytes.size());
  fingerprint_ = 0;
  for (int i = 0; i < 8; ++i) fingerprint_ |= static_cast<std::uint64_t>(identity_[i]) << (8 * i);
}

std::string Parameters::describe_log_qp() const {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::round(log_qp_ * 10) / 10);
  return text;
}

std::string Parameters::describe() const {
  // Plain string building (no iostreams): the text does not depend on the
  // C++ locale, and the library needs no iostream initialisation.
  auto bits = [](const std::vector<u64>& primes) {
    std::string out;
    for (std::size_t i = 0; i < primes.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(bit_length(primes[i]));
    }
    return out;
  };
  const std::string log_qp = describe_log_qp();
  std::string scheme = scheme_name(scheme_);
  if (scheme_ != Scheme::ckks) scheme += " t=" + std::to_string(plain_modulus_);
  return scheme + ": N=" + std::to_string(n_) + ", L+1=" + std::to_string(q_.size()) + " primes (" + bits(q_) +
         " bits), P=" + std::to_string(p_.size()) + " primes (" + bits(p_) + " bits), dnum=" + std::to_string(dnum_) +
         (reserved_levels_ ? ", " + std::to_string(reserved_levels_) + " reserved for bootstrapping" : std::string()) +
         ", log2(QP)=" + log_qp + ", security=" +
         (security_ == 0 ? std::string("NONE (insecure, tests only)") : std::to_string(security_) + "-bit") +
         (shape_note_.empty() ? std::string() : "; " + shape_note_);
}

}  // namespace ringfire
