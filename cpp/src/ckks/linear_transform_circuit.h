// The baby-step/giant-step evaluation of a LinearTransform, written once for
// ciphertexts and for the level/scale simulator. `Ops` supplies, on its Value
// type: level, mod_switch, rotate_many(x, steps) (hoisted), inner_sum(babies,
// giant step) (sum_b diagonal_b * rot_b(x), unrescaled), rotate(v, steps),
// add_inplace and rescale; and prefetch(giant step) (a hint: its diagonals are
// next). A chained transform (LinearTransform::Evaluation) uses rotate alone.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "ringfire/ckks/linear_transform.h"

namespace ringfire::ckks::detail {

// With rescale = false the sum is returned before its rescale (scale
// x.scale * lt.scale): key switches applied to it then add noise that the
// rescale divides away (bootstrapping's conjugation).
template <class Ops>
typename Ops::Value run_linear_transform(const Ops& ops, const typename Ops::Value& x, const LinearTransform& lt,
                                         bool rescale = true) {
  using Value = typename Ops::Value;
  std::optional<Value> lowered;
  if (ops.level(x) > lt.level()) lowered.emplace(ops.mod_switch(x, lt.level()));
  const Value& in = lowered ? *lowered : x;
  // Diagonals kept in spill files are read one giant step ahead, in the order they are used.
  const std::vector<LinearTransform::GiantStep>& giants = lt.giant_steps();
  std::optional<Value> total;
  if (lt.evaluation() == LinearTransform::Evaluation::chained) {
    const std::vector<std::size_t>& order = lt.giant_order();
    ops.prefetch(giants[order.back()]);
    // Each baby rotation from the one before it (the first from x).
    std::vector<Value> rotated;
    rotated.reserve(lt.baby_rotations().size());  // the pointers below stay valid
    std::map<long long, const Value*> babies;
    const Value* last = &in;
    long long at = 0;
    for (long long b : lt.baby_rotations()) {
      if (b != at) last = &rotated.emplace_back(ops.rotate(*last, b - at)), at = b;
      babies[b] = last;
    }
    // Horner's rule from the last giant step down to the first.
    for (std::size_t j = order.size(); j-- > 0;) {
      if (j > 0) ops.prefetch(giants[order[j - 1]]);
      Value inner = ops.inner_sum(babies, giants[order[j]]);
      if (total) {
        Value moved = ops.rotate(*total, lt.giant_gap(j));
        ops.add_inplace(moved, inner);
        total.emplace(std::move(moved));
      } else {
        total.emplace(std::move(inner));
      }
    }
    if (const long long first = giants[order.front()].rotation; first != 0) total.emplace(ops.rotate(*total, first));
    return rescale ? ops.rescale(*total) : std::move(*total);
  }
  ops.prefetch(giants.front());
  // rot_b(x) for every baby step, sharing one ModUp.
  std::vector<Value> rotated = ops.rotate_many(in, lt.baby_rotations());
  std::map<long long, const Value*> babies;
  for (std::size_t i = 0; i < rotated.size(); ++i) babies[lt.baby_rotations()[i]] = &rotated[i];
  for (std::size_t j = 0; j < giants.size(); ++j) {
    const LinearTransform::GiantStep& giant = giants[j];
    if (j + 1 < giants.size()) ops.prefetch(giants[j + 1]);
    Value inner = ops.inner_sum(babies, giant);
    if (giant.rotation != 0) inner = ops.rotate(inner, giant.rotation);
    if (total) ops.add_inplace(*total, inner);
    else total.emplace(std::move(inner));
  }
  return rescale ? ops.rescale(*total) : std::move(*total);
}

}  // namespace ringfire::ckks::detail
