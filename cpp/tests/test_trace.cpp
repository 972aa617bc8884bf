// The process-wide backend trace (ring/trace.h): what it counts, dry runs,
// one trace at a time, labels, and nothing counted once it is closed.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ringfire/arith/primes.h"
#include "ringfire/base/buffer.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/rns_base.h"
#include "ringfire/ring/trace.h"

namespace ringfire {
namespace {

constexpr std::size_t kN = 1024;

std::shared_ptr<const RnsBase> two_limbs() {
  return std::make_shared<const RnsBase>(kN, find_ntt_primes(50, 2, kN));
}

std::vector<u64> ramp(std::size_t words) {
  std::vector<u64> v(words);
  for (std::size_t i = 0; i < words; ++i) v[i] = i;
  return v;
}

TEST(Trace, CountsShapesBytesAndLabels) {
  const auto base = two_limbs();
  Buffer a(2 * kN), b(2 * kN);
  start_trace(false);
  {
    OpLabel label("test.op");
    backend_for(Device::cpu()).ntt_forward(a.data(), 1, *base);
    backend_for(Device::cpu()).ntt_forward(a.data(), 1, *base);
    backend_for(Device::cpu()).add(a.data(), a.data(), b.data(), 1, *base);
  }
  backend_for(Device::cpu()).copy(a.data(), b.data(), 100);
  const std::vector<TraceEntry> entries = stop_trace();
  ASSERT_EQ(entries.size(), 3u);
  // Sorted by label, then kernel: the unlabelled copy first.
  EXPECT_EQ(entries[0].kernel, "copy");
  EXPECT_EQ(entries[0].label, "");
  EXPECT_EQ(entries[0].words, 100u);
  EXPECT_EQ(entries[1].kernel, "add");
  EXPECT_EQ(entries[1].bytes_read, 2 * 2 * kN * 8);
  EXPECT_EQ(entries[1].bytes_written, 2 * kN * 8);
  const TraceEntry& ntt = entries[2];
  EXPECT_EQ(ntt.kernel, "ntt_forward");
  EXPECT_EQ(ntt.label, "test.op");
  EXPECT_EQ(ntt.device, "cpu");
  EXPECT_EQ(ntt.n, kN);
  EXPECT_EQ(ntt.limbs, 2u);
  EXPECT_EQ(ntt.calls, 2u);
  EXPECT_EQ(ntt.polys, 2u);
  EXPECT_EQ(ntt.bytes_read, 2 * 2 * kN * 8);
}

TEST(Trace, DryRunRecordsWithoutComputing) {
  const auto base = two_limbs();
  const std::vector<u64> input = ramp(2 * kN);
  Buffer a(2 * kN);
  std::copy(input.begin(), input.end(), a.data());
  start_trace(true);
  EXPECT_TRUE(trace_dry_run());
  backend_for(Device::cpu()).ntt_forward(a.data(), 1, *base);
  const std::vector<TraceEntry> entries = stop_trace();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].calls, 1u);
  EXPECT_TRUE(std::equal(input.begin(), input.end(), a.data()));  // untouched
  // Closed: the same call computes again, uncounted.
  backend_for(Device::cpu()).ntt_forward(a.data(), 1, *base);
  EXPECT_FALSE(std::equal(input.begin(), input.end(), a.data()));
  EXPECT_FALSE(trace_open());
}

TEST(Trace, OneAtATime) {
  EXPECT_THROW(stop_trace(), InvalidArgument);
  start_trace(false);
  EXPECT_TRUE(trace_open());
  EXPECT_THROW(start_trace(false), InvalidArgument);
  EXPECT_TRUE(stop_trace().empty());
  EXPECT_EQ(backend_for(Device::cpu()).name(), "cpu");
}

}  // namespace
}  // namespace ringfire
