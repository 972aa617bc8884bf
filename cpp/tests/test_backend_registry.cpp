// Backends register by name (ring/backend.h): a new one — here a backend that
// forwards to the CPU and records its calls (recording_backend.h) — is one
// registration, after which its devices parse, allocate, copy and run the
// checked polynomial operations like any other.
#include <gtest/gtest.h>

#include <algorithm>

#include "recording_backend.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/device_copy.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/poly_ops.h"

namespace ringfire {
namespace {

using test::recording_backend;
using test::register_recording_backend;

TEST(BackendRegistry, TheBuiltInKindsAreThere) {
  const auto names = device_kind_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "cpu");
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());  // the backend or its stand-in
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:3").str(), "cuda:3");
  EXPECT_THROW(Device::parse("not_registered"), InvalidArgument);
  EXPECT_THROW(Device::parse("cpu:1"), InvalidArgument);
  EXPECT_THROW(Device::parse("cuda:x"), InvalidArgument);
}

TEST(BackendRegistry, ANewBackendIsOneRegistration) {
  const DeviceKind kind = register_recording_backend();
  const Device device = Device::parse("recording:2");
  EXPECT_EQ(device.kind, kind);
  EXPECT_EQ(device.index, 2);
  EXPECT_EQ(device.str(), "recording:2");
  EXPECT_EQ(&backend_for(device), &recording_backend());

  const std::size_t n = 1024;
  auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(50, 2, n));
  Poly host(base);
  for (std::size_t i = 0; i < host.words(); ++i) host.data()[i] = (i * 7919) % base->modulus(i / n).value();
  Poly expected = host.clone();
  ntt_inplace(expected);

  recording_backend().clear();
  Poly on_device(base, Form::coeff, device);  // zeroed by the kind's backend
  copy_between(on_device.data(), device, host.data(), Device::cpu(), host.words() * sizeof(u64));
  ntt_inplace(on_device);  // the checked operation dispatches on the operands' device
  EXPECT_FALSE(recording_backend().calls().empty());
  EXPECT_TRUE(std::equal(expected.data(), expected.data() + expected.words(), on_device.data()));
  // Operands on different devices are refused by the checked operations, naming both.
  Poly out(base, Form::eval);
  try {
    add(on_device, expected, out);
    ADD_FAILURE() << "operands on recording:2 and cpu were added";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("operands live on different devices: recording:2 vs cpu (move one with"),
              std::string::npos)
        << e.what();
  }
}

TEST(BackendRegistry, RegistrationsAreChecked) {
  const BackendFactory factory = [](int) -> Backend& { return recording_backend(); };
  EXPECT_THROW(register_backend({"cpu", factory, nullptr, nullptr}), InvalidArgument);
  EXPECT_THROW(register_backend({"no_factory", nullptr, nullptr, nullptr}), InvalidArgument);
  EXPECT_THROW(register_backend({"bad name!", factory, nullptr, nullptr}), InvalidArgument);
}

}  // namespace
}  // namespace ringfire
