#include "ringfire/ckks/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "polynomial_circuit.h"
#include "ringfire/base/errors.h"

namespace ringfire::ckks {

namespace {

std::string fmt_scale(double s) {
  char text[48];
  std::snprintf(text, sizeof text, "2^%.4f", std::log2(s));
  return text;
}

double log2_modulus(const RlweContext& ctx, std::size_t level) {
  double bits = 0.0;
  for (std::size_t i = 0; i <= level; ++i) bits += std::log2(static_cast<double>(ctx.params().q_primes()[i]));
  return bits;
}

}  // namespace

SimCounts& SimCounts::operator+=(const SimCounts& o) {
  multiplications += o.multiplications;
  plain_multiplications += o.plain_multiplications;
  constant_multiplications += o.constant_multiplications;
  additions += o.additions;
  rescales += o.rescales;
  relinearizations += o.relinearizations;
  rotations += o.rotations;
  hoisted_mod_ups += o.hoisted_mod_ups;
  for (auto [level, count] : o.key_switches_by_level) key_switches_by_level[level] += count;
  return *this;
}

// ---- placeholders that hold memory ----------------------------------------------

SimCiphertext::SimCiphertext(std::size_t level, double scale, std::size_t size, std::shared_ptr<SimMemory> memory)
    : level(level), scale(scale), size(size), memory_(std::move(memory)) {
  hold();
}

SimCiphertext::SimCiphertext(const SimCiphertext& other)
    : level(other.level), scale(other.scale), size(other.size), memory_(other.memory_) {
  hold();
}

SimCiphertext::SimCiphertext(SimCiphertext&& other) noexcept
    : level(other.level), scale(other.scale), size(other.size), memory_(std::move(other.memory_)),
      held_(std::exchange(other.held_, 0)) {}

SimCiphertext& SimCiphertext::operator=(const SimCiphertext& other) {
  if (this == &other) return *this;
  SimCiphertext copy(other);  // the new block before the old one goes, as an assigned result
  return *this = std::move(copy);
}

SimCiphertext& SimCiphertext::operator=(SimCiphertext&& other) noexcept {
  if (this == &other) return *this;
  release();
  level = other.level, scale = other.scale, size = other.size;
  memory_ = std::move(other.memory_);
  held_ = std::exchange(other.held_, 0);
  return *this;
}

void SimCiphertext::hold() {
  if (memory_) held_ = memory_->pool.allocate(size * (level + 1) * memory_->limb_bytes);
}

void SimCiphertext::release() {
  if (memory_ && held_ > 0) memory_->pool.release(held_);
  held_ = 0;
}

namespace {

// A temporary of `limbs` polynomials on one prime each, held in the model for its scope.
class SimBlock {
 public:
  SimBlock(const std::shared_ptr<SimMemory>& memory, std::size_t limbs)
      : memory_(limbs > 0 ? memory.get() : nullptr),
        held_(memory_ ? memory_->pool.allocate(limbs * memory_->limb_bytes) : 0) {}
  ~SimBlock() {
    if (memory_) memory_->pool.release(held_);
  }
  SimBlock(const SimBlock&) = delete;
  SimBlock& operator=(const SimBlock&) = delete;

 private:
  SimMemory* memory_;
  std::size_t held_;
};

// A key switch's digits at `level` (rlwe/key_switch.cpp's HoistedDigits): the
// digits, made with a converted digit and the input in coefficient form, held
// for the object's scope. extended: the limbs of one digit (level + 1 + k).
class SimDigits {
 public:
  SimDigits(const std::shared_ptr<SimMemory>& memory, const RlweContext& rlwe, std::size_t level)
      : extended(level + 1 + rlwe.special_count()), limbs(rlwe.digit_count(level) * extended),
        digits_(memory, limbs) {
    const SimBlock converted(memory, extended), coefficients(memory, level + 1);
  }
  const std::size_t extended, limbs;

