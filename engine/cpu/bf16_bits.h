// Rounding an f32 value to bfloat16, to nearest even, on its bit pattern: the one
// rounding of round_to_bf16 and of the packing of the AVX-512 BF16 GEMM, so that the
// hardware kernel and the emulation multiply the same bf16 values.
#pragma once

#include <cstdint>
#include <cstring>

namespace vitune::cpu {

// The f32 bits of the bf16 value nearest to `value` (the low 16 bits are zero). Round
// to nearest even at bit 16: adding 0x7fff plus the lowest kept bit carries into the
// kept bits exactly when the dropped half is above one half, or exactly one half with
// an odd kept part. A NaN keeps its sign and upper payload and is made quiet.
inline uint32_t bf16_rounded_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (bits & 0xffff0000u) | 0x00400000u;
  return (bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

// Two values rounded to bf16 and packed in one 32-bit word, `low` in the low half: a
// pair of consecutive k as the AVX-512 BF16 dot-product instruction takes it.
inline uint32_t bf16_pair(float low, float high) {
  return (bf16_rounded_bits(low) >> 16) | bf16_rounded_bits(high);
}

}  // namespace vitune::cpu
