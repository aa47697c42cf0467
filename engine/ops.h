// The backend-neutral op API. Each op here has one CPU definition in engine/cpu/ (the
// fp32/fp64 reference) and, in CUDA builds, one CUDA definition in engine/cuda/ with
// the same name; ops.cpp dispatches on the device of the first tensor argument.
//
// Conventions: tensors are dense row-major; float ops accept f32 and f64 (f64 exists
// for finite-difference checks) and all float arguments of one call share a dtype.
// "rows" of a tensor means its flattening to [numel / last_dim, last_dim].
// Outputs named `accumulate` are added to (+=), so gradients sum over uses.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace vitune::ops {

// ---- GEMM ---------------------------------------------------------------------------
// c = alpha * op(a) @ op(b) + beta * c with op(x) = x or x^T. a is [M,K] ([K,M] when
// trans_a), b is [K,N] ([N,K] when trans_b), c is [M,N]; leading dimensions beyond two
// are folded into the rows of a and c when b is 2-D and neither a nor c is transposed.
void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
          Tensor& c);
// The same for a stack: a [S,.,.], b [S,.,.], c [S,M,N], one product per leading index.
void gemm_batched(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                  double beta, Tensor& c);
// Plain triple loop with the same contract as gemm (2-D only): the test reference.
void gemm_reference(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                    double beta, Tensor& c);

// ---- Elementwise --------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);               // same shapes
Tensor mul(const Tensor& a, const Tensor& b);               // same shapes
Tensor scale(const Tensor& a, double factor);
void axpy(double alpha, const Tensor& x, Tensor& y);        // y += alpha * x
// x[r, :] += row for every row r of x (bias); row has x's last dimension.
void add_row_broadcast(Tensor& x, const Tensor& row);
// accumulate[j] += sum over rows r of x[r, j]   (bias gradient; rows summed in order)
void sum_rows_into(const Tensor& x, Tensor& accumulate);
// Sum and sum of squares of all elements, accumulated in double: blocks of 4096 in
// index order, then the block totals in order (independent of the thread count).
double sum_all(const Tensor& x);
double sum_squares(const Tensor& x);
// True when every element of a float tensor is finite.
bool all_finite(const Tensor& x);

// ---- Normalisation, activations -------------------------------------------------------
// y = (x - mean) * rstd * weight + bias per row, variance by two passes (no E[x^2]-m^2).
// mean and rstd ([rows], same dtype) are written for the backward.
Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& mean, Tensor& rstd);
// Any of dx, dweight, dbias may be null (not wanted). dx is written, dweight and dbias
// accumulate.
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, Tensor* dx, Tensor* dweight,
                         Tensor* dbias);

Tensor softmax_forward(const Tensor& x);                     // over the last dimension
Tensor softmax_backward(const Tensor& dy, const Tensor& y);  // y: the forward output

Tensor gelu_forward(const Tensor& x);                        // x * Phi(x), exact erf
Tensor gelu_backward(const Tensor& dy, const Tensor& x);

// ---- Attention ----------------------------------------------------------------------
// qkv is [B, N, 3*D] laid out as timm's fused projection: [B, N, 3, heads, D/heads].
// Returns ctx [B, N, D] = concat_h softmax(Q_h K_h^T / sqrt(d_h)) V_h, and writes the
// attention probabilities [B, heads, N, N] for the backward.
Tensor attention_forward(const Tensor& qkv, int heads, Tensor& probs);
Tensor attention_backward(const Tensor& dctx, const Tensor& qkv, const Tensor& probs, int heads);

// ---- Loss ---------------------------------------------------------------------------
// Mean over the batch of cross-entropy with label smoothing s: the target of row b is
// (1-s) * onehot(labels[b]) + s / C. logits [B, C] float, labels [B] i64 in [0, C).
// Writes softmax(logits) into probs for the backward. Returns the loss.
double cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                             Tensor& probs);
// d loss / d logits, times grad_scale (the gradient arriving at the loss).
Tensor cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                              double grad_scale);

// ---- Selection and indexing -----------------------------------------------------------
// The k largest entries of each row of a float tensor [R, C], in descending order;
// ties go to the lower column index; NaN entries are never selected (a row with fewer
// than k non-NaN entries fills the rest with index -1 and value NaN). values and
// indices are set to new tensors [R, k] (x's dtype and i64).
void topk_rows(const Tensor& x, int64_t k, Tensor& values, Tensor& indices);
// out[i] = x.flat[indices[i]]; indices i64, any shape; out has indices' shape.
Tensor gather(const Tensor& x, const Tensor& indices);
// x.flat[indices[i]] = values[i]  /  += values[i]   (indices i64, values like indices)
void scatter(Tensor& x, const Tensor& indices, const Tensor& values);
void scatter_add(Tensor& x, const Tensor& indices, const Tensor& values);

// ---- Sparse weight gradient -----------------------------------------------------------
// For a linear layer y = x W^T with x [T, in] and dy [T, out], and a sorted list of flat
// indices e = j*in + k into W [out, in]: accumulate[i] += sum_t dy[t, j] * x[t, k].
// Costs O(T * selected), never forming the dense [out, in] gradient.
void masked_weight_grad(const Tensor& dy, const Tensor& x, const Tensor& indices,
                        int64_t in_features, Tensor& accumulate);

// ---- Patches and tokens ---------------------------------------------------------------
// images [B, C, H, W] -> patches [B, (H/p)*(W/p), C*p*p]; each patch flattened in
// (channel, row, column) order, so a conv weight [D, C, p, p] viewed as [D, C*p*p]
// acts on it as a linear map.
Tensor patchify(const Tensor& images, int patch);
// The adjoint: scatters patch gradients back into an image-shaped tensor.
Tensor unpatchify(const Tensor& patches, const Shape& image_shape, int patch);

// token [1, 1, D] and x [B, N, D] -> [B, N+1, D] with the token first in every sequence.
Tensor prepend_token(const Tensor& token, const Tensor& x);
// x [B, N, D] -> [B, N-1, D] without the first token (the adjoint of prepend_token on x).
Tensor drop_first_token(const Tensor& x);
// x [B, N, D] -> [B, D], token `index` of every sequence.
Tensor select_token(const Tensor& x, int64_t index);
// The adjoint of select_token: y [B, D] placed at token `index` of zeros [B, N, D].
Tensor place_token(const Tensor& y, int64_t tokens, int64_t index);

}  // namespace vitune::ops
