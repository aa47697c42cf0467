// Cross-entropy with label smoothing on CUDA: a stable log-softmax per row (one thread
// block per row, sums in double), the mean loss summed on the host in row order, and the
// gradient with respect to the logits. Labels are checked on the device without waiting
// (index_check.h): a label outside [0, classes) is an Error naming the first such row,
// raised by the loss's own read-back in the forward, and at the next wait for the device
// in the backward; the kernels skip their work when the check failed.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Copies `count` values of type V from device memory to the host and waits for them
// (which reports a failed label check).
template <typename V>
std::vector<V> read_back(const V* source, int64_t count, int device, const char* op) {
  std::vector<V> values(static_cast<size_t>(count));
  VITUNE_CUDA_CHECK(cudaMemcpyAsync(values.data(), source, size_t(count) * sizeof(V),
                                    cudaMemcpyDeviceToHost, stream(device)));
  wait_for(device, op);
  return values;
}

struct CheckedArguments {
  int device;
  const unsigned long long* fault;  // the label check's verdict on the device
};

// Checks scores [B, C] (logits or probabilities), labels i64 [B] on the same CUDA device
// and the smoothing in [0, 1], and queues the check of the labels' range [0, C).
CheckedArguments check_arguments(const Tensor& scores, const char* scores_name, const Tensor& labels,
                                 double smoothing, const char* op) {
  check_cuda_float(scores, op);
  const int64_t classes = op_checks::class_scores(scores, scores_name, labels, op, check_on_cuda).classes;
  const int device = same_device({&scores, &labels}, op);
  op_checks::check_label_smoothing(smoothing, op);
  const unsigned long long* fault = check_indices_deferred(
      labels, classes, false, [op = std::string(op), classes](int64_t row, int64_t label, int64_t) {
        return cat(op, ": label ", label, " of row ", row, " is outside [0, ", classes, ")");
      });
  return {device, fault};
}

// Writes softmax(logits) into probs and the smoothed cross-entropy of each row into
// row_loss; one block per row. With lse = log sum_c exp(x_c) and logp_c = x_c - lse:
//   -sum_c target_c logp_c = (1 - s) (lse - x_label) + s (lse - mean_c x_c).
template <typename T>
__global__ void forward_kernel(const T* logits, const int64_t* labels, double smoothing, int64_t batch,
                               int64_t classes, const unsigned long long* fault, T* probs, double* row_loss) {
  if (*fault != kNoFault) return;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const T* x = logits + b * classes;
    T* p = probs + b * classes;
    double local_max = double(x[0]);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      local_max = MaxOp{}(local_max, double(x[c]));
    }
    const double max = block_max(local_max);
    double local_sum_exp = 0, local_sum_x = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      local_sum_exp += exp(double(x[c]) - max);
      local_sum_x += double(x[c]);
    }
    const double sum_exp = block_sum(local_sum_exp);
    const double sum_x = block_sum(local_sum_x);
    const double lse = max + log(sum_exp);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      p[c] = T(exp(double(x[c]) - max) / sum_exp);
    }
    if (threadIdx.x == 0) {
      double loss = (1 - smoothing) * (lse - double(x[labels[b]]));
      if (smoothing > 0) loss += smoothing * (lse - sum_x / double(classes));
      row_loss[b] = loss;
    }
  }
}

// With lse = log sum_k exp(x_k), d lse / d x_c = p_c (the softmax), and the loss of one
// row is -sum_k t_k (x_k - lse) = lse - sum_k t_k x_k since sum_k t_k = 1. So
// d loss_row / d x_c = p_c - t_c, and the mean over B rows divides by B:
//   dlogits = (probs - target) * factor,  factor = grad_scale / B,
// with target t_c = 1 - s + s/C at the label and s/C elsewhere. One thread per element.
template <typename T>
__global__ void backward_kernel(const T* probs, const int64_t* labels, double smoothing, double factor,
                                int64_t batch, int64_t classes, const unsigned long long* fault, T* dlogits) {
  if (*fault != kNoFault) return;
  const double off_target = smoothing / double(classes);
  const double on_target = 1 - smoothing + off_target;
  const int64_t n = batch * classes;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / classes, c = i % classes;
    const double target = c == labels[b] ? on_target : off_target;
    dlogits[i] = T((double(probs[i]) - target) * factor);
  }
}

}  // namespace

double cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                             Tensor& probs) {
  const char* op = "cross_entropy_forward";
  const CheckedArguments checked = check_arguments(logits, "logits", labels, smoothing, op);
  const int device = checked.device;
  const int64_t batch = logits.dim(0), classes = logits.dim(1);
  probs = Tensor(logits.shape(), logits.dtype(), logits.device());
  Tensor row_loss({batch}, DType::F64, logits.device());
  dispatch_float(logits, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(batch, 1), kRowThreads, 0, stream(device)>>>(
        logits.kernel_data<T>(), labels.kernel_data<int64_t>(), smoothing, batch, classes, checked.fault,
        probs.kernel_data<T>(), row_loss.kernel_data<double>());
    check_launch("cross_entropy forward_kernel");
  });
  double total = 0;
  for (double loss : read_back(row_loss.kernel_data<double>(), batch, device, op)) total += loss;
  return total / double(batch);
}

// Backward: dlogits = (probs - target) * grad_scale / B, derived above backward_kernel.
Tensor cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                              double grad_scale) {
  const char* op = "cross_entropy_backward";
  const CheckedArguments checked = check_arguments(probs, "probs", labels, smoothing, op);
  const int device = checked.device;
  const int64_t batch = probs.dim(0), classes = probs.dim(1);
  Tensor dlogits(probs.shape(), probs.dtype(), probs.device());
  dispatch_float(probs, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(batch * classes), kThreads, 0, stream(device)>>>(
        probs.kernel_data<T>(), labels.kernel_data<int64_t>(), smoothing, grad_scale / double(batch), batch,
        classes, checked.fault, dlogits.kernel_data<T>());
    check_launch("cross_entropy backward_kernel");
  });
  return dlogits;
}

}  // namespace vitune::cuda
