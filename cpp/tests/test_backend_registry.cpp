// Backends register by name (ring/backend.h): a new one — here a backend that
// forwards to the CPU and counts its calls, the shape of a recording backend —
// is one registration, after which its devices parse, allocate, copy and run
// the checked polynomial operations like any other.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/device_copy.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/poly_ops.h"

namespace ringfire {
namespace {

// Every kernel runs on the CPU backend; `calls` counts them.
class CountingBackend final : public Backend {
 public:
  std::atomic<int> calls{0};
  std::string name() const override { return "counting"; }

  void ntt_forward(u64* d, std::size_t b, const RnsBase& base) override { cpu().ntt_forward(d, b, base); }
  void ntt_inverse(u64* d, std::size_t b, const RnsBase& base) override { cpu().ntt_inverse(d, b, base); }
  void add(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu().add(a, b, o, n, base);
  }
  void sub(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu().sub(a, b, o, n, base);
  }
  void negate(const u64* a, u64* o, std::size_t n, const RnsBase& base) override { cpu().negate(a, o, n, base); }
  void multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    cpu().multiply(a, b, o, n, base);
  }
  void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t n, const RnsBase& base) override {
    cpu().multiply_add(a, b, acc, n, base);
  }
  void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                          u64* out0, u64* out1, const RnsBase& base) override {
    cpu().inner_product_pair(in, b, a, terms, out0, out1, base);
  }
  void linear_combination(const u64* const* in, const u64* w, std::size_t terms, u64* out, std::size_t n,
                          const RnsBase& base) override {
    cpu().linear_combination(in, w, terms, out, n, base);
  }
  void multiply_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    cpu().multiply_scalar(a, s, o, n, base);
  }
  void add_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    cpu().add_scalar(a, s, o, n, base);
  }
  void copy(const u64* src, u64* dst, std::size_t words) override { cpu().copy(src, dst, words); }
  void zero(u64* dst, std::size_t words) override { cpu().zero(dst, words); }
  void poly_multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base,
                     PolyMulMethod m) override {
    cpu().poly_multiply(a, b, o, n, base, m);
  }
  void base_convert(const u64* in, u64* out, std::size_t n, const BaseConverter& conv, BaseConversion k) override {
    cpu().base_convert(in, out, n, conv, k);
  }
  void automorphism(const u64* in, u64* out, std::size_t n, const RnsBase& base, u64 g, Form f) override {
    cpu().automorphism(in, out, n, base, g, f);
  }

 private:
  Backend& cpu() {
    ++calls;
    return cpu::cpu_backend();
  }
};

CountingBackend& counting() {
  static CountingBackend backend;
  return backend;
}

// Host memory: the kind's buffers live in the host pool and copy with memcpy.
void host_copy(void* dst, const Device&, const void* src, const Device&, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

DeviceKind register_counting() {
  static const DeviceKind kind = register_backend(
      {"counting", [](int) -> Backend& { return counting(); }, [](int) -> MemoryPool& { return host_pool(); },
       &host_copy});
  return kind;
}

TEST(BackendRegistry, TheBuiltInKindsAreThere) {
  const auto names = device_kind_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "cpu");
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());  // the backend or its stand-in
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:3").str(), "cuda:3");
  EXPECT_THROW(Device::parse("counting_not_registered"), InvalidArgument);
  EXPECT_THROW(Device::parse("cpu:1"), InvalidArgument);
  EXPECT_THROW(Device::parse("cuda:x"), InvalidArgument);
}

TEST(BackendRegistry, ANewBackendIsOneRegistration) {
  const DeviceKind kind = register_counting();
  const Device device = Device::parse("counting:2");
  EXPECT_EQ(device.kind, kind);
  EXPECT_EQ(device.index, 2);
  EXPECT_EQ(device.str(), "counting:2");
  EXPECT_EQ(&backend_for(device), &counting());

  const std::size_t n = 1024;
  auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(50, 2, n));
  Poly host(base);
  for (std::size_t i = 0; i < host.words(); ++i) host.data()[i] = (i * 7919) % base->modulus(i / n).value();
  Poly expected = host.clone();
  ntt_inplace(expected);

  const int before = counting().calls.load();
  Poly on_device(base, Form::coeff, device);  // zeroed by the kind's backend
  copy_between(on_device.data(), device, host.data(), Device::cpu(), host.words() * sizeof(u64));
  ntt_inplace(on_device);  // the checked operation dispatches on the operands' device
  EXPECT_GT(counting().calls.load(), before);
  EXPECT_TRUE(std::equal(expected.data(), expected.data() + expected.words(), on_device.data()));
  // Operands on different devices are refused by the checked operations.
  Poly out(base, Form::eval);
  EXPECT_THROW(add(on_device, expected, out), InvalidArgument);
}

TEST(BackendRegistry, RegistrationsAreChecked) {
  EXPECT_THROW(register_backend({"cpu", [](int) -> Backend& { return counting(); }, nullptr, nullptr}),
               InvalidArgument);
  EXPECT_THROW(register_backend({"no factory", nullptr, nullptr, nullptr}), InvalidArgument);
  EXPECT_THROW(register_backend({"bad name!", [](int) -> Backend& { return counting(); }, nullptr, nullptr}),
               InvalidArgument);
}

}  // namespace
}  // namespace ringfire
