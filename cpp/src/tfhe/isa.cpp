#include "ringfire/tfhe/isa.h"

#include <atomic>
#include <cstdlib>

#include "ringfire/base/errors.h"

namespace ringfire::tfhe {

namespace {

bool cpu_has_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

std::atomic<int> chosen{-1};

}  // namespace

Isa best_isa() {
  static const Isa best = [] {
    if (cpu_has_avx512()) return Isa::avx512;
#if defined(__AVX2__)
    return Isa::avx2;
#else
    return Isa::scalar;
#endif
  }();
  return best;
}

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  if (name == "scalar") return Isa::scalar;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  throw InvalidArgument("tfhe.isa: unknown instruction set '" + name + "' (scalar, avx2, avx512)");
}

void check_isa(Isa isa) {
  bool ok = isa == Isa::scalar || isa == best_isa();
#if defined(__AVX2__)
  ok = ok || (isa == Isa::avx2 && best_isa() == Isa::avx512);
#endif
  require(ok, "tfhe.isa", "this build or CPU cannot run the " + isa_name(isa) + " kernels (best: " +
                              isa_name(best_isa()) + ")");
}

Isa default_isa() {
  int v = chosen.load();
  if (v < 0) {
    Isa isa = best_isa();
    if (const char* env = std::getenv("RINGFIRE_TFHE_ISA"); env != nullptr && *env != '\0') {
      isa = parse_isa(env);
      check_isa(isa);
    }
    v = static_cast<int>(isa);
    chosen.store(v);
  }
  return static_cast<Isa>(v);
}

void set_default_isa(Isa isa) {
  check_isa(isa);
  chosen.store(static_cast<int>(isa));
}

}  // namespace ringfire::tfhe
