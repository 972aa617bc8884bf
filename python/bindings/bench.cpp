// Timing loops for `ringfire bench`, run natively so Python call overhead
// does not pollute microsecond-scale measurements. Each returns the median
// seconds per call over `reps` timed runs after one warm-up.
#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "ringfire/arith/modular.h"
#include "ringfire/arith/modulus128.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/buffer.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire::python {

namespace {

template <class Body>
double median_seconds(int reps, Body&& body) {
  body();  // warm-up: caches, pool, page faults
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    const auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(stop - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void fill_random(u64* data, std::size_t n, const RnsBase& base, std::uint64_t seed) {
  std::mt19937_64 rng(seed);  // benchmark data only, not key material
  for (std::size_t l = 0; l < base.size(); ++l) {
    std::uniform_int_distribution<u64> dist(0, base.modulus(l).value() - 1);
    for (std::size_t j = 0; j < n; ++j) data[l * n + j] = dist(rng);
  }
}

// Median seconds for one batched forward (or inverse) NTT over `limbs` limbs.
double time_ntt(std::size_t n, std::size_t limbs, bool inverse, int reps, int bits) {
  require(reps >= 1, "bench.ntt", "reps must be >= 1");
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, limbs, n));
  Buffer data(limbs * n);
  fill_random(data.data(), n, *base, 1);
  Backend& backend = backend_for(Device::cpu());
  nb::gil_scoped_release release;
  // Transforms keep values reduced, so repeated runs stay in range.
  return median_seconds(reps, [&] {
    if (inverse) {
      backend.ntt_inverse(data.data(), 1, *base);
    } else {
      backend.ntt_forward(data.data(), 1, *base);
    }
  });
}

// Median seconds for one negacyclic product of `limbs`-limb polynomials.
double time_poly_mul(std::size_t n, std::size_t limbs, const std::string& method, int reps, int bits) {
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, limbs, n));
  Buffer a(limbs * n), b(limbs * n), out(limbs * n);
  fill_random(a.data(), n, *base, 2);
  fill_random(b.data(), n, *base, 3);
  Backend& backend = backend_for(Device::cpu());
  const PolyMulMethod m = method == "karatsuba" ? PolyMulMethod::karatsuba : PolyMulMethod::ntt;
  nb::gil_scoped_release release;
  return median_seconds(reps, [&] { backend.poly_multiply(a.data(), b.data(), out.data(), 1, *base, m); });
}

// Median seconds for `count` modular products with the named reduction.
double time_modmul(const std::string& method, std::size_t count, int bits, int reps) {
  const u64 q = find_ntt_primes(bits, 1, 16)[0];
  const Modulus mod(q);
  std::vector<u64> a(count), b(count), out(count);
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<u64> dist(0, q - 1);
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  const u64 w = b[0];
  const u64 w_shoup = shoup_precompute(w, q);
  auto run = [&](auto reduce) {
    return median_seconds(reps, [&] {
      for (std::size_t i = 0; i < count; ++i) out[i] = reduce(a[i], b[i]);
    });
  };
  nb::gil_scoped_release release;
  if (method == "barrett") return run([&](u64 x, u64 y) { return reduce_barrett_classic(mul_wide(x, y), mod); });
  if (method == "alg4") return run([&](u64 x, u64 y) { return reduce_alg4(mul_wide(x, y), mod); });
  if (method == "native") return run([&](u64 x, u64 y) { return static_cast<u64>(mul_wide(x, y) % q); });
  if (method == "mad_mod") return run([&](u64 x, u64 y) { return mad_mod(x, y, x, mod); });
  if (method == "shoup") return run([&](u64 x, u64) { return mul_mod_shoup(x, w, w_shoup, q); });
  if (method == "dhem") {
    require(mod.supports_dhem(), "bench.modmul", "dhem needs q of at most 60 bits, and not 2^59");
    return run([&](u64 x, u64 y) { return reduce_dhem(mul_wide(x, y), mod); });
  }
  throw_invalid("bench.modmul", "unknown method '" + method + "'");
}

