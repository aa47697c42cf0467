// The run-time choice of the CPU kernels' instruction-set level (engine/cpu/isa.h): the
// level is never above what the CPU supports, avx512bf16 only when asked for (amx,
// above it, by default), VITUNE_CPU_ISA sets it (ctest runs the engine tests at
// `portable` and `avx2` through it), the GEMM kernel follows it, and a loop compiled
// for every level gives the same bits as the plain loop where no fused multiply-add can
// change them.
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cpu/gemm_kernel.h"
#include "engine/cpu/isa.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(CpuIsa, NeverAboveTheDetectedLevel) {
  EXPECT_LE(int(cpu::cpu_isa()), int(cpu::detected_isa()));
  EXPECT_EQ(std::string(cpu::isa_name(cpu::Isa::Portable)), "portable");
  EXPECT_EQ(std::string(cpu::isa_name(cpu::Isa::Avx2)), "avx2");
  EXPECT_EQ(std::string(cpu::isa_name(cpu::Isa::Avx512)), "avx512");
  EXPECT_EQ(std::string(cpu::isa_name(cpu::Isa::Avx512Bf16)), "avx512bf16");
  EXPECT_EQ(std::string(cpu::isa_name(cpu::Isa::Amx)), "amx");
}

TEST(CpuIsa, FollowsTheRequestedLevelAndTheGemmKernelFollowsIt) {
  const char* requested = std::getenv("VITUNE_CPU_ISA");
  if (requested != nullptr && *requested != '\0') {
    cpu::Isa expected = cpu::Isa::Portable;
    for (cpu::Isa level :
         {cpu::Isa::Portable, cpu::Isa::Avx2, cpu::Isa::Avx512, cpu::Isa::Avx512Bf16, cpu::Isa::Amx}) {
      if (std::string(requested) == cpu::isa_name(level)) expected = level;
    }
    if (expected > cpu::detected_isa()) expected = cpu::detected_isa();
    EXPECT_EQ(cpu::cpu_isa(), expected) << "VITUNE_CPU_ISA=" << requested;
  } else {
    // Unset: the CPU's best level, but never the opt-in avx512bf16 (amx is above it).
    const cpu::Isa expected =
        cpu::detected_isa() == cpu::Isa::Avx512Bf16 ? cpu::Isa::Avx512 : cpu::detected_isa();
    EXPECT_EQ(cpu::cpu_isa(), expected);
  }
  const char* forced_gemm = std::getenv("VITUNE_GEMM");
  if (forced_gemm == nullptr || std::string(forced_gemm) != "openblas") {
    EXPECT_EQ(cpu::gemm_kernel() == cpu::GemmKernel::Avx512, cpu::cpu_isa() >= cpu::Isa::Avx512);
  }
}

// Element-wise sums of products written as one multiply and one add per element are
// exact here (small integers), so every level must give the plain loop's result.
TEST(CpuIsa, ParallelForSimdCoversEveryIndexOnce) {
  const int64_t n = 100003;
  std::vector<float> a(n), b(n), out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = float(i % 97);
    b[i] = float(i % 89);
  }
  cpu::parallel_for_simd(n, 1000, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = a[i] * b[i] + 1.0f;
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] * b[i] + 1.0f) << i;
}

}  // namespace
}  // namespace vitune::testing
