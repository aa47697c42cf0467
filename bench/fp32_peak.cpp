// The fp32 multiply-add throughput this machine delivers now: every thread of the pool
// runs 16 independent chains of 512-bit fused multiply-adds (enough to cover the latency
// of two FMA pipes) with no memory traffic. The GEMM benchmarks' peak_fraction divides by
// a stated peak (VITUNE_PEAK_GFLOPS); this measures it, so a shared or throttled machine
// shows as a lower peak rather than as a slower kernel. On a CPU without AVX-512 (or
// another architecture) it says so and measures nothing.
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/parallel.h"

#if VITUNE_X86_LEVELS
#include <immintrin.h>

namespace {

constexpr int kChains = 16;
constexpr int64_t kIterations = 100'000'000 / kChains;

// 2 flops x 16 lanes x kChains x kIterations; returns a value so nothing is optimised out.
VITUNE_TARGET_AVX512 float fma_chains(float seed) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + float(c));
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], mul, add);
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

}  // namespace

int main() {
  if (vitune::cpu::detected_isa() < vitune::cpu::Isa::Avx512) {
    std::printf("fp32_peak: this CPU has no AVX-512; this benchmark measures AVX-512 FMA throughput only\n");
    return 0;
  }
  const int threads = vitune::num_threads();
  const double flops_per_thread = 2.0 * 16 * kChains * double(kIterations);
  double best = 0;
  std::vector<float> sink(threads);
  for (int repeat = 0; repeat < 5; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    vitune::parallel_for(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) sink[t] = fma_chains(float(t));
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double gflops = flops_per_thread * threads / seconds / 1e9;
    best = gflops > best ? gflops : best;
    std::printf("threads %d  run %d  %.1f GFLOP/s\n", threads, repeat, gflops);
  }
  std::printf("fp32 FMA peak (best of 5): %.1f GFLOP/s on %d threads (sink %g)\n", best, threads, double(sink[0]));
  return 0;
}

#else

int main() {
  std::printf("fp32_peak: measures AVX-512 FMA throughput, an x86 instruction set\n");
  return 0;
}

#endif
