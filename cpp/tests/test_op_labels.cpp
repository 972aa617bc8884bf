// Every evaluator operation and key switching carry an OpLabel: run on the
// recording backend, each kernel call must say which scheme-level operation
// it served (what profiles and traces group by).
#include <gtest/gtest.h>

#include <chrono>
#include <complex>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ckks_test_support.h"
#include "recording_backend.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/parallel.h"
#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

using ckks::Complex;

// The labels of the kernels `run` issued on the recording device.
std::set<std::string> labels_of(const std::function<void()>& run) {
  test::recording_backend().clear();
  run();
  std::set<std::string> labels;
  for (const auto& [kernel, label] : test::recording_backend().calls()) labels.insert(label);
  return labels;
}

// A parallel loop's blocks run on the pool's threads as well as on its caller: each sees the
// label its caller is inside (so a kernel's label does not depend on which thread ran it), and
// none outside every operation; a worker holds no label once its block is done.
TEST(OpLabels, PoolThreadsCarryTheCallersLabel) {
  const int threads = num_threads();
  set_num_threads(4);
  const auto labels_seen = [](std::size_t items) {
    std::mutex mutex;
    std::set<std::string> seen;
    auto body = [&](std::size_t begin, std::size_t end) {
      // Long enough that the workers claim blocks before the caller has run them all.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      for (std::size_t i = begin; i < end; ++i) {
        const std::lock_guard<std::mutex> lock(mutex);
        seen.insert(current_op_label());
      }
    };
    parallel_items(items, body);
    return seen;
  };
  for (int round = 0; round < 10; ++round) {
    {
      const OpLabel label("ckks.rotate");
      EXPECT_EQ(labels_seen(64), std::set<std::string>{"ckks.rotate"});
    }
    EXPECT_EQ(labels_seen(64), std::set<std::string>{""});
  }
  set_num_threads(threads);
}

TEST(OpLabels, EveryOperationLabelsItsKernels) {
  const Device device{test::register_recording_backend(), 0};
  auto ctx = std::make_shared<const ckks::Context>(Parameters(test::small_literal()));
  Prng prng = Prng::from_seed(Prng::Seed{3});
  const SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
  const PublicKey pk = generate_public_key(sk, prng);
  const RelinKey rk = generate_relin_key(sk, prng).to(device);
  const GaloisKeys gk =
      generate_galois_keys(sk, {ctx->rlwe()->galois_element(1), ctx->rlwe()->conjugation_element()}, prng).to(device);
  const ckks::Evaluator ev(ctx);
  std::vector<Complex> z(ctx->slots(), Complex(0.5, 0.0));
  z[1] = 0.25;
  const Plaintext p = ctx->encoder().encode(z.data(), z.size(), 2, ctx->scale_at(2));
  const Ciphertext a = encrypt_public(pk, p, prng).to(device), b = encrypt_public(pk, p, prng).to(device);
  const Ciphertext product = ev.multiply(a, b);
  const Ciphertext fresh_product = ev.relinearize(product, rk);

  const std::map<std::string, std::function<void()>> ops{
      {"ckks.add", [&] { (void)ev.add(a, b); }},
      {"ckks.sub", [&] { (void)ev.sub(a, b); }},
      {"ckks.negate", [&] { (void)ev.negate(a); }},
      {"ckks.add_plain", [&] { (void)ev.add_plain(a, p); }},
      {"ckks.sub_plain", [&] { (void)ev.sub_plain(a, p); }},
      {"ckks.add_scalar", [&] { (void)ev.add_scalar(a, Complex(0.5, 0.0)); }},
      {"ckks.multiply", [&] { (void)ev.multiply(a, b); }},
      {"ckks.square", [&] { (void)ev.square(a); }},
      {"ckks.multiply_plain", [&] { (void)ev.multiply_plain(a, p); }},
      {"ckks.multiply_scalar", [&] { (void)ev.multiply_scalar(a, Complex(0.5, 0.0), 0x1p20); }},
      {"ckks.multiply_integer", [&] { (void)ev.multiply_integer(a, 3); }},
      {"ckks.linear_combination", [&] { (void)ev.linear_combination({&a, &b}, {0.5, 0.25}, 0x1p20); }},
      {"ckks.relinearize", [&] { (void)ev.relinearize(product, rk); }},
      {"ckks.rescale", [&] { (void)ev.rescale(fresh_product); }},
      {"ckks.mod_switch", [&] { (void)ev.mod_switch(a, 1); }},
      {"ckks.adjust_to", [&] { (void)ev.adjust_to(a, 1); }},
      {"ckks.rotate", [&] { (void)ev.rotate(a, 1, gk); }},
      {"ckks.rotate_many", [&] { (void)ev.rotate_many(a, {0, 1}, gk); }},
      {"ckks.conjugate", [&] { (void)ev.conjugate(a, gk); }},
  };
  for (const auto& [name, run] : ops) EXPECT_EQ(labels_of(run), std::set<std::string>{name}) << name;

  // Below the evaluator: key switching on its own, and the host operations.
  EXPECT_EQ(labels_of([&] {
              Buffer out0(a.poly_words(), device), out1(a.poly_words(), device);
              key_switch(*ctx->rlwe(), a.poly(1), a.level(), rk.key(), out0.data(), out1.data());
            }),
            std::set<std::string>{"rlwe.key_switch"});
}

}  // namespace
}  // namespace ringfire
