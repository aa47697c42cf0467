// The run-time choice of isa.h: CPUID (through the compiler's __builtin_cpu_supports,
// which also checks that the OS saves the wide registers; for AMX, CPUID leaf 7 read
// directly and Linux's permission for the tile state), lowered by VITUNE_CPU_ISA; the
// opt-in level avx512bf16 only where VITUNE_CPU_ISA asks for it.
#include "engine/cpu/isa.h"

#if VITUNE_X86_LEVELS
#include <cpuid.h>
#endif

#include <cstdlib>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <string>

#include "engine/error.h"

namespace vitune::cpu {

namespace {

constexpr Isa kLevels[] = {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16, Isa::Amx};

#if VITUNE_X86_LEVELS
// CPUID leaf 7: AMX-BF16 is bit 22 and AMX-TILE bit 24 of EDX (read directly: Clang's
// __builtin_cpu_supports does not know them).
bool cpu_has_amx_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 22 & 1u) && (edx >> 24 & 1u);
}

// Whether Linux lets this process use the AMX tile data (about 8 KiB more state per
// thread, which the kernel saves only once it is asked to: arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Documentation/arch/x86/xstate.rst). The
// request covers every thread of the process.
bool amx_permitted() {
#if defined(__linux__)
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  return ::syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
#else
  return false;
#endif
}
#endif

bool supported(Isa isa) {
#if VITUNE_X86_LEVELS
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Portable:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
    case Isa::Avx512:
      return supported(Isa::Avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    case Isa::Avx512Bf16:
      return supported(Isa::Avx512) && __builtin_cpu_supports("avx512bf16");
    case Isa::Amx:
      return supported(Isa::Avx512Bf16) && cpu_has_amx_bf16() && amx_permitted();
  }
  return false;
#else
  return isa == Isa::Portable;
#endif
}

Isa requested_isa(Isa best) {
  const char* env = std::getenv("VITUNE_CPU_ISA");
  if (env == nullptr || *env == '\0') return best == Isa::Avx512Bf16 ? Isa::Avx512 : best;  // see isa.h
  for (Isa level : kLevels) {
    if (std::string(env) == isa_name(level)) return level < best ? level : best;
  }
  throw Error(cat("VITUNE_CPU_ISA=", env, ": expected portable, avx2, avx512, avx512bf16 or amx"));
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Portable:
      return "portable";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx512Bf16:
      return "avx512bf16";
    case Isa::Amx:
      return "amx";
  }
  return "unknown";
}

Isa detected_isa() {
  static const Isa best = [] {
    Isa level = Isa::Portable;
    for (Isa candidate : kLevels) {
      if (supported(candidate)) level = candidate;
    }
    return level;
  }();
  return best;
}

Isa cpu_isa() {
  static const Isa chosen = requested_isa(detected_isa());
  return chosen;
}

}  // namespace vitune::cpu
