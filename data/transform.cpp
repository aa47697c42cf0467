// The transform pipeline and its counter-based random draws.
#include "data/transform.h"

#include <cstring>

#include "engine/random.h"

namespace vitune::data {

namespace {

constexpr uint64_t kAugmentStreams = uint64_t(1) << 63;
constexpr int kStepBits = 8;
constexpr int kDrawBits = 8;
constexpr int kMaxSteps = 1 << kStepBits;
constexpr int kMaxDraws = 1 << kDrawBits;
constexpr int64_t kMaxExample = int64_t(1) << (64 - 1 - kStepBits - kDrawBits);

}  // namespace

StepRandom::StepRandom(const RandomKey& key, int step) : key_(key), step_(step) {
  VITUNE_CHECK(step >= 0 && step < kMaxSteps, "transform: step ", step, " of more than ", kMaxSteps,
               " steps");
  VITUNE_CHECK(key.example >= 0 && key.example < kMaxExample, "transform: example index ",
               key.example, " out of range");
  VITUNE_CHECK(key.epoch >= 0, "transform: epoch ", key.epoch, " is negative");
}

float StepRandom::uniform(int draw) const {
  VITUNE_CHECK(draw >= 0 && draw < kMaxDraws, "transform: draw ", draw, " of more than ", kMaxDraws,
               " per step");
  const uint64_t index = (uint64_t(key_.example) << (kStepBits + kDrawBits)) |
                         (uint64_t(step_) << kDrawBits) | uint64_t(draw);
  return uniform01(key_.seed, kAugmentStreams | uint64_t(key_.epoch), index);
}

int64_t StepRandom::below(int64_t count, int draw) const {
  VITUNE_CHECK(count > 0, "transform: a random integer below ", count);
  const int64_t value = int64_t(double(uniform(draw)) * double(count));
  return value < count ? value : count - 1;
}

Transform& Transform::then(std::shared_ptr<const TransformStep> step) {
  VITUNE_CHECK(step != nullptr, "transform: null step");
  VITUNE_CHECK(steps_.size() < size_t(kMaxSteps), "transform: more than ", kMaxSteps, " steps");
  steps_.push_back(std::move(step));
  return *this;
}

FloatImage Transform::run(const Image& image, const RandomKey& key) const {
  FloatImage values = to_float_image(image);
  for (size_t s = 0; s < steps_.size(); ++s) steps_[s]->apply(values, StepRandom(key, int(s)));
  return values;
}

Tensor Transform::apply(const Image& image, const RandomKey& key) const {
  const FloatImage values = run(image, key);
  Tensor out({values.channels, values.height, values.width}, DType::F32, Device::cpu());
  std::memcpy(out.data<float>(), values.values.data(), values.values.size() * sizeof(float));
  return out;
}

std::string Transform::describe() const {
  std::string text;
  for (const auto& step : steps_) text += (text.empty() ? "" : " | ") + step->describe();
  return text.empty() ? "identity" : text;
}

}  // namespace vitune::data
