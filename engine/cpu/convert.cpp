// f32 <-> bf16 conversion of host memory (cpu::convert_on_host of engine/dtype.h).
#include "engine/dtype.h"

#include "engine/cpu/bf16_bits.h"
#include "engine/cpu/isa.h"

namespace vitune::cpu {

namespace {
constexpr int64_t kElementGrain = int64_t(1) << 15;
}  // namespace

bool convert_on_host(const void* source, DType from, void* destination, DType to, int64_t count) {
  if (from == DType::F32 && to == DType::BF16) {
    const float* in = static_cast<const float*>(source);
    uint16_t* out = static_cast<uint16_t*>(destination);
    parallel_for_simd(count, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = uint16_t(bf16_rounded_bits(in[i]) >> 16);
    });
    return true;
  }
  if (from == DType::BF16 && to == DType::F32) {
    const uint16_t* in = static_cast<const uint16_t*>(source);
    uint32_t* out = static_cast<uint32_t*>(destination);  // the f32 bit patterns
    parallel_for_simd(count, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = uint32_t(in[i]) << 16;
    });
    return true;
  }
  return false;
}

}  // namespace vitune::cpu
