// The vitune::ops entry points: each checks that its tensors share one device, then runs
// the CPU or the CUDA definition of the op after that device; gemm, gemm_batched and
// linear_forward also follow the bf16 autocast switch of engine/autocast.h.
#include "engine/ops.h"

#include <cmath>

#include "engine/autocast.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"

namespace vitune {

AdamWUpdate adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                          int64_t step) {
  const double t = double(step);
  AdamWUpdate u;
  u.decay = float(1.0 - lr * weight_decay);
  u.beta1 = float(beta1);
  u.beta2 = float(beta2);
  u.eps = float(eps);
  u.step_size = float(lr / (1.0 - std::pow(beta1, t)));
  u.bias2_sqrt = float(std::sqrt(1.0 - std::pow(beta2, t)));
  return u;
}

}  // namespace vitune

namespace vitune::ops {

namespace {

// The defined tensors among the operands (null pointers and undefined tensors are
// optional arguments left out) all live on one device: a kernel of one backend never
// sees another device's pointer.
void one_device(const char* op, std::initializer_list<const Tensor*> operands) {
  const Tensor* first = nullptr;
  for (const Tensor* t : operands) {
    if (t == nullptr || !t->defined()) continue;
    if (first == nullptr) first = t;
    VITUNE_CHECK(t->device() == first->device(), op, ": operands on ", first->device().str(), " and ",
                 t->device().str(), "; move them to one device first (Tensor::to)");
  }
}

// Whether a product of a and b runs under bf16 autocast: the switch is on and both
// operands are f32 (f64 and mixed dtypes go to the ordinary kernel, which checks them).
bool autocast_product(const Tensor& a, const Tensor& b) {
  return autocast_bf16() && a.defined() && b.defined() && a.dtype() == DType::F32 && b.dtype() == DType::F32;
}

}  // namespace

#if VITUNE_WITH_CUDA
#define VITUNE_ON_DEVICE(tensor, call) ((tensor).device().is_cuda() ? cuda::call : cpu::call)
#else
#define VITUNE_ON_DEVICE(tensor, call) cpu::call
#endif

// Under autocast an f32 product runs as its bf16 twin.
void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
          Tensor& c) {
  one_device("gemm", {&a, &b, &c});
  if (autocast_product(a, b)) {
    VITUNE_ON_DEVICE(a, gemm_bf16(trans_a, trans_b, alpha, a, b, beta, c));
  } else {
    VITUNE_ON_DEVICE(a, gemm(trans_a, trans_b, alpha, a, b, beta, c));
  }
}

// The bias is checked before either path writes y.
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  one_device("linear_forward", {&x, &w, &bias, &y});
  op_checks::linear_bias(w, bias, "linear_forward");
  if (autocast_product(x, w)) {
    VITUNE_ON_DEVICE(x, gemm_bf16(false, true, 1.0, x, w, 0.0, y));
    VITUNE_ON_DEVICE(y, add_row_broadcast(y, bias));
  } else {
    VITUNE_ON_DEVICE(x, linear_forward(x, w, bias, y));
  }
}

void gemm_batched(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                  double beta, Tensor& c) {
  one_device("gemm_batched", {&a, &b, &c});
  if (autocast_product(a, b)) {
    VITUNE_ON_DEVICE(a, gemm_batched_bf16(trans_a, trans_b, alpha, a, b, beta, c));
  } else {
    VITUNE_ON_DEVICE(a, gemm_batched(trans_a, trans_b, alpha, a, b, beta, c));
  }
}

void gemm_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
               Tensor& c) {
  one_device("gemm_bf16", {&a, &b, &c});
  VITUNE_ON_DEVICE(a, gemm_bf16(trans_a, trans_b, alpha, a, b, beta, c));
}

void gemm_batched_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                       double beta, Tensor& c) {
  one_device("gemm_batched_bf16", {&a, &b, &c});
  VITUNE_ON_DEVICE(a, gemm_batched_bf16(trans_a, trans_b, alpha, a, b, beta, c));
}

Tensor round_to_bf16(const Tensor& x) {
  one_device("round_to_bf16", {&x});
  return VITUNE_ON_DEVICE(x, round_to_bf16(x));
}

Tensor add(const Tensor& a, const Tensor& b) {
  one_device("add", {&a, &b});
  return VITUNE_ON_DEVICE(a, add(a, b));
}

