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

// A thread running a block of another thread's loop: inside the label that loop's caller is
// inside, for the block's duration, so that a kernel is charged to the operation it serves
// whichever thread runs it (nothing changes for nullptr, or where this thread has a label).
class CarriedOpLabel {
 public:
  explicit CarriedOpLabel(const char* label);
  ~CarriedOpLabel();
  CarriedOpLabel(const CarriedOpLabel&) = delete;
  CarriedOpLabel& operator=(const CarriedOpLabel&) = delete;

 private:
  bool set_;
};

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
