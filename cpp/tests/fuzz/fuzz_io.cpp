// Fuzz target for the loaders: every input is offered to every loader of
// io/serialize.h (the streamed ones too), a ciphertext that loads is
// decrypted and master keys that load derive keys; an input that starts as a
// key image (io/key_image.h) is written to a file and mapped, checked and
// unchecked, and a key that maps relinearizes. The only
// acceptable failure is InvalidArgument; anything else (another exception, a
// crash, a sanitizer report) is a bug.
//
// Input: a flags byte, then the object bytes. Flag bit 0 recomputes the
// trailing checksum first (a key image's header and data checksums), so
// mutations reach the payload parser instead of stopping at the checksum.
//
// Two drivers: built with -fsanitize=fuzzer (clang's libFuzzer), the entry
// point below is all there is (RINGFIRE_LIBFUZZER); otherwise main() runs a
// deterministic mutation loop over valid objects of every kind (bit flips,
// byte sets, truncations, insertions, field-sized overwrites), which any
// compiler and sanitizer can build.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/base/warning.h"
#include "ringfire/bgv/decryptor.h"
#include "ringfire/bgv/evaluator.h"
#include "ringfire/bgv/plaintext.h"
#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/io/checksum.h"
#include "ringfire/io/key_image.h"
#include "ringfire/io/serialize.h"
#include "ringfire/io/serialize_tfhe.h"
#include "ringfire/arith/primes.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/key_derivation.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

void quiet(const std::string&) {}

// The BGV side: a toy context (t = 65537 batches N = 2^10) and its secret key.
struct IntegerTarget {
  bgv::ContextPtr ctx;
  SecretKey sk;
};

// Toy contexts (N = 2^10, insecure by design: the fuzzer wants small
// objects) with keys, and the objects the mutation driver starts from:
// CKKS objects, then BGV ones (a correction factor other than 1 included).
struct Target {
  ckks::ContextPtr ctx;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  GaloisKeys gk;
  Ciphertext product;  // size 3: what a relinearization key that maps is tried on
  IntegerTarget bgv;
  // FHEW/TFHE: a tiny set (n=8, N=64) with its keys.
  tfhe::Params tp;
  std::shared_ptr<tfhe::SecretKey> tsk;
  std::vector<io::Bytes> seeds;
  RlweContextPtr wide;  // N = 2048, what embedding keys load under (a subring of 1024 in it)

