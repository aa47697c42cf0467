// Sizes, names and the bf16/f16 conversions of dtype.h.
#include "engine/dtype.h"

#include <cstring>

namespace vitune {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::BF16: return 2;
    case DType::F16: return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
  }
  return "?";
}

static float bits_to_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

static uint32_t float_to_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float bf16_to_f32(uint16_t bits) { return bits_to_float(uint32_t(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  uint32_t bits = float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal: value = mantissa * 2^-24.
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t f32_to_f16(float value) {
  uint32_t bits = float_to_bits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflows to infinity
  if (magnitude < 0x38800000u) {
    // Result is subnormal or zero: scale into units of 2^-24 and round to nearest even.
    float scaled = bits_to_float(magnitude) * 16777216.0f;  // exact: a power of two
    uint32_t whole = uint32_t(scaled);
    float rest = scaled - float(whole);
    if (rest > 0.5f || (rest == 0.5f && (whole & 1u))) ++whole;
    return uint16_t(sign | whole);
  }
  uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);
  return uint16_t(sign | ((magnitude - 0x38000000u + rounding) >> 13));
}

}  // namespace vitune
