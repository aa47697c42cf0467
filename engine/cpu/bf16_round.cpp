// round_to_bf16 on the host: each f32 value rounded to the nearest bfloat16 value and
// kept in f32 storage, bit for bit what bf16_to_f32(f32_to_bf16(x)) gives. Each output
// element depends on its own input only, so any split over threads gives the same bits.
// The bf16 GEMMs of autocast are emulated exactly with it: operands rounded, then the
// fp32 kernel, whose products of two bf16 values are exact in fp32.
#include <cstdint>
#include <cstring>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kElementGrain = int64_t(1) << 15;

// Round to nearest even at bit 16: adding 0x7fff plus the lowest kept bit carries into
// the kept bits exactly when the dropped half is above one half, or exactly one half
// with an odd kept part. A NaN keeps its sign and upper payload and is made quiet.
inline float round_float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (bits & 0xffff0000u) | 0x00400000u;
  const uint32_t out_bits = (bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
  float out;
  std::memcpy(&out, &out_bits, 4);
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

void gemm_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
               Tensor& c) {
  gemm(trans_a, trans_b, alpha, round_to_bf16(a), round_to_bf16(b), beta, c);
}

void gemm_batched_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                       double beta, Tensor& c) {
  gemm_batched(trans_a, trans_b, alpha, round_to_bf16(a), round_to_bf16(b), beta, c);
}

}  // namespace vitune::cpu