  static Target make() {
    set_warning_handler(&quiet);
    ParameterLiteral lit;
    lit.poly_degree = 1024;
    lit.q_bits = {40, 30, 30};
    lit.p_bits = {40};
    lit.scale_bits = 30;
    lit.insecure_no_security_check = true;
    auto ctx = std::make_shared<const ckks::Context>(Parameters(lit));
    Prng prng = Prng::from_seed(Prng::Seed{1});
    SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
    PublicKey pk = generate_public_key(sk, prng);
    RelinKey rk = generate_relin_key(sk, prng);
    GaloisKeys gk = generate_galois_keys(sk, {ctx->rlwe()->galois_element(1), 2 * 1024 - 1}, prng);
    // An embedding key: a ring of 2048 and its subring of 1024 on the same primes.
    ParameterLiteral wide_lit = lit;
    wide_lit.poly_degree = 2048;
    const Parameters wide_params(wide_lit);
    ParameterLiteral half = wide_lit;
    half.poly_degree = 1024;
    half.q_primes = wide_params.q_primes();
    half.p_primes = wide_params.p_primes();
    half.dnum = wide_params.dnum();
    const RlweContextPtr wide = std::make_shared<const ckks::Context>(wide_params)->rlwe();
    const SecretKey sub_sk = generate_secret_key(std::make_shared<const ckks::Context>(Parameters(half))->rlwe(), prng);
    const io::Bytes embedding = io::save(generate_embedding_key(generate_secret_key(wide, prng), sub_sk, 2, prng));
    lit.scheme = Scheme::bgv;
    lit.plain_modulus = 65537;
    lit.scale_bits = 0;
    auto bctx = std::make_shared<const bgv::Context>(Parameters(lit));
    SecretKey bsk = generate_secret_key(bctx->rlwe(), prng);
    const PublicKey bpk = generate_public_key(bsk, prng);
    const Plaintext bp = bgv::encode_plaintext(*bctx, std::vector<u64>(1024, 7), 2, 3);
    const Ciphertext bc = bgv::Evaluator(bctx).mod_reduce(encrypt_public(bpk, bgv::encode_plaintext(*bctx,
                                                                                 std::vector<u64>(1024, 5), 2), prng));
    tfhe::Params tp;
    tp.lwe_dimension = 8, tp.ring_dimension = 64, tp.ring_modulus = static_cast<std::uint32_t>(find_ntt_primes(27, 1, 64)[0]);
    tp.gadget_base_log = 7, tp.gadget_digits = 3, tp.gadget_skip_bits = 6;
    tp.ks_modulus = 256, tp.ks_base_log = 4, tp.ks_digits = 2;
    auto tsk = std::make_shared<tfhe::SecretKey>(tp, prng);
    const tfhe::Bootstrapper tboot(*tsk, prng);
    io::TfheCiphertexts tcts{0, 0, {2}, std::vector<std::uint32_t>(2 * 9)};
    tsk->encrypt(std::vector<std::uint32_t>{16, 112}.data(), 2, tcts.words.data(), prng);
    std::vector<ckks::Complex> z(ctx->slots());
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = ckks::Complex(std::sin(0.1 * i), 0.0);
    const Plaintext p = ctx->encoder().encode(z.data(), z.size(), 2, ctx->scale_at(2));
    const Ciphertext c = encrypt_public(pk, p, prng);
    const ckks::Evaluator ev(ctx);
    Target t{ctx, std::move(sk), std::move(pk), std::move(rk), std::move(gk), ev.multiply(c, c),
             {bctx, std::move(bsk)}, tp, tsk, {}, wide};
    t.seeds = {io::save(ctx->params()),  io::save(p), io::save(ctx->encoder().encode_scalar({0.5, 0.0}, 1, 1e9)),
               io::save(c),              io::save(encrypt_secret(t.sk, p, prng)), io::save(ev.multiply(c, c)),
               io::save(t.pk),           io::save(t.rk), io::save(t.gk), io::save(t.sk),
               io::save(bctx->params()), io::save(bp), io::save(bc), io::save(bpk),
               io::save(generate_master_keys(t.sk, 1, true, prng)),
               io::save(tboot), io::save(tp, tcts), embedding};
    t.rk.key().expand();
    t.seeds.push_back(image_bytes(t.rk));  // expanded
    t.seeds.push_back(image_bytes(t.gk));  // seeded
    return t;
  }

  // Where a key image goes while it is mapped (one file per process).
  static std::string image_path() {
    return (std::filesystem::temp_directory_path() / ("ringfire-fuzz-image-" + std::to_string(::getpid()))).string();
  }

