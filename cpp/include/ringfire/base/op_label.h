// The high-level operation (ckks.rescale, ckks.rotate, ...) the calling
// thread is inside, for profilers that group kernels by operation. The
// outermost label wins: a rotation's key switch is charged to the rotation.
#pragma once

namespace ringfire {

// The outermost active label, or "" outside every labelled operation.
const char* current_op_label();

// The calling thread's outermost label as a parallel loop hands it to the threads that run
// its blocks (nullptr outside every labelled operation).
const char* op_label_to_carry();

class OpLabel {
 public:
  // `label` must outlive the scope (a string literal). nullptr changes nothing: a pool
  // thread enters its loop caller's op_label_to_carry() this way, whatever it is.
  explicit OpLabel(const char* label);
  ~OpLabel();
  OpLabel(const OpLabel&) = delete;
  OpLabel& operator=(const OpLabel&) = delete;

 private:
  bool outermost_;
};

}  // namespace ringfire
