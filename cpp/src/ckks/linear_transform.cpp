#include "ringfire/ckks/linear_transform.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "ringfire/base/errors.h"
#include "ringfire/base/parallel.h"

namespace ringfire::ckks {

namespace {

constexpr const char* kOp = "ckks.LinearTransform";

long long modulo(long long k, std::size_t n) {
  const long long m = static_cast<long long>(n);
  return ((k % m) + m) % m;
}

}  // namespace

LinearTransform::Diagonals LinearTransform::diagonals_of(const std::vector<Complex>& matrix, std::size_t n) {
  require(n >= 1 && std::has_single_bit(n), kOp, "the dimension must be a power of two, got " + std::to_string(n));
  require(matrix.size() == n * n, kOp,
          "expected an " + std::to_string(n) + " x " + std::to_string(n) + " matrix (" + std::to_string(n * n) +
              " values), got " + std::to_string(matrix.size()));
  Diagonals out;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<Complex> d(n);
    bool nonzero = false;
    for (std::size_t j = 0; j < n; ++j) {
      d[j] = matrix[j * n + (j + k) % n];
      nonzero = nonzero || d[j] != Complex(0.0, 0.0);
    }
    if (nonzero) out.emplace(static_cast<long long>(k), std::move(d));
  }
  return out;
}

std::size_t LinearTransform::best_baby_steps(const std::vector<long long>& indices, std::size_t n) {
  // A hoisted baby rotation skips the ModUp: about half a rotation.
  std::size_t best = 1;
  double best_cost = 1e300;
  for (std::size_t n1 = 1; n1 <= n; n1 <<= 1) {
    std::set<long long> babies, giants;
    for (long long k : indices) {
      const long long b = k % static_cast<long long>(n1);
      if (b != 0) babies.insert(b);
      if (k - b != 0) giants.insert(k - b);
    }
    const double cost = 0.5 * static_cast<double>(babies.size()) + static_cast<double>(giants.size());
    if (cost < best_cost) best_cost = cost, best = n1;
  }
  return best;
}

LinearTransform::LinearTransform(ContextPtr context, Diagonals diagonals, std::size_t level, double scale,
                                 std::size_t baby_steps, Evaluation evaluation)
    : context_(std::move(context)), level_(level), evaluation_(evaluation) {
  require(context_ != nullptr, kOp, "needs a context");
  require(!diagonals.empty(), kOp, "needs at least one diagonal");
  n_ = diagonals.begin()->second.size();
  const std::size_t slots = context_->slots();
  require(n_ >= 1 && std::has_single_bit(n_) && n_ <= slots, kOp,
          "diagonals must have a power-of-two length of at most " + std::to_string(slots) + " (the slots), got " +
              std::to_string(n_));
  require(level_ <= context_->max_level(), kOp,
          "level " + std::to_string(level_) + " exceeds the maximum " + std::to_string(context_->max_level()));
  scale_ = scale == 0.0 ? static_cast<double>(context_->params().q_primes()[level_]) : scale;
  require(std::isfinite(scale_) && scale_ > 0.0, kOp, "the scale must be positive and finite");

  // Indices modulo n; diagonals that land on the same index add up.
  std::map<long long, std::vector<Complex>> merged;
  for (auto& [k, d] : diagonals) {
    require(d.size() == n_, kOp,
            "diagonal " + std::to_string(k) + " has " + std::to_string(d.size()) + " values, the first has " +
                std::to_string(n_));
    for (const Complex& v : d)
      require(std::isfinite(v.real()) && std::isfinite(v.imag()), kOp,
              [&] { return "diagonal " + std::to_string(k) + " holds a non-finite value"; });
    auto [it, fresh] = merged.try_emplace(modulo(k, n_), std::move(d));  // d stays if the index is taken
    if (!fresh)
      for (std::size_t j = 0; j < n_; ++j) it->second[j] += d[j];
  }
  diagonal_count_ = merged.size();
  std::vector<long long> indices;
  for (const auto& [k, d] : merged) indices.push_back(k);
  baby_ = baby_steps == 0 ? best_baby_steps(indices, n_) : baby_steps;
  require(std::has_single_bit(baby_) && baby_ <= n_, kOp,
          "baby_steps must be a power of two of at most the dimension " + std::to_string(n_) + ", got " +
              std::to_string(baby_));

  // Group by giant step; pre-rotate each diagonal by -g and tile it over the slots.
  std::map<long long, std::vector<std::pair<long long, const std::vector<Complex>*>>> groups;
  std::set<long long> babies;
  for (const auto& [k, d] : merged) {
    const long long b = k % static_cast<long long>(baby_);
    groups[k - b].emplace_back(b, &d);
    babies.insert(b);
  }
  baby_rotations_.assign(babies.begin(), babies.end());

  // Every diagonal is encoded on its own (an FFT and the level's NTTs): in parallel, each
  // worker with its own tiling buffer. A model's transforms encode thousands of them once.
  struct Job {
    long long giant, baby;
    const std::vector<Complex>* diagonal;
  };
  std::vector<Job> jobs;
  for (const auto& [g, terms] : groups)
    for (const auto& [b, d] : terms) jobs.push_back({g, b, d});
  std::vector<std::optional<Plaintext>> encoded(jobs.size());
  const Encoder& encoder = context_->encoder();
  auto body = [&](std::size_t begin, std::size_t end) {
    std::vector<Complex> tiled(slots);
    for (std::size_t i = begin; i < end; ++i) {
      const Job& job = jobs[i];
      for (std::size_t j = 0; j < slots; ++j)
        tiled[j] = (*job.diagonal)[static_cast<std::size_t>(modulo(static_cast<long long>(j) - job.giant, n_))];
      encoded[i].emplace(encoder.encode(tiled.data(), slots, level_, scale_));
    }
  };
  parallel_items(jobs.size(), body);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (giants_.empty() || giants_.back().rotation != jobs[i].giant) giants_.push_back(GiantStep{jobs[i].giant, {}});
    giants_.back().terms.emplace_back(jobs[i].baby, std::move(*encoded[i]));
  }
  order_giants();
}