  template <class Keys>
  static io::Bytes image_bytes(const Keys& keys) {
    io::save_image(keys, image_path());
    std::ifstream in(image_path(), std::ios::binary);
    return io::Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
};

Target& target() {
  static Target t = Target::make();
  return t;
}

long g_loaded = 0, g_refused = 0;

template <class Load>
void offer(Load load) {
  try {
    load();
    ++g_loaded;
  } catch (const InvalidArgument&) {
    ++g_refused;  // refused cleanly: what malformed input must get
  }
}

std::uint64_t le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_le64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

bool is_image(const std::vector<std::uint8_t>& b) { return b.size() >= 8 && std::memcmp(b.data(), "RFKEYIMG", 8) == 0; }

// A key image's checksums recomputed (key_image.h's layout), where its header is whole.
void reseal_image(std::vector<std::uint8_t>& b) {
  if (b.size() < 80) return;
  const std::uint64_t table = le64(b.data() + 64);
  if (table > b.size() - 80) return;
  const std::uint64_t data_start = (80 + table + 4095) / 4096 * 4096;
  if (data_start <= b.size()) put_le64(b.data() + 56, io::checksum64(b.data() + data_start, b.size() - data_start));
  io::Checksum64Stream sum;
  sum.update(b.data(), 72);
  sum.update(b.data() + 80, table);
  put_le64(b.data() + 72, sum.digest());
}

void reseal(std::vector<std::uint8_t>& b) {
  if (is_image(b)) return reseal_image(b);
  if (b.size() < 8) return;
  // The checksum of the version the (mutated) header declares: the current one otherwise.
  const unsigned version = b.size() >= 6 ? b[4] | (b[5] << 8) : io::kFormatVersion;
  const std::uint64_t sum = version >= 4 ? io::checksum64(b.data(), b.size() - 8) : fnv1a64(b.data(), b.size() - 8);
  for (int i = 0; i < 8; ++i) b[b.size() - 8 + i] = static_cast<std::uint8_t>(sum >> (8 * i));
}

}  // namespace

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  Target& t = target();
  std::vector<std::uint8_t> b(data + 1, data + size);
  if (data[0] & 1) reseal(b);
  const RlweContextPtr& rl = t.ctx->rlwe();
  if (is_image(b)) {  // mapped from a file, checked and unchecked; a key that maps is used
    {
      std::ofstream out(Target::image_path(), std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
    const Ciphertext& c = t.product;
    for (bool verify : {true, false}) {
      offer([&] { (void)io::image_kind(Target::image_path()); });
      offer([&] { (void)ckks::Evaluator(t.ctx).relinearize(c, io::map_relin_key(rl, Target::image_path(), verify)); });
      offer([&] { (void)io::map_galois_keys(rl, Target::image_path(), verify); });
    }
    return;
  }
  const std::uint8_t* p = b.data();
  const std::size_t n = b.size();
  offer([&] { (void)io::peek_kind(p, n); });
  offer([&] { (void)io::envelope_kind(p, n); });
  offer([&] { (void)io::load_parameters(p, n, (data[0] & 2) != 0); });
  offer([&] { (void)io::load_plaintext(rl, p, n); });
  offer([&] { (void)io::load_public_key(rl, p, n); });
  offer([&] { (void)io::load_relin_key(rl, p, n); });
  offer([&] { (void)io::load_embedding_key(t.wide, p, n); });
  offer([&] { (void)io::load_galois_keys(rl, p, n); });
  offer([&] { (void)io::load_secret_key(rl, p, n); });
  offer([&] {  // master keys that load must derive without crashing (forged ones derive garbage)
    const MasterKeys m = io::load_master_keys(rl, p, n);
    (void)derive_galois_keys(m, {rl->galois_element(3), rl->conjugation_element()});
  });
  // The streamed loaders, fed in odd-sized pieces (a partial checksum stripe each time).
  auto pieces = [&] {
    return io::Source([&, at = std::size_t{0}](std::uint8_t* out, std::size_t want) mutable {
      const std::size_t take = std::min({want, n - at, std::size_t{4093}});
      std::memcpy(out, p + at, take);
      at += take;
      return take;
    });
  };
  offer([&] { (void)io::load_public_key(rl, pieces(), n); });
  offer([&] { (void)io::load_galois_keys(rl, pieces(), n); });
  offer([&] { (void)io::load_master_keys(rl, pieces(), n); });
  offer([&] {
    const Ciphertext c = io::load_ciphertext(rl, p, n);
    Prng prng = Prng::from_seed(Prng::Seed{2});
    for (auto mode : {ckks::DecryptionNoise::estimate, ckks::DecryptionNoise::insecure_exact}) {
      ckks::DecryptOptions options;
      options.noise = mode;
      offer([&] { (void)ckks::decrypt(*t.ctx, c, t.sk, options, prng); });
    }
  });
  // The same bytes as FHEW/TFHE objects: loaded keys bootstrap a ciphertext.
  offer([&] {
    const auto boot = io::load_tfhe_evaluation_keys(t.tp, p, n);
    std::vector<std::uint32_t> ct(9, 0), tv(64, 5), out(9);
    boot->bootstrap(ct.data(), tv.data(), out.data());
  });
  offer([&] { (void)io::load_tfhe_ciphertexts(t.tp, p, n); });
  // The same bytes as BGV objects: loading checks correction factors, and a
  // ciphertext that loads is decrypted (an overflowed one is refused).
  const RlweContextPtr& brl = t.bgv.ctx->rlwe();
  offer([&] { (void)bgv::decode_plaintext(*t.bgv.ctx, io::load_plaintext(brl, p, n)); });
  offer([&] { (void)io::load_public_key(brl, p, n); });
  offer([&] {
    const Ciphertext c = io::load_ciphertext(brl, p, n);
    offer([&] { (void)bgv::decrypt(*t.bgv.ctx, t.bgv.sk, c); });
    offer([&] { (void)bgv::noise_budget(*t.bgv.ctx, t.bgv.sk, c); });
  });
}

}  // namespace ringfire

