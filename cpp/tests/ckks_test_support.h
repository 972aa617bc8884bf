// Helpers shared by the CKKS and io GoogleTests: the small parameter set
// (N = 2^13, 50 + 40 + 40 bits, one 60-bit special prime; within the 128-bit
// bound) and an InvalidArgument matcher.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>

#include "ringfire/base/errors.h"
#include "ringfire/base/warning.h"
#include "ringfire/rlwe/params.h"

namespace ringfire::test {

constexpr std::size_t kN = 1 << 13;

inline ParameterLiteral small_literal(int scale_bits = 40) {
  ParameterLiteral lit;
  lit.poly_degree = kN;
  lit.q_bits = {50, 40, 40};
  lit.p_bits = {60};
  lit.scale_bits = scale_bits;
  return lit;
}

// Runs fn, expects InvalidArgument whose message contains `fragment`.
inline void expect_invalid(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected InvalidArgument containing \"" << fragment << "\", nothing was thrown";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message \"" << e.what() << "\" lacks \"" << fragment << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got another exception: " << e.what();
  }
}

// Collects the library's warnings for its lifetime instead of printing them.
class CapturedWarnings {
 public:
  CapturedWarnings() { set_warning_handler(&record); }
  ~CapturedWarnings() { set_warning_handler(nullptr); }
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;
  int count() const { return count_; }
  const std::string& last() const { return last_; }

 private:
  static void record(const std::string& message) {
    ++count_;
    last_ = message;
  }
  static inline int count_ = 0;
  static inline std::string last_;
};

}  // namespace ringfire::test