 private:
  SimBlock digits_;
};

}  // namespace

Simulator::Simulator(ContextPtr context) : context_(std::move(context)) {
  require(context_ != nullptr, "ckks.Simulator", "needs a context");
}

void Simulator::track_memory(std::size_t cache_limit) {
  memory_ = std::make_shared<SimMemory>(SimMemory{PoolModel(cache_limit), context_->rlwe()->n() * sizeof(u64)});
}

SimCiphertext Simulator::make(std::size_t level, double scale, std::size_t size) const {
  return SimCiphertext(level, scale, size, memory_);
}

void Simulator::key_switch_temporaries(std::size_t level, bool rescale) const {
  if (!memory_) return;
  const SimDigits digits(memory_, *context_->rlwe(), level);
  // The two accumulators of the inner product, then ModDown (with the rescale: each
  // accumulator's scaled last limb and lifted correction in turn).
  const SimBlock acc0(memory_, digits.extended), acc1(memory_, digits.extended);
  if (rescale)
    for (int i = 0; i < 2; ++i) {
      const SimBlock scaled(memory_, 1), lifted(memory_, level);
    }
}

void Simulator::check_level(std::size_t level, const char* op) const {
  require(level <= context_->max_level(), op,
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(context_->max_level()));
}

void Simulator::count_key_switch(std::size_t level, bool rotation) const {
  (rotation ? counts_.rotations : counts_.relinearizations) += 1;
  counts_.key_switches_by_level[level] += 1;
}

SimCiphertext Simulator::fresh(std::size_t level) const {
  check_level(level, "ckks.Simulator");
  return make(level, context_->scale_at(level), 2);
}

SimCiphertext Simulator::add(const SimCiphertext& a, const SimCiphertext& b) const {
  constexpr const char* op = "ckks.add";
  require(a.level == b.level, op, "level mismatch: " + std::to_string(a.level) + " vs " + std::to_string(b.level));
  require(same_scale(a.scale, b.scale), op, "scale mismatch: " + fmt_scale(a.scale) + " vs " + fmt_scale(b.scale));
  ++counts_.additions;
  return make(a.level, a.scale, std::max(a.size, b.size));
}

namespace {

void check_fits(const RlweContext& ctx, double scale, std::size_t level, const char* op) {
  const double q_bits = log2_modulus(ctx, level);
  require(std::log2(scale) + 1.0 < q_bits, op,
          "the result's scale " + fmt_scale(scale) + " does not fit the " + std::to_string(static_cast<int>(q_bits)) +
              "-bit modulus at level " + std::to_string(level) +
              ": out of levels (rescale first, or choose more coeff_bits)");
}

}  // namespace

SimCiphertext Simulator::multiply(const SimCiphertext& a, const SimCiphertext& b) const {
  constexpr const char* op = "ckks.multiply";
  require(a.level == b.level, op, "level mismatch: " + std::to_string(a.level) + " vs " + std::to_string(b.level));
  require(a.size == 2 && b.size == 2, op, "needs two size-2 ciphertexts (relinearize first)");
  check_fits(*context_->rlwe(), a.scale * b.scale, a.level, op);
  ++counts_.multiplications;
  return make(a.level, a.scale * b.scale, 3);
}

SimCiphertext Simulator::multiply_plain(const SimCiphertext& a, double scale) const {
  check_fits(*context_->rlwe(), a.scale * scale, a.level, "ckks.multiply_plain");
  ++counts_.plain_multiplications;
  return make(a.level, a.scale * scale, a.size);
}

SimCiphertext Simulator::multiply_scalar(const SimCiphertext& a, double scale) const {
  check_fits(*context_->rlwe(), a.scale * scale, a.level, "ckks.multiply_scalar");
  ++counts_.constant_multiplications;
  return make(a.level, a.scale * scale, a.size);
}

SimCiphertext Simulator::relinearize(const SimCiphertext& a) const {
  require(a.size == 3, "ckks.relinearize", "needs a size-3 ciphertext, got size " + std::to_string(a.size));
  count_key_switch(a.level, false);
  SimCiphertext out = make(a.level, a.scale, 2);
  key_switch_temporaries(a.level);
  return out;
}

SimCiphertext Simulator::rescale(const SimCiphertext& a) const {
  require(a.level >= 1, "ckks.rescale", "the ciphertext is at level 0: no prime left to rescale by");
  ++counts_.rescales;
  const double q = static_cast<double>(context_->params().q_primes()[a.level]);
  SimCiphertext out = make(a.level - 1, a.scale / q, a.size);
  // The dropped limb of each polynomial and its correction on the kept ones.
  const SimBlock dropped(memory_, a.size), correction(memory_, a.size * a.level);
  return out;
}

SimCiphertext Simulator::relinearize_rescale(const SimCiphertext& a) const {
  require(a.size == 3, "ckks.relinearize", "needs a size-3 ciphertext, got size " + std::to_string(a.size));
  require(a.level >= 1, "ckks.rescale", "the ciphertext is at level 0: no prime left to rescale by");
  count_key_switch(a.level, false);
  ++counts_.rescales;
  const double q = static_cast<double>(context_->params().q_primes()[a.level]);
  // One key switch whose ModDown divides by q_level too: the result straight at level - 1.
  SimCiphertext out = make(a.level - 1, a.scale / q, 2);
  key_switch_temporaries(a.level, true);
  return out;
}

SimCiphertext Simulator::mod_switch(const SimCiphertext& a, std::size_t level) const {
  require(level <= a.level, "ckks.mod_switch",
          "cannot raise a ciphertext from level " + std::to_string(a.level) + " to " + std::to_string(level));
  return make(level, a.scale, a.size);
}

SimCiphertext Simulator::adjust_to(const SimCiphertext& a, std::size_t level) const {
  constexpr const char* op = "ckks.adjust_to";
  const double target = context_->scale_at(level);
  if (level <= a.level && same_scale(a.scale, target)) return make(level, target, a.size);
  require(level < a.level, op,
          "moving to level " + std::to_string(level) + " with scale " + fmt_scale(target) +
              " needs a level to spend, but the ciphertext is at level " + std::to_string(a.level));
  // As Evaluator::adjust_to: the constant where it reaches its size, then rescales.
  const ScaleCorrection plan = plan_scale_correction(a.scale, a.level, level, target, context_->params().q_primes());
  require(!plan.rescales_alone || same_scale(plan.delta, 1.0), op,
          "the scale " + fmt_scale(a.scale) + " is too far from level " + std::to_string(level) + "'s " +
              fmt_scale(target) + " to correct with the levels available");
  SimCiphertext out = plan.rescales_alone ? a : multiply_scalar(mod_switch(a, plan.at), plan.delta);
  while (out.level > level) out = rescale(out);
  out.scale = target;
  return out;
}

SimCiphertext Simulator::rotate(const SimCiphertext& a) const {
  require(a.size == 2, "ckks.rotate", "needs a size-2 ciphertext (relinearize first)");
  count_key_switch(a.level, true);
  // The automorphism's output beside the result while the key switch runs.
  const SimBlock permuted(memory_, 2 * (a.level + 1));
  SimCiphertext out = make(a.level, a.scale, 2);
  key_switch_temporaries(a.level);
  return out;
}

SimCiphertext Simulator::switch_key(const SimCiphertext& a) const {
  require(a.size == 2, "ckks.switch_key", "needs a size-2 ciphertext (relinearize first)");
  count_key_switch(a.level, true);
  SimCiphertext out = make(a.level, a.scale, 2);
  key_switch_temporaries(a.level);
  return out;
}

SimCiphertext Simulator::mod_raise(const SimCiphertext& a, std::size_t level) const {
  require(a.level == 0, "ckks.mod_raise", "needs a level-0 ciphertext, got level " + std::to_string(a.level));
  check_level(level, "ckks.mod_raise");
  const SimBlock coefficients(memory_, a.size);
  return make(level, a.scale, a.size);
}

std::vector<SimCiphertext> Simulator::rotate_many(const SimCiphertext& a, const std::vector<long long>& steps) const {
  require(a.size == 2, "ckks.rotate_many", "needs a size-2 ciphertext (relinearize first)");
  const long long half = static_cast<long long>(context_->slots());
  std::size_t keyed = 0;
  for (long long s : steps) keyed += s % half != 0;
  if (keyed > 0) ++counts_.hoisted_mod_ups;
  // As RlweEvaluator::rotate_many: the digits once, then per rotation its
  // output, the permuted digits and the accumulators, and c0's automorphism.
  std::optional<SimDigits> digits;
  if (keyed > 0) digits.emplace(memory_, *context_->rlwe(), a.level);
  std::vector<SimCiphertext> out;
  out.reserve(steps.size());
  for (long long s : steps) {
    if (s % half == 0) {
      out.push_back(a);
      continue;
    }
    count_key_switch(a.level, true);
    out.push_back(make(a.level, a.scale, 2));
    {
      const SimBlock permuted(memory_, digits->limbs), acc0(memory_, digits->extended), acc1(memory_, digits->extended);
    }
    const SimBlock c0(memory_, a.level + 1);
  }
  return out;
}

SimCiphertext Simulator::weighted_sum(const std::vector<const SimCiphertext*>& inputs,
                                      const std::vector<double>& values, std::size_t level, double scale,
                                      double) const {
  constexpr const char* op = "ckks.weighted_sum";
  require(!inputs.empty() && inputs.size() == values.size(), op, "needs one value per input, and an input");
  std::size_t size = 0;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    require(inputs[t]->level >= level, op,
            "an input at level " + std::to_string(inputs[t]->level) + " cannot contribute at level " +
                std::to_string(level));
    const double ratio = scale / inputs[t]->scale, weight = values[t] * ratio;
    require(ratio >= 0x1p20 || weight == std::round(weight), op,
            "input " + std::to_string(t) + " (level " + std::to_string(inputs[t]->level) + ", scale " +
                fmt_scale(inputs[t]->scale) + ", summed at level " + std::to_string(level) + " with scale " +
                fmt_scale(scale) + "): the scale ratio " + fmt_scale(ratio) + " is too small to encode the value " +
                std::to_string(values[t]) + " precisely");
    size = std::max(size, inputs[t]->size);
  }
  check_fits(*context_->rlwe(), scale, level, op);
  counts_.constant_multiplications += inputs.size();
  return make(level, scale, size);
}

