// The instruction-set level the CPU kernels run at, chosen once at run time. The library
// is compiled for the baseline of its architecture (x86-64: SSE2) unless VITUNE_NATIVE is
// on; the kernels that need wide vectors are compiled again for each level below and the
// best one this CPU and its OS support is run:
//
//   - a loop body given to parallel_for_simd is compiled once per level, inlined whole
//     (`flatten`) into a function carrying that level's target attribute, so the compiler
//     vectorises it for that level; the level is picked per chunk from cpu_isa();
//   - a kernel written with intrinsics (sgemm_avx512.cpp, bf16gemm_avx512.cpp,
//     bf16gemm_amx.cpp) carries its level's VITUNE_TARGET_ attribute and is chosen where
//     its op picks a kernel (`cpu_isa() >= Isa::Avx512`, `>= Isa::Avx512Bf16`,
//     `>= Isa::Amx`).
//
// Per-file -m flags are not used on purpose: an inline function from a header (a
// std::vector member, a template) compiled in such a file is an ordinary weak symbol,
// and the linker may keep that copy for every caller, so a CPU without the level would
// run its instructions. Target attributes keep the wide code inside the functions that
// are only called after the check.
//
// Avx512Bf16 is AVX-512 with AVX512_BF16 (the bf16 dot product `vdpbf16ps`): only the
// bf16 GEMM of autocast uses it; loops run their AVX-512 variant there. It is opt-in
// (VITUNE_CPU_ISA=avx512bf16): on the Intel Xeon of bench/README's bf16 section,
// vdpbf16ps runs at half the FLOP rate of fp32 FMAs, so the bf16 kernel takes about 1.5x
// the time of the emulation (operands rounded to bf16, then the fp32 kernel); it is
// expected to pay only where the instruction runs at twice the fp32 rate.
//
// Amx is Avx512Bf16 with AMX-TILE and AMX-BF16 (Intel's tile matrix unit, TDPBF16PS on
// 16 x 32 bf16 tiles), where Linux also grants the process the tile state: the bf16 GEMM
// of autocast runs on tiles (bf16gemm_amx.cpp), 3.7x the fp32 kernel on the ViT-B/16
// products of bench/README. It is chosen by default where the CPU has it;
// VITUNE_CPU_ISA=avx512 keeps the emulation.
//
// VITUNE_CPU_ISA=portable|avx2|avx512|avx512bf16|amx sets the level (never above what the
// CPU has; unset: the CPU's best, where avx512bf16 counts as avx512), to test every
// variant on one machine and to compare them; levels differ in the last bits (fused
// multiply-adds, sums in another order), while one level gives the same bits for any
// thread count.
//
// Adding a level: append it to
// `Isa` (each level includes the ones before it), give it a name and a CPUID test in
// isa.cpp, define its VITUNE_TARGET_ attribute here, write the kernel with that attribute
// and choose it with `cpu_isa() >= Isa::NewLevel`. Loops need nothing more: a level above
// the widest compiled variant runs that variant. Compile loops once more for a new level
// only when its instructions help plain loops (a case in run_at_isa).
#pragma once

#include <cstdint>

#include "engine/parallel.h"

namespace vitune::cpu {

enum class Isa { Portable, Avx2, Avx512, Avx512Bf16, Amx };

// The level the kernels run at: the best this CPU supports, lowered by VITUNE_CPU_ISA.
// Decided at the first call; an unknown VITUNE_CPU_ISA is an error naming the values.
Isa cpu_isa();
// The best level this CPU and OS support, whatever VITUNE_CPU_ISA says.
Isa detected_isa();
// "portable", "avx2", "avx512", "avx512bf16", "amx" (the names VITUNE_CPU_ISA takes).
const char* isa_name(Isa isa);

#if defined(__x86_64__) || defined(__i386__)
// x86-64-v3 and x86-64-v4 as feature lists (not arch=..., which would keep the compiler
// from inlining ordinary functions into them).
#define VITUNE_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt,movbe")))
#define VITUNE_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt,movbe")))
#define VITUNE_TARGET_AVX512_BF16                                                                            \
  __attribute__((target("avx512bf16,avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx2,fma,bmi,bmi2,f16c,lzcnt," \
                        "popcnt,movbe")))
#define VITUNE_TARGET_AMX                                                                                       \
  __attribute__((target("amx-tile,amx-bf16,avx512bf16,avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx2,fma,bmi," \
                        "bmi2,f16c,lzcnt,popcnt,movbe")))
#define VITUNE_X86_LEVELS 1
#else
#define VITUNE_X86_LEVELS 0
#endif

namespace isa_detail {

// body() with everything it calls inlined, compiled for one level.
template <typename Body>
__attribute__((flatten)) void run_portable(const Body& body) {
  body();
}
#if VITUNE_X86_LEVELS
template <typename Body>
__attribute__((flatten)) VITUNE_TARGET_AVX2 void run_avx2(const Body& body) {
  body();
}
template <typename Body>
__attribute__((flatten)) VITUNE_TARGET_AVX512 void run_avx512(const Body& body) {
  body();
}
#endif

}  // namespace isa_detail

// Runs body() compiled for `isa` (the widest compiled variant at or below it).
template <typename Body>
void run_at_isa(Isa isa, const Body& body) {
#if VITUNE_X86_LEVELS
  switch (isa) {
    case Isa::Amx:
    case Isa::Avx512Bf16:
    case Isa::Avx512:
      return isa_detail::run_avx512(body);
    case Isa::Avx2:
      return isa_detail::run_avx2(body);
    case Isa::Portable:
      break;
  }
#endif
  isa_detail::run_portable(body);
}

// parallel_for (engine/parallel.h) whose body is compiled for every level and run at
// cpu_isa(): for the loops that the compiler vectorises.
template <typename Body>
void parallel_for_simd(int64_t n, int64_t grain, const Body& body) {
  const Isa isa = cpu_isa();
  parallel_for(n, grain, [&](int64_t begin, int64_t end) { run_at_isa(isa, [&] { body(begin, end); }); });
}

}  // namespace vitune::cpu
