// The backbone fingerprint: a 64-bit FNV-1a over each parameter's name and shape,
// then its values as f32 bits mixed eight bytes at a time (splitmix64 finaliser), so
// hashing ViT-B/16's 86 M weights takes well under a second.
#include "peft/model_hash.h"

#include <cstdio>
#include <cstring>

namespace vitune::peft {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t mix(uint64_t h, uint64_t word) {
  uint64_t z = h ^ (word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t add_bytes(uint64_t h, const void* data, size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * kFnvPrime;
  return h;
}

// The value's f32 bits as they are on the host, so a model hashes the same on any device.
uint64_t add_values(uint64_t h, const Tensor& value) {
  const Tensor host = value.to(Device::cpu());
  const Tensor f = host.dtype() == DType::F32 ? host : host.to(DType::F32);
  const auto* bytes = reinterpret_cast<const unsigned char*>(f.data<float>());
  const size_t n = static_cast<size_t>(f.numel()) * sizeof(float);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = mix(h, word);
  }
  return add_bytes(h, bytes + i, n - i);
}

}  // namespace

std::string backbone_hash(const nn::VisionTransformer& model) {
  uint64_t h = kFnvOffset;
  for (const nn::Parameter* p : model.parameters()) {
    if (p->name().rfind("head.", 0) == 0) continue;
    h = add_bytes(h, p->name().data(), p->name().size() + 1);
    for (int64_t d : p->shape()) h = add_bytes(h, &d, sizeof d);
    h = add_values(h, p->value());
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace vitune::peft
