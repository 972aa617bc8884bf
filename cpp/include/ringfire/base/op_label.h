// The high-level operation (ckks.rescale, ckks.rotate, ...) the calling
// thread is inside, for profilers that group kernels by operation. The
// outermost label wins: a rotation's key switch is charged to the rotation.
#pragma once

namespace ringfire {

// The outermost active label, or "" outside every labelled operation.
const char* current_op_label();

class OpLabel {
 public:
  // `label` must outlive the scope (a string literal).
  explicit OpLabel(const char* label);
  ~OpLabel();
  OpLabel(const OpLabel&) = delete;
  OpLabel& operator=(const OpLabel&) = delete;

 private:
  bool outermost_;
};

}  // namespace ringfire