#ifdef RINGFIRE_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ringfire::fuzz_one(data, size);
  return 0;
}
#else
// fuzz_io [iterations] [seed]: mutates the valid objects and loads the results.
// fuzz_io --write-seeds DIR: writes them as inputs (a libFuzzer corpus).
int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--write-seeds") == 0) {
    const auto& seeds = ringfire::target().seeds;
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      const std::string path = std::string(argv[2]) + "/seed_" + std::to_string(i);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) return 1;
      const std::uint8_t flags = 1;
      std::fwrite(&flags, 1, 1, f);
      std::fwrite(seeds[i].data(), 1, seeds[i].size(), f);
      std::fclose(f);
    }
    std::filesystem::remove(ringfire::Target::image_path());
    return 0;
  }
  const long iterations = argc > 1 ? std::atol(argv[1]) : 20000;
  std::mt19937_64 rng(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
  const auto& seeds = ringfire::target().seeds;
  const std::uint8_t field_values[] = {0x00, 0x01, 0x02, 0x03, 0x7f, 0x80, 0xfe, 0xff};
  for (long i = 0; i < iterations; ++i) {
    const auto& seed = seeds[rng() % seeds.size()];
    std::vector<std::uint8_t> input(1, static_cast<std::uint8_t>(rng() % 4 == 0 ? 2 : 1));  // mostly resealed
    input.insert(input.end(), seed.begin(), seed.end());
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && input.size() > 1; ++e) {
      // Early bytes (header and payload fields) most of the time.
      const std::size_t span = rng() % 4 ? std::min<std::size_t>(input.size() - 1, 96) : input.size() - 1;
      const std::size_t at = 1 + rng() % span;
      switch (rng() % 5) {
        case 0: input[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
        case 1: input[at] = field_values[rng() % sizeof field_values]; break;
        case 2: input.resize(1 + rng() % (input.size() - 1)); break;
        case 3: input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(rng())); break;
        default:
          for (std::size_t k = 0; k < 8 && at + k < input.size(); ++k) input[at + k] = static_cast<std::uint8_t>(rng());
      }
    }
    ringfire::fuzz_one(input.data(), input.size());
  }
  std::printf("fuzz_io: %ld inputs, %ld loads succeeded and %ld were refused with InvalidArgument, nothing else\n",
              iterations, ringfire::g_loaded, ringfire::g_refused);
  std::filesystem::remove(ringfire::Target::image_path());
  return 0;
}
#endif
