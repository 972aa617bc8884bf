// The CUDA self-test (see selftest.h). Host code only: it drives both
// backends through the Backend interface and compares downloads word by word.
// It synchronises freely; operations themselves never do.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <random>

#include "cuda_backend.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "backends/cuda/cuda_info.h"
#include "selftest.h"

namespace ringfire::cuda {

namespace {

// A device copy of a host vector, freed at scope exit.
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<u64>& host) : words_(host.size()) {
    check(cudaMalloc(&data_, std::max<std::size_t>(words_, 1) * sizeof(u64)), "cuda.selftest");
    if (words_) check(cudaMemcpy(data_, host.data(), words_ * sizeof(u64), cudaMemcpyHostToDevice), "cuda.selftest");
  }
  ~DeviceVector() { (void)cudaFree(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  u64* data() const { return data_; }
  std::vector<u64> download() const {
    std::vector<u64> host(words_);
    if (words_) check(cudaMemcpy(host.data(), data_, words_ * sizeof(u64), cudaMemcpyDeviceToHost), "cuda.selftest");
    return host;
  }

 private:
  u64* data_ = nullptr;
  std::size_t words_;
};

// batch polynomials over base, every word uniform in [0, q_limb).
std::vector<u64> random_polys(const RnsBase& base, std::size_t batch, std::mt19937_64& rng) {
  const std::size_t n = base.n(), limbs = base.size();
  std::vector<u64> v(batch * limbs * n);
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t l = 0; l < limbs; ++l) {
      std::uniform_int_distribution<u64> dist(0, base.modulus(l).value() - 1);
      for (std::size_t j = 0; j < n; ++j) v[(p * limbs + l) * n + j] = dist(rng);
    }
  return v;
}

std::vector<u64> random_words(std::size_t count, std::mt19937_64& rng, u64 max = ~u64{0}) {
  std::uniform_int_distribution<u64> dist(0, max);
  std::vector<u64> v(count);
  for (u64& w : v) w = dist(rng);
  return v;
}

// Sets coefficients 0.. of polynomial 0 to floor(Q/2) - 1, floor(Q/2),
// floor(Q/2) + 1, whose y-sums land next to a half, so the exact base
// conversion takes its multiword path on both backends.
void plant_near_half(const RnsBase& from, std::vector<u64>& x) {
  const std::size_t len = from.size(), n = from.n();
  std::vector<u64> half(from.product());
  for (std::size_t w = 0; w < len; ++w) half[w] = (half[w] >> 1) | (w + 1 < len ? half[w + 1] << 63 : 0);
  std::vector<u64> words;
  for (int delta = -1; delta <= 1; ++delta) {
    std::vector<u64> v(half);
    if (delta < 0) {
      for (std::size_t w = 0; w < len && v[w]-- == 0; ++w) {}
    } else if (delta > 0) {
      for (std::size_t w = 0; w < len && ++v[w] == 0; ++w) {}
    }
    words.insert(words.end(), v.begin(), v.end());
  }
  std::vector<u64> residues(len * 3);
  from.decompose(words.data(), len, 3, residues.data());
  for (std::size_t l = 0; l < len; ++l)
    for (std::size_t c = 0; c < 3 && c < n; ++c) x[l * n + c] = residues[l * 3 + c];
}

}  // namespace

