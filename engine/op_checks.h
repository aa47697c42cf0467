// The argument checks of the ops that do not depend on the device: shapes, ranks, dtype
// agreement and argument ranges, one copy shared by the CPU and the CUDA backends, each
// returning the sizes its kernels need; and the dispatch on element width that gather and
// scatter share. The checks that tensors sit on the backend's device stay in the backends;
// where an op checks a tensor's device between two of the checks here, the backend passes
// its device check in, so both backends report the same first error for the same call.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "engine/tensor.h"

namespace vitune::op_checks {

// A backend's check that t is defined and on the backend's device (cpu::check_host,
// cuda::check_on_cuda); it throws an Error naming op otherwise.
using DeviceCheck = void (*)(const Tensor& t, const char* op);

// GEMM: c = op(a) op(b) with a and c viewed as [rows, last dimension], op(a) [M, K],
// op(b) [K, N], c [M, N].
struct GemmShape {
  int64_t m, n, k;
};
// Checks that a, b and c share a dtype and give a product of those shapes; returns M, N, K.
GemmShape gemm_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                     const char* op);
// Checks that a, b and c are [S, ., .] stacks of one size S and returns S.
int64_t gemm_stack_size(const Tensor& a, const Tensor& b, const Tensor& c, const char* op);
// The shape of each product of a non-empty stack, checked as gemm_shape does.
GemmShape gemm_item_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                          const char* op);

// x viewed as [rows, features] over its last dimension.
struct RowShape {
  int64_t rows, features;
};
// Checks that x has a non-empty last dimension and returns its rows and features.
RowShape feature_rows(const Tensor& x, const char* op);

// LayerNorm over the last dimension of x. The forward checks weight and bias (x's dtype,
// [features]) and that eps is a positive number; the backward checks weight, mean and
// rstd ([rows]) and the parameter gradients that are asked for.
RowShape layer_norm_forward_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                  const char* op, DeviceCheck on_device);
RowShape layer_norm_backward_shape(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd, const Tensor* dweight, const Tensor* dbias,
                                   const char* op, DeviceCheck on_device);

// Checks that x has a last dimension and that `vector` (named `name` in the message) is a
// vector of x's dtype as long as it; returns that length, the columns of x.
int64_t last_dim_vector(const Tensor& x, const Tensor& vector, const char* name, const char* op);

// linear_forward's bias: a vector of w's dtype with one value per row of w, the matrix
// [out, in].
void linear_bias(const Tensor& w, const Tensor& bias, const char* op);

// token_abs_sums_into: x [B, T, F] (its float dtype checked by the backend) and an f64
// accumulator [F]; returns B, T and F.
struct TokenShape {
  int64_t batch, tokens, features;
};
TokenShape token_sums_shape(const Tensor& x, const Tensor& accumulate, const char* op);

// column_slice: x [R, C] with 0 <= first and 0 <= count <= C - first; returns R and C.
struct Columns {
  int64_t rows, cols;
};
Columns column_slice_shape(const Tensor& x, int64_t first, int64_t count, const char* op);
// gather_columns: x [R, C] and columns an i64 vector; returns R and C. The column
// values are the backend's to check.
Columns gather_columns_shape(const Tensor& x, const Tensor& columns, const char* op);

// Checks scores [B, C] (logits or probabilities, named `scores_name`) with B, C > 0 and
// labels i64 [B]; returns B and C. The label values are the backend's to check.
struct ClassScores {
  int64_t batch, classes;
};
ClassScores class_scores(const Tensor& scores, const char* scores_name, const Tensor& labels,
                         const char* op, DeviceCheck on_device);
// Checks that the label smoothing is in [0, 1].
void check_label_smoothing(double smoothing, const char* op);

// Indices for gather and scatter are i64; the backend checks their values.
void check_index_dtype(const Tensor& indices, const char* op);
// Checks that values has the shape of indices and the dtype of x.
void check_scatter_values(const Tensor& x, const Tensor& indices, const Tensor& values, const char* op);
// Calls f(W{}) with W the unsigned integer type as wide as one element of `dtype`, so
// that gather and scatter move elements of any dtype as plain words.
template <typename F>
void dispatch_width(DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// masked_weight_grad: dy [T.., out], x [T.., in] of one dtype with the accumulator, the
// same number of rows T, and i64 indices [n] with accumulate [n].
struct MaskedGradShape {
  int64_t out_features, tokens;
};
MaskedGradShape masked_grad_shape(const Tensor& dy, const Tensor& x, const Tensor& indices,
                                  int64_t in_features, const Tensor& accumulate, const char* op);

// Images [B, C, H, W] cut into p x p patches on a grid_h x grid_w grid. The constexpr
// members are callable from CUDA kernels too (the engine compiles its CUDA sources with
// relaxed constexpr).
struct PatchGrid {
  int64_t batch, channels, height, width, patch, grid_h, grid_w;
  constexpr int64_t patches_per_image() const { return grid_h * grid_w; }
  constexpr int64_t patch_size() const { return channels * patch * patch; }
};
// Checks that the images are 4-D with height and width divisible by a positive patch size.
PatchGrid patch_grid(const Shape& image_shape, int patch, const char* op);
// The grid of unpatchify, after checking that patches has the shape patchify gives.
PatchGrid unpatchify_grid(const Tensor& patches, const Shape& image_shape, int patch, const char* op);

// Attention over qkv [batch, tokens, 3 * dim] with dim = heads * head_dim.
struct AttentionShape {
  int64_t batch, tokens, dim, heads, head_dim;
};
AttentionShape attention_shape(const Tensor& qkv, int heads, const char* op);
// Checks that dctx [batch, tokens, dim] and probs [batch, heads, tokens, tokens] have
// qkv's dtype.
void check_attention_grads(const AttentionShape& s, const Tensor& dctx, const Tensor& qkv,
                           const Tensor& probs, const char* op);

// The operands of an optimizer update: f32 value and gradient, i64 indices (or, without
// them, a value as large as the gradient) and f32 state buffers, one entry per gradient
// entry.
void check_update_operands(const Tensor& value, const Tensor* indices, const Tensor& grad,
                           std::initializer_list<const Tensor*> state, const char* op,
                           DeviceCheck on_device);

}  // namespace vitune::op_checks