Tensor mul(const Tensor& a, const Tensor& b) {
  one_device("mul", {&a, &b});
  return VITUNE_ON_DEVICE(a, mul(a, b));
}

Tensor scale(const Tensor& a, double factor) {
  one_device("scale", {&a});
  return VITUNE_ON_DEVICE(a, scale(a, factor));
}

void axpy(double alpha, const Tensor& x, Tensor& y) {
  one_device("axpy", {&x, &y});
  VITUNE_ON_DEVICE(x, axpy(alpha, x, y));
}

void add_row_broadcast(Tensor& x, const Tensor& row) {
  one_device("add_row_broadcast", {&x, &row});
  VITUNE_ON_DEVICE(x, add_row_broadcast(x, row));
}

void sum_rows_into(const Tensor& x, Tensor& accumulate) {
  one_device("sum_rows_into", {&x, &accumulate});
  VITUNE_ON_DEVICE(x, sum_rows_into(x, accumulate));
}

double sum_all(const Tensor& x) {
  one_device("sum_all", {&x});
  return VITUNE_ON_DEVICE(x, sum_all(x));
}

double sum_squares(const Tensor& x) {
  one_device("sum_squares", {&x});
  return VITUNE_ON_DEVICE(x, sum_squares(x));
}

bool all_finite(const Tensor& x) {
  one_device("all_finite", {&x});
  return VITUNE_ON_DEVICE(x, all_finite(x));
}

void token_abs_sums_into(const Tensor& x, Tensor& accumulate) {
  one_device("token_abs_sums_into", {&x, &accumulate});
  VITUNE_ON_DEVICE(x, token_abs_sums_into(x, accumulate));
}

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& mean, Tensor& rstd) {
  one_device("layer_norm_forward", {&x, &weight, &bias, &mean, &rstd});
  return VITUNE_ON_DEVICE(x, layer_norm_forward(x, weight, bias, eps, mean, rstd));
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, Tensor* dx, Tensor* dweight,
                         Tensor* dbias) {
  one_device("layer_norm_backward", {&dy, &x, &weight, &mean, &rstd, dx, dweight, dbias});
  VITUNE_ON_DEVICE(dy, layer_norm_backward(dy, x, weight, mean, rstd, dx, dweight, dbias));
}

Tensor softmax_forward(const Tensor& x) {
  one_device("softmax_forward", {&x});
  return VITUNE_ON_DEVICE(x, softmax_forward(x));
}

Tensor softmax_backward(const Tensor& dy, const Tensor& y) {
  one_device("softmax_backward", {&dy, &y});
  return VITUNE_ON_DEVICE(dy, softmax_backward(dy, y));
}

Tensor gelu_forward(const Tensor& x) {
  one_device("gelu_forward", {&x});
  return VITUNE_ON_DEVICE(x, gelu_forward(x));
}

Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  one_device("gelu_backward", {&dy, &x});
  return VITUNE_ON_DEVICE(dy, gelu_backward(dy, x));
}

Tensor quick_gelu_forward(const Tensor& x) {
  one_device("quick_gelu_forward", {&x});
  return VITUNE_ON_DEVICE(x, quick_gelu_forward(x));
}

Tensor quick_gelu_backward(const Tensor& dy, const Tensor& x) {
  one_device("quick_gelu_backward", {&dy, &x});
  return VITUNE_ON_DEVICE(dy, quick_gelu_backward(dy, x));
}

// The FLOPs of one attention product over qkv [B, T, 3D] (the backend has checked the
// shape): every head's [T, dh] x [dh, T] (or [T, T] x [T, dh]) product, summed over the
// heads, is 2 * B * T * T * D.
namespace {
int64_t attention_product_flops(const Tensor& qkv) {
  const Shape& s = qkv.shape();
  return 2 * s[0] * s[1] * s[1] * (s[2] / 3);
}
}  // namespace

// Forward: Q K^T and P V, two products.
Tensor attention_forward(const Tensor& qkv, int heads, Tensor& probs) {
  one_device("attention_forward", {&qkv, &probs});
  Tensor ctx = VITUNE_ON_DEVICE(qkv, attention_forward(qkv, heads, probs));
  count_flops(2 * attention_product_flops(qkv));
  return ctx;
}

