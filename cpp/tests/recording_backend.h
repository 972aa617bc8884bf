// A backend for tests: every kernel runs on the CPU backend, and each call is
// recorded with the operation label active at the time (base/op_label.h) —
// the shape of a tracing backend. register_recording_backend() makes it the
// device kind "recording" (host memory, memcpy copies).
#pragma once

#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/backend.h"

namespace ringfire::test {

class RecordingBackend final : public Backend {
 public:
  std::string name() const override { return "recording"; }

  // (kernel, operation label) per call, in order.
  std::vector<std::pair<std::string, std::string>> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.clear();
  }

  void ntt_forward(u64* d, std::size_t b, const RnsBase& base) override { cpu("ntt_forward").ntt_forward(d, b, base); }
  void ntt_inverse(u64* d, std::size_t b, const RnsBase& base) override { cpu("ntt_inverse").ntt_inverse(d, b, base); }
  void add(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu("add").add(a, b, o, n, base);
  }
  void sub(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu("sub").sub(a, b, o, n, base);
  }
  void negate(const u64* a, u64* o, std::size_t n, const RnsBase& base) override { cpu("negate").negate(a, o, n, base); }
  void multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu("multiply").multiply(a, b, o, n, base);
  }
  void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t n, const RnsBase& base) override {
    cpu("multiply_add").multiply_add(a, b, acc, n, base);
  }
  void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                          u64* out0, u64* out1, const RnsBase& base) override {
    cpu("inner_product_pair").inner_product_pair(in, b, a, terms, out0, out1, base);
  }
  void linear_combination(const u64* const* in, const u64* w, std::size_t terms, u64* out, std::size_t n,
                          const RnsBase& base) override {
    cpu("linear_combination").linear_combination(in, w, terms, out, n, base);
  }
  void multiply_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    cpu("multiply_scalar").multiply_scalar(a, s, o, n, base);
  }
  void add_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    cpu("add_scalar").add_scalar(a, s, o, n, base);
  }
  void copy(const u64* src, u64* dst, std::size_t words) override { cpu("copy").copy(src, dst, words); }
  void zero(u64* dst, std::size_t words) override { cpu("zero").zero(dst, words); }
  void poly_multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base,
                     PolyMulMethod m) override {
    cpu("poly_multiply").poly_multiply(a, b, o, n, base, m);
  }
  void base_convert(const u64* in, u64* out, std::size_t n, const BaseConverter& conv, BaseConversion k) override {
    cpu("base_convert").base_convert(in, out, n, conv, k);
  }
  void automorphism(const u64* in, u64* out, std::size_t n, const RnsBase& base, u64 g, Form f) override {
    cpu("automorphism").automorphism(in, out, n, base, g, f);
  }

 private:
  Backend& cpu(const char* kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.emplace_back(kernel, current_op_label());
    return cpu::cpu_backend();
  }
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> calls_;
};

inline RecordingBackend& recording_backend() {
  static RecordingBackend backend;
  return backend;
}

// The kind "recording" (registered once); its devices are host memory.
inline DeviceKind register_recording_backend() {
  static const DeviceKind kind = register_backend(
      {"recording", [](int) -> Backend& { return recording_backend(); },
       [](int) -> MemoryPool& { return host_pool(); },
       [](void* dst, const Device&, const void* src, const Device&, std::size_t bytes) { std::memcpy(dst, src, bytes); }});
  return kind;
}

}  // namespace ringfire::test