void LinearTransform::order_giants() {
  // giants_ is sorted by rotation. On full packing (n = the slots) rotations
  // are cyclic, so Horner's rule may start anywhere: it starts after the
  // largest gap, which the steps then never cross. With sparse packing the
  // order stays increasing, so that the steps add up to each giant's own
  // rotation exactly (the input need not be n-periodic).
  const std::size_t m = giants_.size();
  std::size_t start = 0;
  if (n_ == context_->slots() && m > 1) {
    long long widest = giants_.front().rotation + static_cast<long long>(n_) - giants_.back().rotation;
    for (std::size_t j = 0; j + 1 < m; ++j)
      if (const long long gap = giants_[j + 1].rotation - giants_[j].rotation; gap > widest)
        widest = gap, start = j + 1;
  }
  giant_order_.clear();
  for (std::size_t j = 0; j < m; ++j) giant_order_.push_back((start + j) % m);
}

long long LinearTransform::giant_gap(std::size_t j) const {
  return modulo(giants_[giant_order_[j + 1]].rotation - giants_[giant_order_[j]].rotation, n_);
}

std::vector<long long> LinearTransform::rotations() const {
  std::set<long long> out;
  if (evaluation_ == Evaluation::hoisted) {
    for (long long b : baby_rotations_) out.insert(b);
    for (const GiantStep& g : giants_) out.insert(g.rotation);
  } else {
    long long at = 0;
    for (long long b : baby_rotations_) out.insert(b - at), at = b;
    for (std::size_t j = 0; j + 1 < giant_order_.size(); ++j) out.insert(giant_gap(j));
    out.insert(giants_[giant_order_.front()].rotation);
  }
  out.erase(0);
  return {out.begin(), out.end()};
}

const Device& LinearTransform::device() const { return giants_.front().terms.front().second.device(); }

LinearTransform LinearTransform::to(const Device& device) const {
  LinearTransform out;
  out.context_ = context_;
  out.n_ = n_;
  out.level_ = level_;
  out.baby_ = baby_;
  out.diagonal_count_ = diagonal_count_;
  out.scale_ = scale_;
  out.evaluation_ = evaluation_;
  out.baby_rotations_ = baby_rotations_;
  out.giant_order_ = giant_order_;
  for (const GiantStep& g : giants_) {
    GiantStep moved{g.rotation, {}};
    for (const auto& [b, plain] : g.terms) moved.terms.emplace_back(b, plain.to(device));
    out.giants_.push_back(std::move(moved));
  }
  return out;
}

}  // namespace ringfire::ckks