SimCiphertext Simulator::constant(std::size_t level, double scale) const {
  check_level(level, "ckks.Simulator");
  return make(level, scale, 2);
}

// ---- polynomial evaluation ---------------------------------------------------

namespace {

// The operations polynomial_circuit.h needs, on placeholders.
struct SimOps {
  using Value = SimCiphertext;
  const Simulator& sim;

  static std::size_t level(const Value& v) { return v.level; }
  static double scale(const Value& v) { return v.scale; }
  static std::size_t size(const Value& v) { return v.size; }
  static void set_scale(Value& v, double s) { v.scale = s; }
  static Value copy(const Value& v) { return v; }
  double prime(std::size_t level) const {
    return static_cast<double>(sim.context()->params().q_primes().at(level));
  }
  Value multiply(const Value& a, const Value& b, std::size_t level) const {
    if (a.level == level && b.level == level) return sim.multiply(a, b);  // as the evaluator: no copies
    return sim.multiply(sim.mod_switch(a, level), sim.mod_switch(b, level));
  }
  Value relinearize(const Value& a) const { return sim.relinearize(a); }
  Value rescale(const Value& a) const { return sim.rescale(a); }
  Value relinearize_rescale(const Value& a) const { return sim.relinearize_rescale(a); }
  static Value negate(const Value& a) { return a; }
  void add_inplace(Value& a, const Value& b) const { sim.add_inplace(a, b); }
  Value weighted_sum(const std::vector<const Value*>& inputs, const std::vector<double>& values, std::size_t level,
                     double scale, double constant = 0.0) const {
    return sim.weighted_sum(inputs, values, level, scale, constant);
  }
  Value constant(std::size_t level, double scale, double, const Value&) const { return sim.constant(level, scale); }
};

}  // namespace

