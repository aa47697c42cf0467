// Element types a Tensor can hold. f32 is the type all math runs in; f64 exists so
// that every CPU kernel can be checked with finite differences in double precision;
// i32/i64 hold labels and indices, u8 masks and 8-bit images; bf16/f16 are storage
// types met in checkpoints and are converted to f32 when a model is loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vitune {

enum class DType : uint8_t { F32, F64, I32, I64, U8, BF16, F16 };

// Bytes per element.
size_t dtype_size(DType dtype);

// Lower-case name as used in messages ("f32", "i64", ...).
const char* dtype_name(DType dtype);

// Compile-time map from a C++ scalar type to its DType.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::I64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::U8; };

// IEEE half and bfloat16 <-> float, exact for every finite value, NaN and infinity.
float bf16_to_f32(uint16_t bits);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);  // round to nearest even
uint16_t f32_to_f16(float value);   // round to nearest even

}  // namespace vitune

namespace vitune::cpu {

// Converts `count` elements of host memory from `source` (dtype `from`) into
// `destination` (dtype `to`), vectorised and spread over the threads, and returns true
// when the pair is f32 -> bf16 (f32_to_bf16's rounding) or bf16 -> f32 (exact); false,
// touching nothing, for any other pair. The path of Tensor::to(DType) for that pair
// (autocast keeps activations in bf16 and widens them in backward); the CPU backend
// defines it (engine/cpu/convert.cpp). The same bits for any number of threads.
bool convert_on_host(const void* source, DType from, void* destination, DType to, int64_t count);

}  // namespace vitune::cpu
