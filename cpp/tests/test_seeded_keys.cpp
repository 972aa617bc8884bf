// Seeded switching keys: a key made (or loaded) with seeds holds its b_j only
// and expands its a_j on first use, once, from any number of threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/ckks/context.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire {
namespace {

using test::small_literal;

Prng::Seed seed_of(std::uint8_t first) {
  Prng::Seed seed{};
  for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(first + 7 * i);
  return seed;
}

struct Keys {
  RlweContextPtr rlwe;
  SecretKey sk;

  static Keys make() {
    auto ctx = std::make_shared<const ckks::Context>(Parameters(small_literal()));
    Prng prng = Prng::from_seed(seed_of(1));
    SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
    return Keys{ctx->rlwe(), std::move(sk)};
  }
};

// a_j, as an independent reading of the stream: the seed's ChaCha20 words,
// uniform below each prime of the key's base.
std::vector<u64> a_from_seed(const KeySwitchKey& key, std::size_t digit) {
  const RnsBase& base = *key.context()->extended_base(key.level());
  std::vector<u64> a(key.poly_words());
  Prng stream = Prng::from_seed(key.seeds()[digit]);
  sample_uniform(stream, base, a.data());
  return a;
}

TEST(SeededKeys, KeygenKeepsHalfAndExpandsOnFirstUse) {
  Keys k = Keys::make();
  Prng prng = Prng::from_seed(seed_of(2));
  GaloisKeys keys = generate_galois_keys(k.sk, {k.rlwe->galois_element(1)}, prng);
  const KeySwitchKey& key = keys.get(k.rlwe->galois_element(1));
  ASSERT_EQ(key.seeds().size(), key.digits());
  EXPECT_FALSE(key.expanded());
  EXPECT_EQ(key.resident_bytes() * 2, key.bytes());
  const std::vector<u64> want = a_from_seed(key, key.digits() - 1);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), key.a(key.digits() - 1)));
  EXPECT_TRUE(key.expanded());
  EXPECT_EQ(key.resident_bytes(), key.bytes());
  for (std::size_t j = 0; j < key.digits(); ++j) {
    const std::vector<u64> a = a_from_seed(key, j);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), key.a(j))) << "digit " << j;
  }
}

TEST(SeededKeys, ConcurrentFirstReadsExpandOnce) {
  Keys k = Keys::make();
  Prng prng = Prng::from_seed(seed_of(3));
  const RelinKey rk = generate_relin_key(k.sk, prng);
  const KeySwitchKey& key = rk.key();
  std::vector<const u64*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&, t] { seen[t] = key.a(0); });
  for (auto& th : threads) th.join();
  for (const u64* p : seen) EXPECT_EQ(p, seen[0]);
  const std::vector<u64> want = a_from_seed(key, 0);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), seen[0]));
}

TEST(SeededKeys, LoadStaysSeededAndSavesTheSameBytes) {
  Keys k = Keys::make();
  Prng prng = Prng::from_seed(seed_of(4));
  const RelinKey rk = generate_relin_key(k.sk, prng);
  const io::Bytes unexpanded = io::save(rk);
  (void)rk.key().a(0);
  EXPECT_EQ(io::save(rk), unexpanded);  // saving never needs the a_j
  const RelinKey loaded = io::load_relin_key(k.rlwe, unexpanded.data(), unexpanded.size());
  EXPECT_FALSE(loaded.key().expanded());
  for (std::size_t j = 0; j < rk.key().digits(); ++j) {
    EXPECT_TRUE(std::equal(rk.key().b(j), rk.key().b(j) + rk.key().poly_words(), loaded.key().b(j)));
    EXPECT_TRUE(std::equal(rk.key().a(j), rk.key().a(j) + rk.key().poly_words(), loaded.key().a(j)));
  }
}

TEST(SeededKeys, AKeyWithoutItsSeedsCannotExpand) {
  Keys k = Keys::make();
  Prng prng = Prng::from_seed(seed_of(5));
  KeySwitchKey key = generate_switch_key(k.sk, k.sk.eval(), kRelinearizationSource, prng);
  key.seeds().pop_back();
  test::expect_invalid([&] { (void)key.a(0); }, "one seed per digit");
}

// A per-use key never keeps its a_j: every switch expands them a limb at a
// time, and gives the same words as the same key kept expanded, at its own
// level and below it (where the key's upper Q rows are skipped in the stream).
TEST(SeededKeys, PerUseKeysSwitchBitIdenticallyWithoutKeepingTheirHalf) {
  Keys k = Keys::make();
  Prng first = Prng::from_seed(seed_of(7)), second = Prng::from_seed(seed_of(7));
  KeySwitchKey per_use = generate_switch_key(k.sk, k.sk.eval(), kRelinearizationSource, first);
  const KeySwitchKey kept = generate_switch_key(k.sk, k.sk.eval(), kRelinearizationSource, second);
  per_use.set_expand_per_use(true);
  kept.expand();
  const std::size_t n = k.rlwe->n();
  for (const std::size_t level : {k.rlwe->max_level(), std::size_t{1}}) {
    const RnsBase& base = *k.rlwe->level_base(level);
    std::vector<u64> c(base.size() * n), out(4 * base.size() * n);
    Prng data = Prng::from_seed(seed_of(static_cast<std::uint8_t>(8 + level)));
    sample_uniform(data, base, c.data());
    u64* o = out.data();
    const std::size_t words = base.size() * n;
    key_switch(*k.rlwe, c.data(), level, per_use, o, o + words);
    key_switch(*k.rlwe, c.data(), level, kept, o + 2 * words, o + 3 * words);
    EXPECT_TRUE(std::equal(o, o + 2 * words, o + 2 * words)) << "level " << level;
  }
  EXPECT_FALSE(per_use.expanded());
  EXPECT_EQ(per_use.resident_bytes() * 2, per_use.bytes());
  // A copy for another device carries the a_j (a host copy here), still without keeping them.
  const KeySwitchKey copy = per_use.to(Device::cpu());
  EXPECT_FALSE(per_use.expanded());
  for (std::size_t j = 0; j < kept.digits(); ++j)
    EXPECT_TRUE(std::equal(kept.a(j), kept.a(j) + kept.poly_words(), copy.a(j))) << "digit " << j;
}

// Keys made for the spill files (a cold scope, rf.memory.cold) expand there too,
// though their first use comes after the scope has closed.
TEST(SeededKeys, KeysMadeColdExpandCold) {
  Keys k = Keys::make();
  host_pool().flush();
  const char* tmp = std::getenv("TMPDIR");
  start_host_spill(std::size_t{1} << 40, tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");  // a limit nothing reaches
  Prng prng = Prng::from_seed(seed_of(6));
  begin_cold_host_allocations();
  const RelinKey rk = generate_relin_key(k.sk, prng);
  end_cold_host_allocations();
  const std::size_t spilled = host_spill_stats().bytes_spilled;
  EXPECT_GE(spilled, rk.key().resident_bytes());  // the b_j went to the files
  rk.key().expand();
  EXPECT_GE(host_spill_stats().bytes_spilled - spilled, rk.key().bytes() / 2);  // and so did the a_j
  stop_host_spill();
}

}  // namespace
}  // namespace ringfire
