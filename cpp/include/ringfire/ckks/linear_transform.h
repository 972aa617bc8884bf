// Plaintext matrix times encrypted vector, by diagonals with baby-step /
// giant-step rotations (Halevi-Shoup; the BSGS form of Bossuat et al.):
//
//   y = sum_k diag_k * rot_k(x),   diag_k[j] = M[j][(j + k) mod n],
//     = sum_g rot_g( sum_b rot_-g(diag_{g+b}) * rot_b(x) )   with k = g + b,
//
// where the baby steps b lie in [0, n1) and the giant steps g are multiples
// of n1. The baby rotations of x share one ModUp (hoisting),
// each giant step's inner sum is one lazy-reduced pass (inner_product_pair),
// and each giant step costs one rotation. The pre-rotated diagonals are
// encoded once, here, at the transform's level and scale.
//
// The dimension n (a power of two, at most N/2) is the length of the
// diagonals: for n < N/2 the transform acts on n-periodic slot vectors
// (sparse packing), whose rotations are rotations modulo n.
//
// Chained evaluation needs far fewer Galois keys, for more time: each baby
// rotation is made from the one before it (rot_b = rot_{b - b'}(rot_b'), no
// hoisting), and the giant steps are summed by Horner's rule,
//   sum_j rot_{g_j}(inner_j) = rot_{g_0}(inner_0 + rot_{g_1 - g_0}(inner_1 + ...)),
// in a cyclic order of the g_j that skips their largest gap, so that the
// steps between them repeat. For a pass of the bootstrap's DFT that is three
// keys (the baby stride, the giant stride, the first giant step) instead of
// one per baby and giant step.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "ringfire/ckks/context.h"

namespace ringfire::ckks {

class LinearTransform {
 public:
  using Diagonals = std::map<long long, std::vector<Complex>>;

  // `diagonals` by index k in [0, n) (negative indices are taken modulo n);
  // all of length n. `scale` (0: q_level, which keeps the input's scale) is
  // the encoding scale of the diagonals; `baby_steps` (0: the count with the
  // cheapest rotations) is n1, a power of two. Raises InvalidArgument for an
  // empty map, ragged or non-power-of-two lengths, non-finite values, or a
  // level beyond the context's. Taken by value: a caller that moves its map in
  // holds no second copy while the diagonals are encoded.
  // How the rotations are evaluated (see above): the keys each needs differ.
  enum class Evaluation { hoisted, chained };

  LinearTransform(ContextPtr context, Diagonals diagonals, std::size_t level, double scale = 0.0,
                  std::size_t baby_steps = 0, Evaluation evaluation = Evaluation::hoisted);
  // Move-only, like the plaintexts it holds (spelled out: std::vector claims
  // to be copyable even when its values are not).
  LinearTransform(LinearTransform&&) noexcept = default;
  LinearTransform& operator=(LinearTransform&&) noexcept = default;
  LinearTransform(const LinearTransform&) = delete;
  LinearTransform& operator=(const LinearTransform&) = delete;

  // The nonzero diagonals of a dense n x n matrix (row-major).
  static Diagonals diagonals_of(const std::vector<Complex>& matrix, std::size_t n);

  const ContextPtr& context() const { return context_; }
  std::size_t dimension() const { return n_; }
  std::size_t level() const { return level_; }
  double scale() const { return scale_; }
  std::size_t baby_steps() const { return baby_; }
  std::size_t diagonal_count() const { return diagonal_count_; }

  Evaluation evaluation() const { return evaluation_; }
  // The rotation steps the evaluation needs Galois keys for, each once (none
  // is 0): hoisted, every baby and giant step; chained, the steps between
  // consecutive babies and giants and the first giant step.
  std::vector<long long> rotations() const;
  // The baby steps b in increasing order (0 among them when a diagonal needs it).
  const std::vector<long long>& baby_rotations() const { return baby_rotations_; }

  // One giant step: its rotation and the (baby step, pre-rotated diagonal) terms.
  struct GiantStep {
    long long rotation;
    std::vector<std::pair<long long, Plaintext>> terms;
  };
  const std::vector<GiantStep>& giant_steps() const { return giants_; }
  // Chained: the giant steps (indices into giant_steps()) in Horner's order,
  // first to last; the rotation from one to the next is giant_gap(j), the
  // step from order[j] to order[j + 1] (mod n).
  const std::vector<std::size_t>& giant_order() const { return giant_order_; }
  long long giant_gap(std::size_t j) const;

  // The same transform with its plaintexts on `device` (uploaded once).
  LinearTransform to(const Device& device) const;
  const Device& device() const;

  // The baby-step count rotations are cheapest with: baby rotations are
  // hoisted (about half the cost of a full one), giant ones are not.
  static std::size_t best_baby_steps(const std::vector<long long>& indices, std::size_t n);

 private:
  LinearTransform() = default;
  // giant_order_ from giants_ (see giant_order()).
  void order_giants();

  ContextPtr context_;
  std::size_t n_ = 0, level_ = 0, baby_ = 1, diagonal_count_ = 0;
  double scale_ = 0.0;
  Evaluation evaluation_ = Evaluation::hoisted;
  std::vector<long long> baby_rotations_;
  std::vector<GiantStep> giants_;
  std::vector<std::size_t> giant_order_;
};

using LinearTransformPtr = std::shared_ptr<const LinearTransform>;

}  // namespace ringfire::ckks
