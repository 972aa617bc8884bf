// CKKS from C++: parameters, keys, encryption, the explicit evaluator and
// serialization. Computes rotate(x * y + 0.5, 1) on encrypted vectors, checks
// the result against plain arithmetic and prints the precision kept.
//
//   cmake -S . -B build -DRINGFIRE_BUILD_TESTS=ON && cmake --build build
//   ./build/examples/cpp/ckks_basics
// or against an installed package (docs/cpp.md): examples/cpp/CMakeLists.txt.
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"

using namespace ringfire;
using Complex = std::complex<double>;

int main() {
  // N = 2^14, a 60-bit base prime, three 40-bit rescaling primes, one 60-bit
  // special prime for key switching: 280 bits, within the 128-bit bound (438).
  ParameterLiteral literal;
  literal.poly_degree = 1 << 14;
  literal.q_bits = {60, 40, 40, 40};
  literal.p_bits = {60};
  literal.scale_bits = 40;
  auto context = std::make_shared<const ckks::Context>(Parameters(literal));
  std::printf("parameters: %s\n", context->params().describe().c_str());

  Prng prng = Prng::from_os();
  const RlweContextPtr& rlwe = context->rlwe();
  SecretKey secret = generate_secret_key(rlwe, prng);
  PublicKey public_key = generate_public_key(secret, prng);
  RelinKey relin = generate_relin_key(secret, prng);
  GaloisKeys galois = generate_galois_keys(secret, {rlwe->galois_element(1)}, prng);

  const std::size_t slots = context->slots(), top = context->max_level();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Complex> x(slots), y(slots);
  for (std::size_t i = 0; i < slots; ++i) x[i] = uniform(rng), y[i] = uniform(rng);

  const ckks::Encoder& encoder = context->encoder();
  Ciphertext cx = encrypt_public(public_key, encoder.encode(x.data(), slots, top, context->default_scale()), prng);
  Ciphertext cy = encrypt_public(public_key, encoder.encode(y.data(), slots, top, context->default_scale()), prng);

  ckks::Evaluator ev(context);
  Ciphertext product = ev.rescale(ev.relinearize(ev.multiply(cx, cy), relin));
  ev.add_scalar_inplace(product, 0.5);
  ev.rotate_inplace(product, 1, galois);

  // Ship the result as bytes and read it back, as a client would.
  const io::Bytes wire = io::save(product);
  Ciphertext received = io::load_ciphertext(rlwe, wire.data(), wire.size());

  // Decryption adds fresh noise the size of the result's own (ckks/decryptor.h): an exact
  // result would reveal the secret key to whoever also holds the ciphertext.
  const ckks::Decryption decrypted = ckks::decrypt(*context, received, secret, ckks::DecryptOptions{}, prng);
  const std::vector<Complex>& out = decrypted.slots;
  double worst = 0.0;
  for (std::size_t i = 0; i < slots; ++i) {
    const Complex want = x[(i + 1) % slots] * y[(i + 1) % slots] + 0.5;
    worst = std::max(worst, std::abs(out[i] - want));
  }
  const double bits = -std::log2(worst);
  std::printf("rotate(x*y + 0.5, 1): level %zu, %zu bytes on the wire, %.1f bits of precision\n", received.level(),
              wire.size(), bits);
  if (bits < 18) {
    std::printf("FAILED: expected at least 18 bits\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