// Backward: dV, dP, dQ and dK, four products.
Tensor attention_backward(const Tensor& dctx, const Tensor& qkv, const Tensor& probs, int heads) {
  one_device("attention_backward", {&dctx, &qkv, &probs});
  Tensor dqkv = VITUNE_ON_DEVICE(dctx, attention_backward(dctx, qkv, probs, heads));
  count_flops(4 * attention_product_flops(qkv));
  return dqkv;
}

double cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                             Tensor& probs) {
  one_device("cross_entropy_forward", {&logits, &labels, &probs});
  return VITUNE_ON_DEVICE(logits, cross_entropy_forward(logits, labels, smoothing, probs));
}

Tensor cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                              double grad_scale) {
  one_device("cross_entropy_backward", {&probs, &labels});
  return VITUNE_ON_DEVICE(probs, cross_entropy_backward(probs, labels, smoothing, grad_scale));
}

void topk_rows(const Tensor& x, int64_t k, Tensor& values, Tensor& indices) {
  one_device("topk_rows", {&x, &values, &indices});
  VITUNE_ON_DEVICE(x, topk_rows(x, k, values, indices));
}

Tensor gather(const Tensor& x, const Tensor& indices) {
  one_device("gather", {&x, &indices});
  return VITUNE_ON_DEVICE(x, gather(x, indices));
}

void scatter(Tensor& x, const Tensor& indices, const Tensor& values) {
  one_device("scatter", {&x, &indices, &values});
  VITUNE_ON_DEVICE(x, scatter(x, indices, values));
}

void scatter_add(Tensor& x, const Tensor& indices, const Tensor& values) {
  one_device("scatter_add", {&x, &indices, &values});
  VITUNE_ON_DEVICE(x, scatter_add(x, indices, values));
}

Tensor column_slice(const Tensor& x, int64_t first, int64_t count) {
  one_device("column_slice", {&x});
  return VITUNE_ON_DEVICE(x, column_slice(x, first, count));
}

Tensor gather_columns(const Tensor& x, const Tensor& columns) {
  one_device("gather_columns", {&x, &columns});
  return VITUNE_ON_DEVICE(x, gather_columns(x, columns));
}

void masked_weight_grad(const Tensor& dy, const Tensor& x, const Tensor& indices,
                        int64_t in_features, Tensor& accumulate) {
  one_device("masked_weight_grad", {&dy, &x, &indices, &accumulate});
  VITUNE_ON_DEVICE(dy, masked_weight_grad(dy, x, indices, in_features, accumulate));
}

Tensor patchify(const Tensor& images, int patch) {
  one_device("patchify", {&images});
  return VITUNE_ON_DEVICE(images, patchify(images, patch));
}

Tensor unpatchify(const Tensor& patches, const Shape& image_shape, int patch) {
  one_device("unpatchify", {&patches});
  return VITUNE_ON_DEVICE(patches, unpatchify(patches, image_shape, patch));
}

Tensor prepend_token(const Tensor& token, const Tensor& x) {
  one_device("prepend_token", {&token, &x});
  return VITUNE_ON_DEVICE(token, prepend_token(token, x));
}

Tensor drop_first_token(const Tensor& x) {
  one_device("drop_first_token", {&x});
  return VITUNE_ON_DEVICE(x, drop_first_token(x));
}

Tensor select_token(const Tensor& x, int64_t index) {
  one_device("select_token", {&x});
  return VITUNE_ON_DEVICE(x, select_token(x, index));
}

Tensor place_token(const Tensor& y, int64_t tokens, int64_t index) {
  one_device("place_token", {&y});
  return VITUNE_ON_DEVICE(y, place_token(y, tokens, index));
}

void sgd_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor* momentum_buffer,
                const SgdUpdate& update) {
  one_device("sgd_update", {&value, indices, &grad, momentum_buffer});
  VITUNE_ON_DEVICE(value, sgd_update(value, indices, grad, momentum_buffer, update));
}

void adamw_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor& m, Tensor& v,
                  const AdamWUpdate& update) {
  one_device("adamw_update", {&value, indices, &grad, &m, &v});
  VITUNE_ON_DEVICE(value, adamw_update(value, indices, grad, m, v, update));
}
#undef VITUNE_ON_DEVICE

}  // namespace vitune::ops
