// Per-feature sums of |x| over the tokens of each image, accumulated over the images in
// order: the statistic of GD-FPS's anchor and growth (peft/activation_stats.cpp). The
// CUDA definition (engine/cuda/token_sums.cu) sums in the same order, so the two give the
// same bits.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

// Features per parallel task: an (image, feature block) pair is one output chunk,
// summed over the tokens in order.
constexpr int64_t kFeatureBlock = 256;

}  // namespace

void token_abs_sums_into(const Tensor& x, Tensor& accumulate) {
  const char* op = "token_abs_sums_into";
  check_float(x, op);
  check_host(accumulate, op);
  const op_checks::TokenShape s = op_checks::token_sums_shape(x, accumulate, op);
  const int64_t batch = s.batch, tokens = s.tokens, features = s.features;
  // per_image[b * F + f] = sum over t, in order, of |x[b, t, f]|.
  std::vector<double> per_image(size_t(batch * features), 0.0);
  const int64_t blocks = (features + kFeatureBlock - 1) / kFeatureBlock;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    const T* values = x.kernel_data<T>();
    parallel_for(batch * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / blocks;
        const int64_t first = (task % blocks) * kFeatureBlock;
        const int64_t last = std::min(features, first + kFeatureBlock);
        double* acc = per_image.data() + b * features;
        for (int64_t t = 0; t < tokens; ++t) {
          const T* row = values + (b * tokens + t) * features;
          for (int64_t f = first; f < last; ++f) acc[f] += std::fabs(double(row[f]));
        }
      }
    });
  });
  double* total = accumulate.kernel_data<double>();
  for (int64_t b = 0; b < batch; ++b) {
    const double* image = per_image.data() + b * features;
    for (int64_t f = 0; f < features; ++f) total[f] += image[f];
  }
}

}  // namespace vitune::cpu
