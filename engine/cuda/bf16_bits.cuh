// Rounding an f32 bit pattern to bfloat16 on the device, bit for bit the host's
// f32_to_bf16 (engine/dtype.h) and bf16_rounded_bits (engine/cpu/bf16_bits.h): the one
// rounding of round_to_bf16, of the bf16 GEMMs' operands and of Tensor::to(DType::BF16).
#pragma once

#include <cstdint>

namespace vitune::cuda {

// The f32 bit pattern of the bfloat16 nearest to the f32 with pattern `bits` (the low
// 16 bits zero). Round to nearest even at bit 16: adding 0x7fff plus the lowest kept
// bit carries into the kept bits exactly when the dropped half is above one half, or
// exactly one half with an odd kept part; finite values past the bf16 range become
// infinity. A NaN keeps its sign and upper payload and is made quiet.
__device__ inline uint32_t rounded_bf16_bits(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits & 0xffff0000u) | 0x00400000u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
}

}  // namespace vitune::cuda
