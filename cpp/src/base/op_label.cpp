#include "ringfire/base/op_label.h"

namespace ringfire {

namespace {
thread_local const char* t_label = nullptr;
}  // namespace

const char* current_op_label() { return t_label != nullptr ? t_label : ""; }

const char* op_label_to_carry() { return t_label; }

OpLabel::OpLabel(const char* label) : outermost_(t_label == nullptr) {
  if (outermost_) t_label = label;
}

OpLabel::~OpLabel() {
  if (outermost_) t_label = nullptr;
}

}  // namespace ringfire