std::size_t polynomial_baby_steps(const Simulator& sim, const SimCiphertext& x, const Polynomial& p,
                                  double target_scale) {
  // Each power of two up to 2^depth, scored by the key switches it costs
  // (then by ciphertext products): the simulator counts what the circuit does.
  // A count whose circuit cannot run (a coefficient that would not encode
  // precisely against its power's scale) is skipped; when none can, the last
  // one's error says why.
  const std::size_t depth = std::max<std::size_t>(1, p.depth());
  std::size_t best = 0;
  std::pair<std::size_t, std::size_t> best_cost{std::numeric_limits<std::size_t>::max(), 0};
  for (std::size_t log_baby = 1; log_baby <= depth; ++log_baby) {
    Simulator trial(sim.context());
    detail::PolynomialCircuit<SimOps> circuit(SimOps{trial}, p, std::size_t{1} << log_baby);
    try {
      circuit.run(SimCiphertext(x.level, x.scale, x.size), target_scale);  // held nowhere: a trial
    } catch (const InvalidArgument&) {
      if (log_baby == depth && best == 0) throw;
      continue;
    }
    const std::pair<std::size_t, std::size_t> cost{trial.counts().key_switches(), trial.counts().multiplications};
    if (cost < best_cost) best_cost = cost, best = std::size_t{1} << log_baby;
  }
  return best;
}

SimCiphertext Simulator::evaluate_polynomial(const SimCiphertext& x, const Polynomial& p, double target_scale) const {
  require(p.depth() <= x.level, "ckks.evaluate_polynomial",
          "a degree-" + std::to_string(p.degree()) + " polynomial needs " + std::to_string(p.depth()) +
              " levels, but the ciphertext is at level " + std::to_string(x.level));
  if (target_scale == 0.0) target_scale = context_->scale_at(x.level - p.depth());
  detail::PolynomialCircuit<SimOps> circuit(SimOps{*this}, p, polynomial_baby_steps(*this, x, p, target_scale));
  return circuit.run(x, target_scale);
}

}  // namespace ringfire::ckks
