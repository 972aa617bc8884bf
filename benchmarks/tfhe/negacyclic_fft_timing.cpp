// The 64-bit torus engine's negacyclic FFT timed alone (docs/tfhe.md, "The FFT"): the
// forward transform of one gadget level's digits (what a blind-rotation step does to
// each accumulator polynomial), the forward transform of int32 digits, and the
// backward transform with its conversion to words mod 2^64. One thread; each figure
// is the best of 30 runs of 2000 transforms, in microseconds per transform.
//
// Against the installed C++ package (.ci/run installs one at build/pkg):
//   cmake --install build/ci --prefix build/pkg
//   c++ -O2 -std=c++20 benchmarks/tfhe/negacyclic_fft_timing.cpp \
//       $(PKG_CONFIG_PATH=build/pkg/lib/pkgconfig pkg-config --cflags --libs ringfire) -o /tmp/fft_timing
//   /tmp/fft_timing [N ...]        (default: 1024 2048 4096)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ringfire/tfhe/negacyclic_fft.h"

namespace {

template <class F>
double best_microseconds(F&& run) {
  constexpr int kRuns = 30, kReps = 2000;
  double best = 1e30;
  for (int r = 0; r < kRuns; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReps; ++i) run();
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / kReps);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {1024, 2048, 4096};
  std::printf("| N | forward, gadget digits (us) | forward, int32 digits (us) | backward to words (us) |\n");
  std::printf("|---|---|---|---|\n");
  for (std::size_t N : sizes) {
    const ringfire::tfhe::NegacyclicFft fft(N);
    std::mt19937_64 rng(1);
    std::vector<std::uint64_t> words(N), out(N, 0);
    for (auto& w : words) w = rng();
    std::vector<std::int32_t> digits(N);
    for (auto& d : digits) d = static_cast<std::int32_t>(rng() % (1u << 23)) - (1 << 22);
    std::vector<double> re(N / 2), im(N / 2);
    const double gadget = best_microseconds([&] { fft.forward_top_digits(words.data(), 23, re.data(), im.data()); });
    const double int32 = best_microseconds([&] { fft.forward(digits.data(), re.data(), im.data()); });
    // backward_add overwrites its input, so each repetition starts from a copy of one
    // spectrum; the copy's own time, measured alone, is subtracted.
    std::vector<double> spec_re(N / 2), spec_im(N / 2);
    fft.forward(digits.data(), spec_re.data(), spec_im.data());
    auto restore = [&] {
      std::copy(spec_re.begin(), spec_re.end(), re.begin());
      std::copy(spec_im.begin(), spec_im.end(), im.begin());
    };
    const double copy = best_microseconds(restore);
    const double backward = best_microseconds([&] {
      restore();
      fft.backward_add(re.data(), im.data(), out.data());
    }) - copy;
    std::printf("| %zu | %.2f | %.2f | %.2f |\n", N, gadget, int32, backward);
  }
  return 0;
}
