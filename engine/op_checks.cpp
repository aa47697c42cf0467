// The device-independent argument checks of op_checks.h. The messages are part of the
// op API: the tests match some of them, and both backends give the same ones.
#include "engine/op_checks.h"

#include <cmath>

#include "engine/error.h"

namespace vitune::op_checks {

namespace {

// The product of every dimension but the last (well defined when the last is 0).
int64_t leading_rows(const Tensor& t) {
  int64_t rows = 1;
  for (int axis = 0; axis + 1 < t.ndim(); ++axis) rows *= t.dim(axis);
  return rows;
}

// Checks that `t` is a vector [features] of dtype `dtype` on the backend's device.
void check_feature_vector(const Tensor& t, const char* name, int64_t features, DType dtype,
                          const char* op, DeviceCheck on_device) {
  VITUNE_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  on_device(t, op);
  VITUNE_CHECK(t.ndim() == 1 && t.dim(0) == features && t.dtype() == dtype, op, ": ", name,
               " must be ", dtype_name(dtype), "[", features, "], got ", t.str());
}

}  // namespace

GemmShape gemm_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                     const char* op) {
  VITUNE_CHECK(a.dtype() == b.dtype() && a.dtype() == c.dtype(), op, ": mixed dtypes ", a.str(), ", ",
               b.str(), ", ", c.str());
  VITUNE_CHECK(b.ndim() == 2 && c.ndim() >= 2 && a.ndim() == c.ndim(), op, ": bad ranks ", a.str(),
               " x ", b.str(), " -> ", c.str());
  int64_t a_rows = leading_rows(a), a_cols = a.dim(-1);
  int64_t m = trans_a ? a_cols : a_rows, k = trans_a ? a_rows : a_cols;
  VITUNE_CHECK(!trans_a || a.ndim() == 2, op, ": a transposed operand must be 2-D, got ", a.str());
  int64_t kb = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  VITUNE_CHECK(k == kb && leading_rows(c) == m && c.dim(-1) == n, op, ": shapes ", a.str(),
               (trans_a ? "^T" : ""), " x ", b.str(), (trans_b ? "^T" : ""), " do not give ", c.str());
  return {m, n, k};
}

int64_t gemm_stack_size(const Tensor& a, const Tensor& b, const Tensor& c, const char* op) {
  VITUNE_CHECK(a.ndim() == 3 && b.ndim() == 3 && c.ndim() == 3 && a.dim(0) == b.dim(0) &&
                   a.dim(0) == c.dim(0),
               op, ": expects [S,.,.] operands with one stack size, got ", a.str(), ", ", b.str(), ", ",
               c.str());
  return a.dim(0);
}

GemmShape gemm_item_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                          const char* op) {
  return gemm_shape(trans_a, trans_b, a.rows(0, 1).reshape({a.dim(1), a.dim(2)}),
                    b.rows(0, 1).reshape({b.dim(1), b.dim(2)}),
                    c.rows(0, 1).reshape({c.dim(1), c.dim(2)}), op);
}

RowShape feature_rows(const Tensor& x, const char* op) {
  VITUNE_CHECK(x.ndim() >= 1 && x.dim(-1) > 0, op,
               ": expected a tensor with a non-empty last dimension, got ", x.str());
  const int64_t features = x.dim(-1);
  return {x.numel() / features, features};
}

RowShape layer_norm_forward_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                  const char* op, DeviceCheck on_device) {
  const RowShape s = feature_rows(x, op);
  check_feature_vector(weight, "weight", s.features, x.dtype(), op, on_device);
  check_feature_vector(bias, "bias", s.features, x.dtype(), op, on_device);
  VITUNE_CHECK(std::isfinite(eps) && eps > 0, op, ": eps must be a positive number, got ", eps);
  return s;
}

RowShape layer_norm_backward_shape(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd, const Tensor* dweight, const Tensor* dbias,
                                   const char* op, DeviceCheck on_device) {
  const RowShape s = feature_rows(x, op);
  check_feature_vector(weight, "weight", s.features, x.dtype(), op, on_device);
  check_feature_vector(mean, "mean", s.rows, x.dtype(), op, on_device);
  check_feature_vector(rstd, "rstd", s.rows, x.dtype(), op, on_device);
  if (dweight) check_feature_vector(*dweight, "dweight", s.features, x.dtype(), op, on_device);
  if (dbias) check_feature_vector(*dbias, "dbias", s.features, x.dtype(), op, on_device);
  return s;
}

