// Typed exceptions of the public API. Messages start with the operation in
// brackets ("[ring.ntt] ..."), so a user sees which call failed and why.
// The Python bindings map InvalidArgument -> ValueError, NotSupported ->
// NotImplementedError (a feature this build or machine lacks) and
// DeviceError -> ringfire.DeviceError, a RuntimeError (a device that exists
// failed: a CUDA error, out of device memory).
#pragma once

#include <concepts>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringfire {

class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class NotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "[op] msg", built by appending (sidesteps a GCC 12 -Wrestrict false positive).
inline std::string tagged_message(std::string_view op, const std::string& msg) {
  std::string text;
  text.reserve(op.size() + msg.size() + 3);
  text.append("[").append(op).append("] ").append(msg);
  return text;
}

[[noreturn]] inline void throw_invalid(std::string_view op, const std::string& msg) {
  throw InvalidArgument(tagged_message(op, msg));
}

[[noreturn]] inline void throw_not_supported(std::string_view op, const std::string& msg) {
  throw NotSupported(tagged_message(op, msg));
}

[[noreturn]] inline void throw_device_error(std::string_view op, const std::string& msg) {
  throw DeviceError(tagged_message(op, msg));
}

// Argument check at an API boundary: always on, throws InvalidArgument.
inline void require(bool ok, std::string_view op, const std::string& msg) {
  if (!ok) throw_invalid(op, msg);
}

// A literal message stays a pointer until the check fails: a std::string made
// for it on every pass allocates (past the short-string buffer), and checks run
// per element in encoders and loaders.
inline void require(bool ok, std::string_view op, const char* msg) {
  if (!ok) [[unlikely]] throw_invalid(op, msg);
}

// The same check for loops over elements: the message is built only when the
// check fails (a message built on every pass took 3 ms of a 2^16-slot encode).
template <std::invocable MakeMessage>
inline void require(bool ok, std::string_view op, MakeMessage&& make_message) {
  if (!ok) [[unlikely]] throw_invalid(op, make_message());
}

}  // namespace ringfire
