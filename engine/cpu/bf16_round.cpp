// round_to_bf16 on the host: each f32 value rounded to the nearest bfloat16 value and
// kept in f32 storage, bit for bit what bf16_to_f32(f32_to_bf16(x)) gives. Each output
// element depends on its own input only, so any split over threads gives the same bits.
// Where the CPU lacks AVX512_BF16, the bf16 GEMMs of autocast are emulated exactly with
// it (engine/cpu/gemm.cpp): operands rounded, then the fp32 kernel, whose products of two
// bf16 values are exact in fp32.
#include <cstdint>
#include <cstring>

#include "engine/cpu/bf16_bits.h"
#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kElementGrain = int64_t(1) << 15;

inline float round_float_to_bf16(float value) {
  const uint32_t bits = bf16_rounded_bits(value);
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace

Tensor round_to_bf16(const Tensor& x) {
  check_host(x, "round_to_bf16");
  VITUNE_CHECK(x.dtype() == DType::F32, "round_to_bf16: expected an f32 tensor, got ", x.str());
  Tensor out(x.shape(), DType::F32, x.device());
  const float* in = x.kernel_data<float>();
  float* result = out.kernel_data<float>();
  parallel_for_simd(x.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) result[i] = round_float_to_bf16(in[i]);
  });
  return out;
}

}  // namespace vitune::cpu