int64_t last_dim_vector(const Tensor& x, const Tensor& vector, const char* name, const char* op) {
  VITUNE_CHECK(x.ndim() >= 1, op, ": x must have at least one dimension, got ", x.str());
  const int64_t cols = x.dim(-1);
  VITUNE_CHECK(vector.ndim() == 1 && vector.dim(0) == cols && vector.dtype() == x.dtype(), op, ": ", name,
               " must be ", dtype_name(x.dtype()), "[", cols, "] (x's last dimension and dtype) for x ",
               x.str(), ", got ", vector.str());
  return cols;
}

void linear_bias(const Tensor& w, const Tensor& bias, const char* op) {
  VITUNE_CHECK(w.ndim() == 2, op, ": w must be a matrix [out, in], got ", w.str());
  VITUNE_CHECK(bias.ndim() == 1 && bias.dim(0) == w.dim(0) && bias.dtype() == w.dtype(), op, ": bias must be ",
               dtype_name(w.dtype()), "[", w.dim(0), "] (one value per row of w ", w.str(), "), got ",
               bias.str());
}

TokenShape token_sums_shape(const Tensor& x, const Tensor& accumulate, const char* op) {
  VITUNE_CHECK(x.ndim() == 3, op, ": x must be [batch, tokens, features], got ", x.str());
  const int64_t features = x.dim(2);
  VITUNE_CHECK(accumulate.ndim() == 1 && accumulate.dim(0) == features && accumulate.dtype() == DType::F64, op,
               ": the accumulator must be f64[", features, "] (x's last dimension) for x ", x.str(), ", got ",
               accumulate.str());
  return {x.dim(0), x.dim(1), features};
}

Columns column_slice_shape(const Tensor& x, int64_t first, int64_t count, const char* op) {
  VITUNE_CHECK(x.ndim() == 2, op, ": x must be [rows, columns], got ", x.str());
  const int64_t cols = x.dim(1);
  VITUNE_CHECK(first >= 0 && count >= 0 && first <= cols && count <= cols - first, op, ": columns [", first, ", ",
               first, " + ", count, ") are not inside the ", cols, " columns of ", x.str());
  return {x.dim(0), cols};
}

Columns gather_columns_shape(const Tensor& x, const Tensor& columns, const char* op) {
  VITUNE_CHECK(x.ndim() == 2, op, ": x must be [rows, columns], got ", x.str());
  check_index_dtype(columns, op);
  VITUNE_CHECK(columns.ndim() == 1, op, ": the column numbers must be a vector, got ", columns.str());
  return {x.dim(0), x.dim(1)};
}

ClassScores class_scores(const Tensor& scores, const char* scores_name, const Tensor& labels,
                         const char* op, DeviceCheck on_device) {
  VITUNE_CHECK(scores.ndim() == 2 && scores.dim(0) > 0 && scores.dim(1) > 0, op, ": ",
               scores_name, " must be [batch, classes] with both non-empty, got ", scores.str());
  const int64_t batch = scores.dim(0), classes = scores.dim(1);
  on_device(labels, op);
  VITUNE_CHECK(labels.dtype() == DType::I64 && labels.ndim() == 1 && labels.dim(0) == batch, op,
               ": labels must be i64[", batch, "] to match ", scores_name, " ", scores.str(),
               ", got ", labels.str());
  return {batch, classes};
}

void check_label_smoothing(double smoothing, const char* op) {
  VITUNE_CHECK(smoothing >= 0 && smoothing <= 1, op, ": label smoothing must be in [0, 1], got ",
               smoothing);
}

void check_index_dtype(const Tensor& indices, const char* op) {
  VITUNE_CHECK(indices.dtype() == DType::I64, op, ": indices must be i64, got ", indices.str());
}

void check_scatter_values(const Tensor& x, const Tensor& indices, const Tensor& values, const char* op) {
  VITUNE_CHECK(values.shape() == indices.shape() && values.dtype() == x.dtype(), op,
               ": values must have the shape of indices ", indices.str(), " and the dtype of x ",
               x.str(), ", got ", values.str());
}