// Median seconds for one element-wise ringAdd ("add") or ringMult ("mult")
// over `limbs` limbs of N words (the backend's kernels).
double time_ring_op(std::size_t n, std::size_t limbs, const std::string& op, int reps, int bits) {
  require(op == "add" || op == "mult", "bench.ring_op", "op must be 'add' or 'mult', got '" + op + "'");
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, limbs, n));
  Buffer a(limbs * n), b(limbs * n), out(limbs * n);
  fill_random(a.data(), n, *base, 5);
  fill_random(b.data(), n, *base, 6);
  Backend& backend = backend_for(Device::cpu());
  nb::gil_scoped_release release;
  return median_seconds(reps, [&] {
    if (op == "add") {
      backend.add(a.data(), b.data(), out.data(), 1, *base);
    } else {
      backend.multiply(a.data(), b.data(), out.data(), 1, *base);
    }
  });
}

// Median seconds for one automorphism (X -> X^5, evaluation form) or one copy
// of `limbs` limbs of N words: the data-movement kernels of a trace.
double time_data_kernel(std::size_t n, std::size_t limbs, const std::string& kernel, int reps, int bits) {
  require(kernel == "automorphism" || kernel == "copy", "bench.data_kernel",
          "kernel must be 'automorphism' or 'copy', got '" + kernel + "'");
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, limbs, n));
  Buffer a(limbs * n), out(limbs * n);
  fill_random(a.data(), n, *base, 8);
  Backend& backend = backend_for(Device::cpu());
  nb::gil_scoped_release release;
  return median_seconds(reps, [&] {
    if (kernel == "copy") {
      backend.copy(a.data(), out.data(), limbs * n);
    } else {
      backend.automorphism(a.data(), out.data(), 1, *base, 5, Form::eval);
    }
  });
}

// Median seconds for one call of a key-switching kernel over `limbs` limbs of
// N words (`bits`-bit primes), with `terms` its other size:
//   convert             exact base conversion from `terms` limbs to `limbs`
//                       (a ModUp digit, or ModDown from the special primes);
//   inner_product       the key-switching inner product of `terms` digits;
//   linear_combination  `terms` polynomials weighted per limb;
//   sub, multiply_scalar  element-wise (terms ignored).
double time_keyswitch_kernel(std::size_t n, std::size_t limbs, std::size_t terms, const std::string& kernel, int reps,
                             int bits) {
  constexpr const char* op = "bench.keyswitch_kernel";
  require(kernel == "convert" || kernel == "inner_product" || kernel == "linear_combination" || kernel == "sub" ||
              kernel == "multiply_scalar" || kernel == "multiply" || kernel == "ntt_forward" ||
              kernel == "ntt_inverse",
          op,
          "kernel must be convert, inner_product, linear_combination, sub, multiply_scalar, multiply, ntt_forward or "
          "ntt_inverse, got '" + kernel + "'");
  require(terms >= 1 && terms <= 64 && limbs >= 1 && limbs <= 64, op, "terms and limbs must be in [1, 64]");
  const std::vector<u64> primes = find_ntt_primes(bits, limbs + terms, n);
  const auto base = std::make_shared<const RnsBase>(n, std::vector<u64>(primes.begin(), primes.begin() + limbs));
  const auto source = std::make_shared<const RnsBase>(n, std::vector<u64>(primes.begin() + limbs, primes.end()));
  Backend& backend = backend_for(Device::cpu());
  Buffer out0(limbs * n), out1(limbs * n);
  if (kernel == "convert") {
    const BaseConverter conv(source, base);
    Buffer in(terms * n);
    fill_random(in.data(), n, *source, 9);
    nb::gil_scoped_release release;
    return median_seconds(reps, [&] { backend.base_convert(in.data(), out0.data(), 1, conv, BaseConversion::exact); });
  }
  const std::size_t polys = kernel == "inner_product" ? 3 * terms : terms;
  std::vector<Buffer> data;
  std::vector<const u64*> ptrs;
  for (std::size_t t = 0; t < std::max<std::size_t>(polys, 2); ++t) {
    data.emplace_back(limbs * n);
    fill_random(data.back().data(), n, *base, 10 + t);
    ptrs.push_back(data.back().data());
  }
  std::vector<u64> weights(terms * limbs);
  for (std::size_t t = 0; t < terms; ++t)
    for (std::size_t l = 0; l < limbs; ++l) weights[t * limbs + l] = base->modulus(l).value() / (t + 2);
  nb::gil_scoped_release release;
  return median_seconds(reps, [&] {
    if (kernel == "inner_product") {
      backend.inner_product_pair(ptrs.data(), ptrs.data() + terms, ptrs.data() + 2 * terms, terms, out0.data(),
                                 out1.data(), *base);
    } else if (kernel == "linear_combination") {
      backend.linear_combination(ptrs.data(), weights.data(), terms, out0.data(), 1, *base);
    } else if (kernel == "sub") {
      backend.sub(ptrs[0], ptrs[1], out0.data(), 1, *base);
    } else if (kernel == "multiply") {
      backend.multiply(ptrs[0], ptrs[1], out0.data(), 1, *base);
    } else if (kernel == "ntt_forward") {  // in place, on its own output: the words stay reduced
      backend.ntt_forward(data[0].data(), 1, *base);
    } else if (kernel == "ntt_inverse") {
      backend.ntt_inverse(data[0].data(), 1, *base);
    } else {
      backend.multiply_scalar(ptrs[0], weights.data(), out0.data(), 1, *base);
    }
  });
}

