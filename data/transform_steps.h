// The steps a transform pipeline is made of, with torchvision's semantics.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "data/resample.h"
#include "data/transform.h"

namespace vitune::data {

// Resize to exactly height x width.
class Resize : public TransformStep {
 public:
  Resize(int height, int width, Interpolation interpolation);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  int height_, width_;
  Interpolation interpolation_;
};

// Resize so that the shorter side is `size`, keeping the aspect ratio (torchvision's
// Resize(int)): the longer side becomes floor(size * longer / shorter).
class ResizeShorterSide : public TransformStep {
 public:
  ResizeShorterSide(int size, Interpolation interpolation);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  int size_;
  Interpolation interpolation_;
};

// The output size of ResizeShorterSide(size) for a height x width image.
std::pair<int, int> shorter_side_size(int height, int width, int size);

// The centred height x width rectangle; offsets round((image - crop) / 2) with ties to
// even, as torchvision. Throws if the crop is larger than the image.
class CentreCrop : public TransformStep {
 public:
  CentreCrop(int height, int width);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  int height_, width_;
};

Region centre_crop_region(int image_height, int image_width, int crop_height, int crop_width);

// torchvision's RandomResizedCrop: up to 10 attempts at a rectangle of area
// uniform(scale) * image area and aspect ratio exp(uniform(log ratio)) that fits, at a
// uniform position; else the centred largest rectangle within the ratio range. The
// rectangle is then resized to size x size.
class RandomResizedCrop : public TransformStep {
 public:
  RandomResizedCrop(int size, Interpolation interpolation,
                    std::pair<double, double> scale = {0.08, 1.0},
                    std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  int size_;
  Interpolation interpolation_;
  std::pair<double, double> scale_, ratio_;
};

// The rectangle RandomResizedCrop takes. Attempt a uses draws 4a (area), 4a + 1 (log
// aspect ratio), 4a + 2 (top), 4a + 3 (left).
Region random_resized_crop_region(int height, int width, const StepRandom& random,
                                  std::pair<double, double> scale, std::pair<double, double> ratio);

// Mirrors left-right when draw 0 is below p.
class RandomHorizontalFlip : public TransformStep {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  double p_;
};

// Makes the image `channels` channels: grey to RGB replicates the plane, RGB to grey is
// 0.299 R + 0.587 G + 0.114 B; equal counts pass through.
class ToChannels : public TransformStep {
 public:
  explicit ToChannels(int channels);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  int channels_;
};

// (value - mean[c]) / std[c]. With one value each it applies to every channel; with
// three on a 1-channel image the means of the three are used.
class Normalize : public TransformStep {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  void apply(FloatImage& image, const StepRandom& random) const override;
  std::string describe() const override;

 private:
  std::vector<float> mean_, std_;
};

}  // namespace vitune::data