MaskedGradShape masked_grad_shape(const Tensor& dy, const Tensor& x, const Tensor& indices,
                                  int64_t in_features, const Tensor& accumulate, const char* op) {
  VITUNE_CHECK(x.dtype() == dy.dtype() && accumulate.dtype() == dy.dtype(), op,
               ": dy, x and accumulate must share a dtype, got ", dy.str(), ", ", x.str(), ", ",
               accumulate.str());
  VITUNE_CHECK(in_features > 0 && x.ndim() >= 1 && x.dim(-1) == in_features, op,
               ": x must have last dimension in_features = ", in_features, ", got ", x.str());
  VITUNE_CHECK(dy.ndim() >= 1 && dy.dim(-1) > 0, op,
               ": dy must have a positive last dimension (out_features), got ", dy.str());
  const int64_t out_features = dy.dim(-1);
  const int64_t tokens = x.numel() / in_features;
  VITUNE_CHECK(dy.numel() / out_features == tokens, op, ": dy ", dy.str(), " and x ", x.str(),
               " have different numbers of rows");
  VITUNE_CHECK(indices.dtype() == DType::I64 && indices.ndim() == 1, op,
               ": indices must be a 1-D i64 tensor, got ", indices.str());
  VITUNE_CHECK(accumulate.ndim() == 1 && accumulate.dim(0) == indices.dim(0), op,
               ": accumulate must have one element per index (", indices.dim(0), "), got ",
               accumulate.str());
  return {out_features, tokens};
}

PatchGrid patch_grid(const Shape& image_shape, int patch, const char* op) {
  VITUNE_CHECK(image_shape.size() == 4, op, ": images must be 4-D [B, C, H, W], got shape ",
               shape_str(image_shape));
  VITUNE_CHECK(patch >= 1, op, ": patch size must be positive, got ", patch);
  PatchGrid g{image_shape[0], image_shape[1], image_shape[2], image_shape[3], patch, 0, 0};
  VITUNE_CHECK(g.height % patch == 0 && g.width % patch == 0, op, ": image height ", g.height,
               " and width ", g.width, " must be divisible by the patch size ", patch);
  g.grid_h = g.height / patch;
  g.grid_w = g.width / patch;
  return g;
}

PatchGrid unpatchify_grid(const Tensor& patches, const Shape& image_shape, int patch, const char* op) {
  const PatchGrid g = patch_grid(image_shape, patch, op);
  const Shape expected{g.batch, g.patches_per_image(), g.patch_size()};
  VITUNE_CHECK(patches.shape() == expected, op, ": patches for images ", shape_str(image_shape),
               " with patch size ", patch, " must have shape ", shape_str(expected), ", got ",
               patches.str());
  return g;
}

AttentionShape attention_shape(const Tensor& qkv, int heads, const char* op) {
  VITUNE_CHECK(heads >= 1, op, ": heads must be positive, got ", heads);
  VITUNE_CHECK(qkv.ndim() == 3 && qkv.dim(2) > 0 && qkv.dim(2) % (3 * int64_t(heads)) == 0, op,
               ": qkv must be [batch, tokens, 3 * dim] with dim divisible by heads = ", heads,
               ", got ", qkv.str());
  const int64_t dim = qkv.dim(2) / 3;
  return {qkv.dim(0), qkv.dim(1), dim, heads, dim / heads};
}

void check_attention_grads(const AttentionShape& s, const Tensor& dctx, const Tensor& qkv,
                           const Tensor& probs, const char* op) {
  VITUNE_CHECK(dctx.dtype() == qkv.dtype() && dctx.shape() == Shape({s.batch, s.tokens, s.dim}),
               op, ": dctx must be ", dtype_name(qkv.dtype()),
               shape_str({s.batch, s.tokens, s.dim}), " to match qkv ", qkv.str(), ", got ",
               dctx.str());
  const Shape probs_shape{s.batch, s.heads, s.tokens, s.tokens};
  VITUNE_CHECK(probs.dtype() == qkv.dtype() && probs.shape() == probs_shape, op,
               ": probs must be ", dtype_name(qkv.dtype()), shape_str(probs_shape),
               " to match qkv ", qkv.str(), " with ", s.heads, " heads, got ", probs.str());
}

void check_update_operands(const Tensor& value, const Tensor* indices, const Tensor& grad,
                           std::initializer_list<const Tensor*> state, const char* op,
                           DeviceCheck on_device) {
  on_device(value, op);
  on_device(grad, op);
  VITUNE_CHECK(value.dtype() == DType::F32 && grad.dtype() == DType::F32, op,
               ": expects f32 value and gradient, got ", value.str(), " and ", grad.str());
  const int64_t count = grad.numel();
  if (indices) {
    on_device(*indices, op);
    VITUNE_CHECK(indices->dtype() == DType::I64 && indices->numel() == count, op, ": indices ",
                 indices->str(), " do not match the gradient ", grad.str());
  } else {
    VITUNE_CHECK(value.numel() == count, op, ": gradient ", grad.str(), " does not match the value ",
                 value.str());
  }
  for (const Tensor* s : state) {
    on_device(*s, op);
    VITUNE_CHECK(s->dtype() == DType::F32 && s->numel() == count, op, ": state ", s->str(),
                 " does not match the gradient ", grad.str());
  }
}

}  // namespace vitune::op_checks
