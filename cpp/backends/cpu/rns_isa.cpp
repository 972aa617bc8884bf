#include "rns_isa.h"

#include <atomic>
#include <cstdlib>

#include "ringfire/base/errors.h"

namespace ringfire::cpu {

namespace {

std::atomic<int> chosen{-1};

}  // namespace

bool rns_avx512_available() {
  static const bool available = [] {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512ifma");
#else
    return false;
#endif
  }();
  return available;
}

std::string rns_isa_name(RnsIsa isa) {
  if (isa == RnsIsa::avx512) return "avx512";
#if defined(__AVX2__)
  return "avx2";
#else
  return "scalar";  // a build for a CPU without AVX2: the kernels' scalar loops
#endif
}

RnsIsa parse_rns_isa(const std::string& name) {
  if (name == "avx2" || name == "scalar") return RnsIsa::avx2;  // the build's own kernels
  if (name == "avx512") return RnsIsa::avx512;
  throw InvalidArgument("rns_isa: unknown instruction set '" + name + "' (avx2, avx512, scalar)");
}

void set_rns_isa(RnsIsa isa) {
  require(isa != RnsIsa::avx512 || rns_avx512_available(), "rns_isa",
          "this CPU has no AVX-512 IFMA (the avx512 NTT kernels need F, DQ, VL and IFMA)");
  chosen.store(static_cast<int>(isa));
}

RnsIsa rns_isa() {
  int v = chosen.load(std::memory_order_relaxed);
  if (v < 0) {
    RnsIsa isa = rns_avx512_available() ? RnsIsa::avx512 : RnsIsa::avx2;
    if (const char* env = std::getenv("RINGFIRE_RNS_ISA"); env != nullptr && *env != '\0') {
      isa = parse_rns_isa(env);
      if (isa == RnsIsa::avx512 && !rns_avx512_available()) isa = RnsIsa::avx2;  // asked, not there: the best
    }
    v = static_cast<int>(isa);
    chosen.store(v);
  }
  return static_cast<RnsIsa>(v);
}

}  // namespace ringfire::cpu