// Median seconds for one ringAdd, ringMult or forward negacyclic NTT over N
// words modulo one `bits`-bit prime with 128-bit words (Modulus128, one
// thread): the single-tower arithmetic of seed 003's CPU baseline, which ran
// PALISADE with 128-bit words. A plain radix-2 Cooley-Tukey transform with
// Montgomery twiddles in bit-reversed order.
double time_ring128(std::size_t n, const std::string& op, int reps, int bits) {
  require(op == "add" || op == "mult" || op == "ntt", "bench.ring128", "op must be 'add', 'mult' or 'ntt'");
  require(n >= 2 && (n & (n - 1)) == 0, "bench.ring128", "n must be a power of two");
  const u128 q = find_ntt_primes128(bits, 1, n)[0];
  const Modulus128 mod(q);
  std::mt19937_64 rng(7);
  auto draw = [&] { return ((static_cast<u128>(rng()) << 64) | rng()) % q; };
  std::vector<u128> a(n), b(n), out(n), psi(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = draw();
    b[i] = draw();
  }
  const u128 root = minimal_primitive_root128(q, n);  // a primitive 2n-th root
  const int log_n = bit_length(static_cast<u64>(n)) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t rev = 0;
    for (int bit = 0; bit < log_n; ++bit) rev |= ((i >> bit) & 1) << (log_n - 1 - bit);
    psi[rev] = mod.to_montgomery(mod.pow(root, i));
  }
  nb::gil_scoped_release release;
  if (op == "add") return median_seconds(reps, [&] {
    for (std::size_t i = 0; i < n; ++i) out[i] = mod.add(a[i], b[i]);
  });
  if (op == "mult") return median_seconds(reps, [&] {
    for (std::size_t i = 0; i < n; ++i) out[i] = mod.mul(a[i], b[i]);
  });
  return median_seconds(reps, [&] {
    // The transform keeps values reduced, so repeated runs stay in range.
    for (std::size_t m = 1, t = n / 2; m < n; m *= 2, t /= 2) {
      for (std::size_t i = 0; i < m; ++i) {
        const u128 w = psi[m + i];
        u128* x = a.data() + 2 * i * t;
        for (std::size_t j = 0; j < t; ++j) {
          const u128 v = mod.montgomery_mul(x[j + t], w);
          x[j + t] = mod.sub(x[j], v);
          x[j] = mod.add(x[j], v);
        }
      }
    }
  });
}

}  // namespace

void bind_bench(nb::module_& m) {
  m.def("time_ntt", &time_ntt, nb::arg("n"), nb::arg("limbs"), nb::arg("inverse"), nb::arg("reps"),
        nb::arg("bits"));
  m.def("time_poly_mul", &time_poly_mul, nb::arg("n"), nb::arg("limbs"), nb::arg("method"), nb::arg("reps"),
        nb::arg("bits"));
  m.def("time_ring_op", &time_ring_op, nb::arg("n"), nb::arg("limbs"), nb::arg("op"), nb::arg("reps"),
        nb::arg("bits"));
  m.def("time_data_kernel", &time_data_kernel, nb::arg("n"), nb::arg("limbs"), nb::arg("kernel"), nb::arg("reps"),
        nb::arg("bits"));
  m.def("time_keyswitch_kernel", &time_keyswitch_kernel, nb::arg("n"), nb::arg("limbs"), nb::arg("terms"),
        nb::arg("kernel"), nb::arg("reps"), nb::arg("bits"));
  m.def("time_ring128", &time_ring128, nb::arg("n"), nb::arg("op"), nb::arg("reps"), nb::arg("bits"));
  m.def("time_modmul", &time_modmul, nb::arg("method"), nb::arg("count"), nb::arg("bits"), nb::arg("reps"));
}

}  // namespace ringfire::python
