#include "ringfire/rlwe/key_derivation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/security.h"

namespace ringfire {

namespace {

constexpr const char* kOp = "rlwe.derive_galois_keys";
constexpr int kSpecialBits = 61;

// The primes of a level-`level` key polynomial: q_0..q_level, then P.
std::vector<u64> key_primes(const RlweContext& ctx, std::size_t level) {
  const auto& q = ctx.params().q_primes();
  std::vector<u64> out(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(level + 1));
  for (u64 p : ctx.params().p_primes()) out.push_back(p);
  return out;
}

// log2 of the widest digit when `primes` are cut into `dnum` digits the way
// Parameters cuts them (ceil(count / dnum) primes each, the last shorter).
double widest_digit_bits(const std::vector<u64>& primes, std::size_t dnum) {
  const std::size_t alpha = (primes.size() + dnum - 1) / dnum;
  double widest = 0;
  for (std::size_t begin = 0; begin < primes.size(); begin += alpha) {
    double bits = 0;
    for (std::size_t i = begin; i < std::min(begin + alpha, primes.size()); ++i)
      bits += std::log2(static_cast<double>(primes[i]));
    widest = std::max(widest, bits);
  }
  return widest;
}

// `count` NTT-friendly 61-bit primes for degree n that are not in `taken`.
std::vector<u64> fresh_primes(std::size_t count, std::size_t n, const std::vector<u64>& taken) {
  const std::set<u64> used(taken.begin(), taken.end());
  std::vector<u64> out;
  for (u64 p : find_ntt_primes(kSpecialBits, count + taken.size(), n))
    if (!used.count(p) && out.size() < count) out.push_back(p);
  return out;
}

// The key of digit-wise gadget constants g_j under element 1 (b_j = 0,
// a_j = g_j: b_j + a_j s = g_j s exactly): where every derivation chain
// starts. It reveals nothing (it is a constant anyone can write down).
KeySwitchKey identity_key(const RlweContextPtr& ctx, std::size_t level) {
  KeySwitchKey key(ctx, 1, level);  // zeroed
  const std::size_t n = ctx->n();
  for (std::size_t j = 0; j < key.digits(); ++j) {
    const auto [begin, end] = ctx->digit_range(level, j);
    for (std::size_t i = begin; i < end; ++i) std::fill(key.a(j) + i * n, key.a(j) + (i + 1) * n, ctx->p_mod_q(i));
  }
  return key;
}

// The keys for r t_i from the key for r and the master keys for each t_i:
// per digit, sigma_t of (b_j, a_j), then a_j's switch from sigma_t(s) back
// to s in the derivation context (whose top-level base is the key
// polynomial's). a_j's ModUp is computed once for all t_i (hoisting: the
// automorphism commutes with it), and the digits run in parallel.
std::vector<KeySwitchKey> apply_masters(const MasterKeys& masters, const KeySwitchKey& key,
                                        const std::vector<u64>& ts) {
  const RlweContext& d = *masters.derivation;
  const u64 two_n = 2 * d.n();
  std::vector<const KeySwitchKey*> master(ts.size());
  std::vector<KeySwitchKey> out;
  out.reserve(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    master[i] = &masters.keys.get(ts[i]);
    out.emplace_back(masters.context, key.source() * ts[i] % two_n, key.level());  // both below 2N <= 2^18
  }
  const std::size_t top = d.max_level();
  const RnsBase& base = *d.level_base(top);
  auto body = [&](std::size_t begin, std::size_t end) {
    Backend& be = backend_for(Device::cpu());
    Buffer switched_b(key.poly_words());
    for (std::size_t j = begin; j < end; ++j) {
      const HoistedDigits digits(d, key.a(j), top);
      for (std::size_t i = 0; i < ts.size(); ++i) {
        key_switch_hoisted(d, digits, ts[i], *master[i], switched_b.data(), out[i].a(j));
        be.automorphism(key.b(j), out[i].b(j), 1, base, ts[i], Form::eval);
        be.add(out[i].b(j), switched_b.data(), out[i].b(j), 1, base);
      }
    }
  };
  parallel_items(key.digits(), body);
  return out;
}

struct DerivationShape {
  std::vector<u64> primes;             // the level's key primes: the derivation context's chain
  std::size_t dnum = 0, specials = 0;  // dnum 0: nothing fits
  double key_bits = 0, bound = 0;
};

// The fewest digits whose special primes (each above 2^60) still fit the
// security bound with the level's key primes.
DerivationShape derivation_shape(const RlweContext& ctx, std::size_t level) {
  require(level <= ctx.max_level(), kOp,
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(ctx.max_level()));
  DerivationShape shape;
  shape.primes = key_primes(ctx, level);
  const std::vector<u64>& primes = shape.primes;
  for (u64 p : primes) shape.key_bits += std::log2(static_cast<double>(p));
  const int security = ctx.params().security();
  shape.bound = security != 0 ? max_log_qp(ctx.n(), security) : 1e300;
  for (std::size_t dnum = 1; dnum <= primes.size(); ++dnum) {
    const auto specials = static_cast<std::size_t>(std::ceil(widest_digit_bits(primes, dnum) / 60.0));
    if (shape.key_bits + static_cast<double>(specials * kSpecialBits) <= shape.bound) {
      shape.dnum = dnum;
      shape.specials = specials;
      break;
    }
  }
  return shape;
}

}  // namespace

std::optional<std::size_t> highest_derivation_level(const RlweContext& ctx) {
  for (std::size_t level = ctx.max_level() + 1; level-- > 0;)
    if (derivation_shape(ctx, level).dnum != 0) return level;
  return std::nullopt;
}

RlweContextPtr derivation_context(const RlweContext& ctx, std::size_t level) {
  const DerivationShape shape = derivation_shape(ctx, level);
  const int security = ctx.params().security();
  if (shape.dnum == 0)
    throw_invalid(kOp, "no room for master keys at level " + std::to_string(level) + ": keys there span log2(Q_l P) = " +
                           std::to_string(static_cast<int>(shape.key_bits)) + " bits, and special primes covering " +
                           "even one prime per digit exceed the " + std::to_string(static_cast<int>(shape.bound)) +
                           "-bit bound of " + std::to_string(security) + "-bit security at N = " +
                           std::to_string(ctx.n()) + " (derive at a lower level, or generate these keys directly)");
  ParameterLiteral lit;
  lit.scheme = Scheme::ckks;  // only key switching runs here; the scheme adds nothing
  lit.poly_degree = ctx.n();
  lit.q_primes = shape.primes;
  lit.p_primes = fresh_primes(shape.specials, ctx.n(), shape.primes);
  lit.dnum = shape.dnum;
  lit.security = security != 0 ? security : 128;
  lit.insecure_no_security_check = security == 0;
  return std::make_shared<const RlweContext>(Parameters(lit));
}

std::vector<u64> master_elements(const RlweContext& ctx, bool conjugate) {
  std::vector<u64> out;
  for (std::size_t step = 1; step < ctx.n() / 2; step *= 2) out.push_back(ctx.galois_element(static_cast<long long>(step)));
  if (conjugate) out.push_back(ctx.conjugation_element());
  return out;
}

MasterKeys::MasterKeys(RlweContextPtr context_, std::size_t level_, RlweContextPtr derivation_, GaloisKeys keys_)
    : context(std::move(context_)), level(level_), derivation(std::move(derivation_)), keys(std::move(keys_)) {
  require(keys.fingerprint() == derivation->fingerprint(), kOp,
          "the master keys belong to another derivation context than level " + std::to_string(level) + "'s");
  for (u64 g : keys.elements())
    require(keys.get(g).level() == derivation->max_level(), kOp,
            "master key " + std::to_string(g) + " does not span the derivation context's top level");
}

MasterKeys generate_master_keys(const SecretKey& secret, std::size_t level, bool conjugate, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  const RlweContextPtr& ctx = secret.context();
  RlweContextPtr derivation = derivation_context(*ctx, level);
  const SecretKey lifted(derivation, secret.coefficients());  // the same s, over the wider base
  GaloisKeys keys = generate_galois_keys(lifted, master_elements(*ctx, conjugate), prng);
  return MasterKeys(ctx, level, std::move(derivation), std::move(keys));
}

GaloisKeys derive_galois_keys(const MasterKeys& masters, const std::vector<u64>& elements) {
  const OpLabel op_label(kOp);
  const RlweContextPtr& ctx = masters.context;
  const u64 conjugation = ctx->conjugation_element(), two_n = 2 * ctx->n();
  // Which rotation steps to reach, and which of them conjugated too.
  std::set<long long> plain, conjugated;
  for (u64 g : elements) {
    require(g % 2 == 1 && g < two_n, kOp, "Galois element must be odd and below 2N, got " + std::to_string(g));
    const long long step = ctx->rotation_of(g);
    if (step >= 0) {
      plain.insert(step);
      continue;
    }
    require(masters.keys.has(conjugation), kOp,
            "element " + std::to_string(g) + " needs the conjugation master key (generate the masters with "
            "conjugate=True)");
    conjugated.insert(ctx->rotation_of((g * conjugation) % two_n));
  }
  // The chain of step k adds its set bits from the lowest up, so steps that
  // agree on their low bits share a prefix: a tree rooted at 0 (the gadget
  // identity), walked depth first so that only one path of keys (at most
  // log2(N/2) of them) is alive besides the output.
  std::map<long long, std::set<long long>> children;
  for (const std::set<long long>* targets : {&plain, &conjugated})
    for (long long step : *targets) {
      long long done = 0;
      for (long long bit = 1; bit <= step; bit <<= 1)
        if (step & bit) {
          children[done].insert(done | bit);
          done |= bit;
        }
    }
  GaloisKeys out(ctx);
  // At each node, one batch: its children's master rotations, and the
  // conjugation when the node's step is wanted conjugated.
  auto visit = [&](auto&& self, long long step, const KeySwitchKey& key) -> void {
    if (plain.count(step)) out.insert(key.to(Device::cpu()));
    std::vector<long long> next(children[step].begin(), children[step].end());
    std::vector<u64> ts;
    for (long long child : next) ts.push_back(ctx->galois_element(child - step));
    if (conjugated.count(step)) ts.push_back(conjugation);
    if (ts.empty()) return;
    std::vector<KeySwitchKey> made = apply_masters(masters, key, ts);
    if (conjugated.count(step)) {
      out.insert(std::move(made.back()));
      made.pop_back();
    }
    for (std::size_t i = 0; i < next.size(); ++i) {
      const KeySwitchKey child = std::move(made[i]);
      self(self, next[i], child);
    }
  };
  visit(visit, 0, identity_key(ctx, masters.level));
  return out;
}

}  // namespace ringfire