std::vector<std::pair<std::string, bool>> selftest(std::size_t n, std::size_t limbs, std::uint64_t seed) {
  require(n >= 16 && n <= (std::size_t{1} << 17) && (n & (n - 1)) == 0, "cuda.selftest",
          "n must be a power of two in [16, 2^17], got " + std::to_string(n));
  require(limbs >= 1 && limbs <= 32, "cuda.selftest", "limbs must be in [1, 32], got " + std::to_string(limbs));
  if (cuda_device_count() == 0)
    throw_not_supported("cuda.selftest", "no CUDA device is visible (cuda_device_count() == 0); the self-test "
                                         "compares the CUDA backend with the CPU backend and needs a GPU");
  CudaBackend& gpu = backend(0);
  Backend& cpu = backend_for(Device::cpu());
  std::mt19937_64 rng(seed);

  // A base mixing 61- and 60-bit primes, a disjoint 59-bit target base, and
  // a 12-limb source base (the 128-bit inner-sum path of base conversion).
  std::vector<u64> qs = find_ntt_primes(61, (limbs + 1) / 2, n);
  if (limbs / 2 > 0)
    for (u64 q : find_ntt_primes(60, limbs / 2, n)) qs.push_back(q);
  const auto base = std::make_shared<const RnsBase>(n, qs);
  const auto target = std::make_shared<const RnsBase>(n, find_ntt_primes(59, limbs + 1, n));
  const auto wide_base = std::make_shared<const RnsBase>(n, find_ntt_primes(50, 12, n));
  const BaseConverter conv(base, target), wide_conv(wide_base, target);
  const std::size_t batch = 2, words = batch * limbs * n, one = limbs * n;

  std::vector<std::pair<std::string, bool>> results;
  // Runs `op` on both backends over the given inputs (cpu: host vectors,
  // gpu: device copies) and compares the listed outputs.
  using Op = std::function<void(Backend&, std::vector<u64*>&)>;
  auto compare = [&](const std::string& name, std::vector<std::vector<u64>> buffers, std::vector<int> outputs,
                     const Op& op) {
    std::vector<std::unique_ptr<DeviceVector>> device;
    std::vector<u64*> dptr, hptr;
    for (const auto& b : buffers) {
      device.push_back(std::make_unique<DeviceVector>(b));
      dptr.push_back(device.back()->data());
    }
    for (auto& b : buffers) hptr.push_back(b.data());
    op(cpu, hptr);
    op(gpu, dptr);
    gpu.synchronize();
    bool same = true;
    for (int o : outputs) same = same && device[o]->download() == buffers[o];
    results.emplace_back(name, same);
  };

  const std::vector<u64> a = random_polys(*base, batch, rng), b = random_polys(*base, batch, rng);
  const std::vector<u64> c = random_polys(*base, batch, rng), zeros(words, 0);

  for (NttKernel kernel : {NttKernel::shared, NttKernel::generic, NttKernel::radix2}) {
    gpu.set_ntt_kernel(kernel);
    const std::string suffix = kernel == NttKernel::shared ? "" : kernel == NttKernel::generic ? "_generic" : "_radix2";
    compare("ntt_forward" + suffix, {a}, {0}, [&](Backend& be, auto& p) { be.ntt_forward(p[0], batch, *base); });
    compare("ntt_inverse" + suffix, {a}, {0}, [&](Backend& be, auto& p) { be.ntt_inverse(p[0], batch, *base); });
    compare("poly_multiply_ntt" + suffix, {a, b, zeros}, {2}, [&](Backend& be, auto& p) {
      be.poly_multiply(p[0], p[1], p[2], batch, *base, PolyMulMethod::ntt);
    });
    compare("poly_multiply_karatsuba" + suffix, {a, b}, {0}, [&](Backend& be, auto& p) {
      be.poly_multiply(p[0], p[1], p[0], batch, *base, PolyMulMethod::karatsuba);  // out aliases a
    });
  }
  gpu.set_ntt_kernel(NttKernel::shared);
  // The default kernels with a batch's transforms polynomial-major.
  const bool limb_major = gpu.ntt_limb_major();
  gpu.set_ntt_limb_major(false);
  compare("ntt_forward_poly_major", {a}, {0}, [&](Backend& be, auto& p) { be.ntt_forward(p[0], batch, *base); });
  compare("ntt_inverse_poly_major", {a}, {0}, [&](Backend& be, auto& p) { be.ntt_inverse(p[0], batch, *base); });
  compare("poly_multiply_ntt_poly_major", {a, b, zeros}, {2}, [&](Backend& be, auto& p) {
    be.poly_multiply(p[0], p[1], p[2], batch, *base, PolyMulMethod::ntt);
  });
  gpu.set_ntt_limb_major(limb_major);

  compare("add", {a, b, zeros}, {2}, [&](Backend& be, auto& p) { be.add(p[0], p[1], p[2], batch, *base); });
  compare("sub", {a, b, zeros}, {2}, [&](Backend& be, auto& p) { be.sub(p[0], p[1], p[2], batch, *base); });
  compare("negate", {a, zeros}, {1}, [&](Backend& be, auto& p) { be.negate(p[0], p[1], batch, *base); });
  compare("multiply", {a, b, zeros}, {2}, [&](Backend& be, auto& p) { be.multiply(p[0], p[1], p[2], batch, *base); });
  compare("multiply_add", {a, b, c}, {2}, [&](Backend& be, auto& p) { be.multiply_add(p[0], p[1], p[2], batch, *base); });

  // The tensor product (one kernel on the GPU, the element-wise calls on the
  // CPU), and the square it becomes when b is a.
  const std::vector<u64> a1 = random_polys(*base, 1, rng), b1 = random_polys(*base, 1, rng);
  const std::vector<u64> a0(a.begin(), a.begin() + one), b0(b.begin(), b.begin() + one), none(one, 0);
  compare("tensor", {a0, a1, b0, b1, none, none, none}, {4, 5, 6},
          [&](Backend& be, auto& p) { be.tensor(p[0], p[1], p[2], p[3], p[4], p[5], p[6], *base); });
  compare("tensor_square", {a0, a1, none, none, none}, {2, 3, 4},
          [&](Backend& be, auto& p) { be.tensor(p[0], p[1], p[0], p[1], p[2], p[3], p[4], *base); });

  std::vector<u64> scalars(limbs);
  for (std::size_t l = 0; l < limbs; ++l) scalars[l] = random_words(1, rng, base->modulus(l).value() - 1)[0];
  compare("multiply_scalar", {a, zeros}, {1},
          [&](Backend& be, auto& p) { be.multiply_scalar(p[0], scalars.data(), p[1], batch, *base); });
  compare("add_scalar", {a, zeros}, {1},
          [&](Backend& be, auto& p) { be.add_scalar(p[0], scalars.data(), p[1], batch, *base); });

  // Key-switching inner product: 40 digit/key triples (two chunks on the
  // GPU, two lazy reductions on both), one polynomial each.
  {
    const std::size_t digits = 40;
    std::vector<std::vector<u64>> buffers;
    for (std::size_t t = 0; t < 3 * digits; ++t) {
      const std::vector<u64> p = random_polys(*base, 1, rng);
      buffers.push_back(p);
    }
    buffers.push_back(std::vector<u64>(one));
    buffers.push_back(std::vector<u64>(one));
    const int out0 = static_cast<int>(3 * digits), out1 = out0 + 1;
    compare("inner_product_pair", buffers, {out0, out1}, [&](Backend& be, auto& p) {
      std::vector<const u64*> in(p.begin(), p.begin() + digits), b(p.begin() + digits, p.begin() + 2 * digits),
          a(p.begin() + 2 * digits, p.begin() + 3 * digits);
      be.inner_product_pair(in.data(), b.data(), a.data(), digits, p[out0], p[out1], *base);
    });
  }

  // 40 terms: two chunks on the GPU; some zero weights; and a call whose
  // output aliases its first input.
  const std::size_t terms = 40;
  std::vector<std::vector<u64>> lc_inputs;
  for (std::size_t t = 0; t < terms; ++t) lc_inputs.push_back(random_polys(*base, batch, rng));
  std::vector<u64> weights(terms * limbs);
  for (std::size_t t = 0; t < terms; ++t)
    for (std::size_t l = 0; l < limbs; ++l)
      weights[t * limbs + l] = (t % 7 == 3) ? 0 : random_words(1, rng, base->modulus(l).value() - 1)[0];
  for (bool aliased : {false, true}) {
    std::vector<std::vector<u64>> buffers(lc_inputs);
    buffers.push_back(zeros);
    compare(aliased ? "linear_combination_aliased" : "linear_combination", buffers,
            {static_cast<int>(aliased ? 0 : terms)}, [&](Backend& be, auto& p) {
              std::vector<const u64*> in(p.begin(), p.begin() + terms);
              be.linear_combination(in.data(), weights.data(), terms, aliased ? p[0] : p[terms], batch, *base);
            });
  }

  // Three terms (ModDown with its rescale): the few-term kernel, one launch
  // for every limb; one weight zero.
  for (bool aliased : {false, true}) {
    std::vector<std::vector<u64>> buffers(lc_inputs.begin(), lc_inputs.begin() + 3);
    buffers.push_back(zeros);
    std::vector<u64> few(weights.begin(), weights.begin() + 3 * limbs);
    few[limbs + 1] = 0;
    compare(aliased ? "linear_combination_3_aliased" : "linear_combination_3", buffers, {aliased ? 0 : 3},
            [&](Backend& be, auto& p) {
              const u64* in[3] = {p[0], p[1], p[2]};
              be.linear_combination(in, few.data(), 3, aliased ? p[0] : p[3], batch, *base);
            });
  }

  compare("copy", {a, zeros}, {1}, [&](Backend& be, auto& p) { be.copy(p[0], p[1], words); });
  // Two blocks of half a limb, n words apart in a, to n / 4 and 5 n / 4 of the
  // output (within the 2 n words of the smallest call: one limb, two polynomials).
  compare("copy_blocks", {a, zeros}, {1},
          [&](Backend& be, auto& p) { be.copy_blocks(p[0], n, p[1] + n / 4, n, n / 2, 2); });
  compare("ntt_inverse_into", {a, zeros}, {0, 1},
          [&](Backend& be, auto& p) { be.ntt_inverse_into(p[0], p[1], batch, *base); });
  compare("zero", {a}, {0}, [&](Backend& be, auto& p) { be.zero(p[0], words); });

  // Base conversion: fast and exact, a few source limbs (Shoup inner sum)
  // and 12 (128-bit inner sum), with coefficients planted next to a half.
  std::vector<u64> x = random_polys(*base, batch, rng), xw = random_polys(*wide_base, batch, rng);
  plant_near_half(*base, x);
  plant_near_half(*wide_base, xw);
  const std::vector<u64> converted(batch * target->size() * n, 0);
  for (BaseConversion kind : {BaseConversion::fast, BaseConversion::exact}) {
    const std::string k = kind == BaseConversion::fast ? "fast" : "exact";
    compare("base_convert_" + k, {x, converted}, {1},
            [&](Backend& be, auto& p) { be.base_convert(p[0], p[1], batch, conv, kind); });
    compare("base_convert_" + k + "_12_limbs", {xw, converted}, {1},
            [&](Backend& be, auto& p) { be.base_convert(p[0], p[1], batch, wide_conv, kind); });
  }
  // Key switching's ModUp: one polynomial converted, transformed and scattered
  // to limbs that are not contiguous (the target limbs interleaved with gaps),
  // and to the layouts the NTT's last pass writes itself: the extended base
  // around a digit (a gap of 3 limbs after the first half) and no gap.
  {
    const std::size_t to = target->size();
    const std::vector<u64> spread(2 * to * n, 0), scratch(to * n, 0);
    compare("base_convert_ntt", {x, scratch, spread}, {2}, [&](Backend& be, auto& p) {
      std::vector<u64*> limbs(to);
      for (std::size_t j = 0; j < to; ++j) limbs[j] = p[2] + (2 * (to - 1 - j) + j % 2) * n;
      be.base_convert_ntt(p[0], p[1], limbs.data(), conv, BaseConversion::exact);
    });
    const std::vector<u64> extended((to + 3) * n, 0);
    for (std::size_t gap : {std::size_t{3}, std::size_t{0}}) {
      compare("base_convert_ntt_gap" + std::to_string(gap), {x, scratch, extended}, {2}, [&](Backend& be, auto& p) {
        std::vector<u64*> limbs(to);
        for (std::size_t j = 0; j < to; ++j) limbs[j] = p[2] + (j < to / 2 ? j : j + gap) * n;
        be.base_convert_ntt(p[0], p[1], limbs.data(), conv, BaseConversion::exact);
      });
    }
  }

  // ModUp of all full digits at once (mod_up_digits): digits of two limbs of
  // `base` (one of one limb when there is one limb), each converted to the
  // rest of base + target and written around its own rows.
  {
    const std::size_t alpha = limbs >= 2 ? 2 : 1, count = limbs / alpha;
    std::vector<u64> ext_moduli;
    for (const Modulus& m : base->moduli()) ext_moduli.push_back(m.value());
    for (const Modulus& m : target->moduli()) ext_moduli.push_back(m.value());
    const auto extended_base = std::make_shared<const RnsBase>(n, ext_moduli);
    std::vector<std::unique_ptr<BaseConverter>> digit_convs;
    std::vector<const BaseConverter*> convs;
    for (std::size_t d = 0; d < count; ++d) {
      std::vector<std::size_t> own, rest;
      for (std::size_t i = 0; i < ext_moduli.size(); ++i)
        (i >= d * alpha && i < (d + 1) * alpha ? own : rest).push_back(i);
      digit_convs.push_back(std::make_unique<BaseConverter>(extended_base->select(own), extended_base->select(rest)));
      convs.push_back(digit_convs.back().get());
    }
    const std::size_t digit_words = ext_moduli.size() * n;
    const std::vector<u64> digits(count * digit_words, 0), scratch(digit_words, 0);
    const std::vector<u64> c_coeff(x.begin(), x.begin() + one);
    const bool batched = gpu.batch_mod_up();
    for (bool batch : {false, true}) {
      gpu.set_batch_mod_up(batch);
      compare(batch ? "mod_up_digits_batched" : "mod_up_digits", {c_coeff, digits, scratch}, {1},
              [&](Backend& be, auto& p) {
                be.mod_up_digits(p[0], convs.data(), count, alpha, p[1], digit_words, p[2], BaseConversion::exact);
              });
    }
    gpu.set_batch_mod_up(batched);
  }

  // Automorphisms: a rotation generator power, and conjugation (2N - 1).
  for (u64 galois : {u64{5}, u64{25} % (2 * n), u64{2 * n - 1}}) {
    for (Form form : {Form::coeff, Form::eval}) {
      compare(std::string("automorphism_") + (form == Form::coeff ? "coeff_" : "eval_") + std::to_string(galois),
              {a, zeros}, {1},
              [&](Backend& be, auto& p) { be.automorphism(p[0], p[1], batch, *base, galois, form); });
    }
  }
  return results;
}

}  // namespace ringfire::cuda
