// Helpers shared by the CKKS and io GoogleTests: the small parameter set
// (N = 2^13, 50 + 40 + 40 bits, one 60-bit special prime; within the 128-bit
// bound) and an InvalidArgument matcher.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>

#include "ringfire/base/errors.h"
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

}  // namespace ringfire::test
