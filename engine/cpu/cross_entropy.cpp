// Cross-entropy with label smoothing on the host: a stable log-softmax per row, the
// mean loss summed in double in row order, and the gradient with respect to the logits.
#include <cmath>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

// Checks scores [B, C] (logits or probabilities), labels i64 [B] in [0, C) and the
// smoothing in [0, 1].
void check_arguments(const Tensor& scores, const char* scores_name, const Tensor& labels,
                     double smoothing, const char* op) {
  cpu::check_float(scores, op);
  const op_checks::ClassScores shape =
      op_checks::class_scores(scores, scores_name, labels, op, cpu::check_host);
  const int64_t batch = shape.batch, classes = shape.classes;
  const int64_t* label = labels.kernel_data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    VITUNE_CHECK(label[b] >= 0 && label[b] < classes, op, ": label ", label[b], " of row ", b,
                 " is outside [0, ", classes, ")");
  }
  op_checks::check_label_smoothing(smoothing, op);
}

// Writes softmax(logits) into probs and the smoothed cross-entropy of each row into
// row_loss. With lse = log sum_c exp(x_c) and logp_c = x_c - lse:
//   -sum_c target_c logp_c = (1 - s) (lse - x_label) + s (lse - mean_c x_c).
template <typename T>
void forward_kernel(const T* logits, const int64_t* labels, double smoothing, int64_t batch,
                    int64_t classes, T* probs, double* row_loss) {
  parallel_for(batch, 8, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* x = logits + b * classes;
      T* p = probs + b * classes;
      double max = double(x[0]);
      for (int64_t c = 1; c < classes; ++c) max = double(x[c]) > max ? double(x[c]) : max;
      double sum_exp = 0, sum_x = 0;
      for (int64_t c = 0; c < classes; ++c) {
        sum_exp += std::exp(double(x[c]) - max);
        sum_x += double(x[c]);
      }
      const double lse = max + std::log(sum_exp);
      for (int64_t c = 0; c < classes; ++c) p[c] = T(std::exp(double(x[c]) - max) / sum_exp);
      double loss = (1 - smoothing) * (lse - double(x[labels[b]]));
      if (smoothing > 0) loss += smoothing * (lse - sum_x / double(classes));
      row_loss[b] = loss;
    }
  });
}

template <typename T>
void backward_kernel(const T* probs, const int64_t* labels, double smoothing, double factor,
                     int64_t batch, int64_t classes, T* dlogits) {
  const double off_target = smoothing / double(classes);
  const double on_target = 1 - smoothing + off_target;
  parallel_for(batch, 8, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* p = probs + b * classes;
      T* d = dlogits + b * classes;
      for (int64_t c = 0; c < classes; ++c) {
        const double target = c == labels[b] ? on_target : off_target;
        d[c] = T((double(p[c]) - target) * factor);
      }
    }
  });
}

}  // namespace

double cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                             Tensor& probs) {
  const char* op = "cross_entropy_forward";
  check_arguments(logits, "logits", labels, smoothing, op);
  const int64_t batch = logits.dim(0), classes = logits.dim(1);
  probs = Tensor(logits.shape(), logits.dtype(), logits.device());
  std::vector<double> row_loss(size_t(batch), 0.0);
  cpu::dispatch_float(logits, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T>(logits.kernel_data<T>(), labels.kernel_data<int64_t>(), smoothing, batch, classes,
                      probs.kernel_data<T>(), row_loss.data());
  });
  double total = 0;
  for (double loss : row_loss) total += loss;
  return total / double(batch);
}

// Backward. With lse = log sum_k exp(x_k), d lse / d x_c = p_c (the softmax), and the
// loss of one row is -sum_k t_k (x_k - lse) = lse - sum_k t_k x_k since sum_k t_k = 1.
// So d loss_row / d x_c = p_c - t_c, and the mean over B rows divides by B:
//   dlogits = (probs - target) * grad_scale / B.
Tensor cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                              double grad_scale) {
  const char* op = "cross_entropy_backward";
  check_arguments(probs, "probs", labels, smoothing, op);
  const int64_t batch = probs.dim(0), classes = probs.dim(1);
  Tensor dlogits(probs.shape(), probs.dtype(), probs.device());
  cpu::dispatch_float(probs, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T>(probs.kernel_data<T>(), labels.kernel_data<int64_t>(), smoothing,
                       grad_scale / double(batch), batch, classes, dlogits.kernel_data<T>());
  });
  return dlogits;
}

}  // namespace vitune::cpu
