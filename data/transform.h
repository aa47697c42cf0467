// A transform pipeline: an 8-bit image becomes float planes (pixel / 255), then goes
// through a list of steps (resize, crop, flip, channel conversion, normalisation) and
// comes out as an f32 tensor [C, H, W].
//
// Random steps draw from Philox counters keyed by (seed, epoch, example index, step,
// draw), never from a shared generator: an example's augmentation is a pure function of
// those, whatever the thread count or the order examples are processed in. The counters
// are stream = 2^63 + epoch (the shuffling permutation uses stream = epoch), index =
// example * 2^16 + step * 2^8 + draw.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/float_image.h"
#include "engine/tensor.h"

namespace vitune::data {

// Which example of which epoch under which seed is being transformed.
struct RandomKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t example = 0;
};

// The uniform numbers one step may draw for one example: draws 0..255.
class StepRandom {
 public:
  StepRandom(const RandomKey& key, int step);
  // Uniform in [0, 1) (24 random bits).
  float uniform(int draw) const;
  // Uniform integer in [0, count).
  int64_t below(int64_t count, int draw) const;

 private:
  RandomKey key_;
  int step_;
};

class TransformStep {
 public:
  virtual ~TransformStep() = default;
  virtual void apply(FloatImage& image, const StepRandom& random) const = 0;
  // A short text such as "resize(256, bilinear)".
  virtual std::string describe() const = 0;
};

class Transform {
 public:
  // Appends a step; returns *this so steps can be chained.
  Transform& then(std::shared_ptr<const TransformStep> step);

  // The image after every step, as float planes.
  FloatImage run(const Image& image, const RandomKey& key) const;
  // The same as an f32 tensor [C, H, W].
  Tensor apply(const Image& image, const RandomKey& key = {}) const;

  // The steps joined by " | ", e.g. "resize_shorter(256, bicubic) | centre_crop(224, 224)".
  std::string describe() const;
  size_t size() const { return steps_.size(); }

 private:
  std::vector<std::shared_ptr<const TransformStep>> steps_;
};

}  // namespace vitune::data
