// Every op of engine/op_signatures.inc on the GPU against the host, from the same seeded
// inputs, in f32 and f64 where the op is float: small shapes, ViT-sized shapes (197
// tokens, dim 768, 12 heads of 64) and each op's edge cases (empty tensors, every GEMM
// transpose, beta 0 and not, absent outputs, accumulation into pre-filled outputs,
// label smoothing, top-k ties and NaN, masked updates). Arguments the host refuses must
// be refused on the GPU too, leaving the arguments untouched.
#include <cmath>
#include <limits>
#include <string>

#include "engine/error.h"
#include "engine/ops.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaOps : public CudaTest {};

std::string label(const char* op, DType dtype, const Shape& shape, const std::string& detail = "") {
  return cat(op, " ", dtype_name(dtype), shape_str(shape), detail.empty() ? "" : " ", detail);
}

// ---- GEMM -------------------------------------------------------------------------------

// c (pre-filled) = 1.25 op(a) op(b) + beta c: beta 0 must ignore the old c, beta != 0 scale it.
void check_gemm(DType dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb, double beta, uint64_t stream) {
  Tensor a = uniform(ta ? Shape{k, m} : Shape{m, k}, dt, stream);
  Tensor b = uniform(tb ? Shape{n, k} : Shape{k, n}, dt, stream + 1);
  Tensor c = uniform({m, n}, dt, stream + 2);
  EXPECT_TRUE(gpu_matches_cpu(cat("gemm ", dtype_name(dt), " m ", m, " n ", n, " k ", k, ta ? " a^T" : "",
                                  tb ? " b^T" : "", " beta ", beta),
                              {a, b, c}, summed(k).of(dt), [=](OpArgs& x) {
                                ops::gemm(ta, tb, 1.25, x[0], x[1], beta, x[2]);
                                return OpOutputs();
                              }));
}

TEST_F(CudaOps, GemmEveryTransposeAndBetaAtSmallShapes) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (DType dt : kFloatTypes) {
    for (Mnk s : {Mnk{1, 1, 1}, Mnk{5, 7, 3}, Mnk{33, 17, 65}, Mnk{64, 64, 64}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (double beta : {0.0, 0.5}) check_gemm(dt, s.m, s.n, s.k, ta, tb, beta, 100);
        }
      }
    }
  }
}

// The products of a ViT-Base linear layer over 2 x 197 tokens: forward (x W^T), the
// input gradient (dy W) and the weight gradient (dy^T x), accumulated with beta 1.
TEST_F(CudaOps, GemmAtVitShapesEveryTranspose) {
  for (DType dt : kFloatTypes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) check_gemm(dt, 394, 768, 768, ta, tb, 1.0, 110);
    }
  }
}

// a [2, 197, 768] against a 2-D b: the leading dimensions fold into the rows (the qkv
// projection, b transposed as a weight [2304, 768], and b plain).
TEST_F(CudaOps, GemmFoldsLeadingDimensionsOfAAndC) {
  for (DType dt : kFloatTypes) {
    for (bool tb : {false, true}) {
      Tensor a = uniform({2, 197, 768}, dt, 120);
      Tensor b = uniform(tb ? Shape{2304, 768} : Shape{768, 2304}, dt, 121);
      Tensor c = uniform({2, 197, 2304}, dt, 122);
      EXPECT_TRUE(gpu_matches_cpu(label("gemm", dt, a.shape(), tb ? "b^T" : ""), {a, b, c}, summed(768).of(dt),
                                  [=](OpArgs& x) {
                                    ops::gemm(false, tb, 1.0, x[0], x[1], 0.0, x[2]);
                                    return OpOutputs();
                                  }));
    }
  }
}

// No rows (m = 0): nothing to compute, c stays empty. (n = 0 and k = 0 are not compared:
// the host gemm divides by the last dimensions of a and c, so it cannot serve as the
// reference there.)
TEST_F(CudaOps, GemmWithNoRows) {
  for (DType dt : kFloatTypes) {
    for (double beta : {0.0, 0.5}) {
      for (bool tb : {false, true}) check_gemm(dt, 0, 5, 4, false, tb, beta, 130);
    }
  }
}

void check_gemm_batched(DType dt, int64_t s, int64_t m, int64_t n, int64_t k, bool ta, bool tb, double beta,
                        uint64_t stream) {
  Tensor a = uniform(ta ? Shape{s, k, m} : Shape{s, m, k}, dt, stream);
  Tensor b = uniform(tb ? Shape{s, n, k} : Shape{s, k, n}, dt, stream + 1);
  Tensor c = uniform({s, m, n}, dt, stream + 2);
  EXPECT_TRUE(gpu_matches_cpu(cat("gemm_batched ", dtype_name(dt), " stack ", s, " m ", m, " n ", n, " k ", k,
                                  ta ? " a^T" : "", tb ? " b^T" : "", " beta ", beta),
                              {a, b, c}, summed(k).of(dt), [=](OpArgs& x) {
                                ops::gemm_batched(ta, tb, 0.75, x[0], x[1], beta, x[2]);
                                return OpOutputs();
                              }));
}

TEST_F(CudaOps, GemmBatchedEveryTransposeAndBeta) {
  for (DType dt : kFloatTypes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (double beta : {0.0, 0.5}) {
          check_gemm_batched(dt, 3, 4, 5, 6, ta, tb, beta, 140);
          check_gemm_batched(dt, 2, 1, 1, 1, ta, tb, beta, 140);
          check_gemm_batched(dt, 5, 17, 9, 33, ta, tb, beta, 140);
        }
      }
    }
  }
}

// The products of attention over 2 x 12 heads, 197 tokens, head dim 64: scores Q K^T,
// context P V, and the backward's P^T dO, dO V^T, dS K and dS^T Q.
TEST_F(CudaOps, GemmBatchedAtAttentionShapes) {
  for (DType dt : kFloatTypes) {
    check_gemm_batched(dt, 24, 197, 197, 64, false, true, 0.0, 150);
    check_gemm_batched(dt, 24, 197, 64, 197, false, false, 0.0, 150);
    check_gemm_batched(dt, 24, 197, 64, 197, true, false, 1.0, 150);
    check_gemm_batched(dt, 24, 197, 197, 64, false, true, 1.0, 150);
  }
}

TEST_F(CudaOps, GemmBatchedWithAnEmptyStackOrEmptyRows) {
  for (DType dt : kFloatTypes) {
    check_gemm_batched(dt, 0, 4, 5, 6, false, false, 0.5, 160);
    check_gemm_batched(dt, 2, 0, 5, 6, false, true, 0.5, 160);
  }
}

// ---- Elementwise and reductions ----------------------------------------------------------

const Shape kElementShapes[] = {{100003}, {2, 197, 768}, {0, 5}, {1}};

TEST_F(CudaOps, AddMulScaleAndAxpy) {
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : kElementShapes) {
      Tensor a = uniform(shape, dt, 200), b = uniform(shape, dt, 201);
      const Tolerance tol = kElementwise.of(dt);
      EXPECT_TRUE(gpu_matches_cpu(label("add", dt, shape), {a, b}, tol,
                                  [](OpArgs& x) { return OpOutputs().tensor("sum", ops::add(x[0], x[1])); }));
      EXPECT_TRUE(gpu_matches_cpu(label("mul", dt, shape), {a, b}, tol,
                                  [](OpArgs& x) { return OpOutputs().tensor("product", ops::mul(x[0], x[1])); }));
      EXPECT_TRUE(gpu_matches_cpu(label("scale", dt, shape), {a}, tol,
                                  [](OpArgs& x) { return OpOutputs().tensor("scaled", ops::scale(x[0], -0.75)); }));
      // y = b is pre-filled: axpy adds to it.
      EXPECT_TRUE(gpu_matches_cpu(label("axpy", dt, shape), {a, b}, tol, [](OpArgs& x) {
        ops::axpy(0.5, x[0], x[1]);
        return OpOutputs();
      }));
    }
  }
}

TEST_F(CudaOps, AddRowBroadcast) {
  const Shape shapes[] = {{2, 197, 768}, {7, 1}, {0, 3}, {5}, {3, 1000, 3}};
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : shapes) {
      Tensor x = uniform(shape, dt, 210), row = uniform({shape.back()}, dt, 211);
      EXPECT_TRUE(gpu_matches_cpu(label("add_row_broadcast", dt, shape), {x, row}, kElementwise.of(dt),
                                  [](OpArgs& a) {
                                    ops::add_row_broadcast(a[0], a[1]);
                                    return OpOutputs();
                                  }));
    }
  }
}

// A linear layer's forward product with its bias, at a ViT-B shape and a small one.
TEST_F(CudaOps, LinearForward) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (DType dt : kFloatTypes) {
    for (Mnk s : {Mnk{5, 7, 3}, Mnk{394, 768, 768}}) {
      Tensor x = uniform({s.m, s.k}, dt, 212), w = uniform({s.n, s.k}, dt, 213), bias = uniform({s.n}, dt, 214);
      Tensor y = uniform({s.m, s.n}, dt, 215);
      EXPECT_TRUE(gpu_matches_cpu(cat("linear_forward ", dtype_name(dt), " m ", s.m, " n ", s.n, " k ", s.k),
                                  {x, w, bias, y}, summed(s.k).of(dt), [](OpArgs& a) {
                                    ops::linear_forward(a[0], a[1], a[2], a[3]);
                                    return OpOutputs();
                                  }));
    }
  }
}

// The accumulator starts non-zero: sum_rows_into adds to it.
TEST_F(CudaOps, SumRowsIntoAccumulates) {
  const Shape shapes[] = {{394, 768}, {2, 197, 768}, {100000, 3}, {0, 4}, {5}, {3, 0}, {70000, 1}};
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : shapes) {
      Tensor x = uniform(shape, dt, 220), accumulate = uniform({shape.back()}, dt, 221);
      const int64_t rows = shape.back() == 0 ? 0 : shape_numel(shape) / shape.back();
      EXPECT_TRUE(gpu_matches_cpu(label("sum_rows_into", dt, shape), {x, accumulate}, summed(rows).of(dt),
                                  [](OpArgs& a) {
                                    ops::sum_rows_into(a[0], a[1]);
                                    return OpOutputs();
                                  }));
    }
  }
}

TEST_F(CudaOps, SumAllAndSumSquares) {
  const Shape shapes[] = {{0}, {1}, {4095}, {4096}, {4097}, {1000003}, {2, 197, 768}};
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : shapes) {
      Tensor x = uniform(shape, dt, 230);
      EXPECT_TRUE(gpu_matches_cpu(label("sum_all / sum_squares", dt, shape), {x}, summed(shape_numel(shape)).of(dt),
                                  [](OpArgs& a) {
                                    return OpOutputs()
                                        .scalar("sum", ops::sum_all(a[0]))
                                        .scalar("sum of squares", ops::sum_squares(a[0]));
                                  }));
    }
  }
}

TEST_F(CudaOps, AllFiniteFindsNanAndInfinityAnywhere) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Special {
    int64_t index;
    double value;
  };
  const Special specials[] = {{-1, 0}, {100002, std::nan("")}, {0, inf}, {50001, -inf}, {4096, std::nan("")}};
  for (DType dt : kFloatTypes) {
    for (Special s : specials) {
      Tensor x = uniform({100003}, dt, 240);
      if (s.index >= 0) set_element(x, s.index, s.value);
      EXPECT_TRUE(gpu_matches_cpu(label("all_finite", dt, x.shape(), cat("special at ", s.index)), {x}, kExact,
                                  [](OpArgs& a) { return OpOutputs().scalar("finite", ops::all_finite(a[0])); }));
    }
    EXPECT_TRUE(gpu_matches_cpu(label("all_finite", dt, {0}), {uniform({0}, dt, 241)}, kExact,
                                [](OpArgs& a) { return OpOutputs().scalar("finite", ops::all_finite(a[0])); }));
  }
}

// ---- Layer norm ---------------------------------------------------------------------------

TEST_F(CudaOps, LayerNormForward) {
  struct Case {
    Shape shape;
    double eps, low, high;
  };
  // {6, 768} sits far from zero: the variance must come from two passes.
  const Case cases[] = {{{2, 197, 768}, 1e-6, -1, 1},
                        {{3, 5}, 1e-5, -1, 1},
                        {{4, 1}, 1e-6, -1, 1},
                        {{6, 768}, 1e-12, 99, 101},
                        {{0, 8}, 1e-6, -1, 1}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      const int64_t features = c.shape.back();
      Tensor x = uniform(c.shape, dt, 300, c.low, c.high);
      Tensor weight = uniform({features}, dt, 301, 0.5, 1.5), bias = uniform({features}, dt, 302);
      const double eps = c.eps;
      EXPECT_TRUE(gpu_matches_cpu(label("layer_norm_forward", dt, c.shape), {x, weight, bias, Tensor(), Tensor()},
                                  summed(features).of(dt), [eps](OpArgs& a) {
                                    Tensor y = ops::layer_norm_forward(a[0], a[1], a[2], eps, a[3], a[4]);
                                    return OpOutputs().tensor("y", y);
                                  }));
    }
  }
}

// dx is written (allocated when undefined), dweight and dbias accumulate into
// pre-filled tensors, and any of the three may be absent.
TEST_F(CudaOps, LayerNormBackwardWithEveryCombinationOfOutputs) {
  struct Wanted {
    bool dx, dx_defined, dweight, dbias;
  };
  const Wanted combinations[] = {{true, false, true, true},  {true, true, true, true},  {true, false, false, true},
                                 {true, false, true, false}, {true, true, false, false}, {false, false, true, true}};
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : {Shape{2, 197, 768}, Shape{3, 5}}) {
      const int64_t features = shape.back(), rows = shape_numel(shape) / features;
      Tensor x = uniform(shape, dt, 310), weight = uniform({features}, dt, 311, 0.5, 1.5);
      Tensor mean, rstd;
      ops::layer_norm_forward(x, weight, uniform({features}, dt, 312), 1e-6, mean, rstd);
      Tensor dy = uniform(shape, dt, 313), dx = uniform(shape, dt, 314);
      Tensor dweight = uniform({features}, dt, 315), dbias = uniform({features}, dt, 316);
      for (Wanted w : combinations) {
        EXPECT_TRUE(gpu_matches_cpu(
            label("layer_norm_backward", dt, shape,
                  cat("dx ", w.dx ? (w.dx_defined ? "written" : "allocated") : "absent", ", dweight ",
                      w.dweight ? "wanted" : "absent", ", dbias ", w.dbias ? "wanted" : "absent")),
            {dy, x, weight, mean, rstd, w.dx_defined ? dx : Tensor(), dweight, dbias},
            summed(std::max(rows, features)).of(dt), [w](OpArgs& a) {
              ops::layer_norm_backward(a[0], a[1], a[2], a[3], a[4], w.dx ? &a[5] : nullptr,
                                       w.dweight ? &a[6] : nullptr, w.dbias ? &a[7] : nullptr);
              return OpOutputs();
            }));
      }
    }
  }
}

// ---- Softmax and GELU -----------------------------------------------------------------------

TEST_F(CudaOps, SoftmaxForwardAndBackward) {
  const Shape shapes[] = {{2, 12, 197, 197}, {5, 7}, {3, 1}, {4, 1000}};
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : shapes) {
      const int64_t features = shape.back();
      Tensor x = uniform(shape, dt, 400, -4, 4);
      // One logit of 100 per row of the wide case: exp overflows f32 unless the row's
      // maximum is subtracted first.
      if (features == 1000) {
        for (int64_t r = 0; r < shape[0]; ++r) set_element(x, r * features + (r * 37) % features, 100.0);
      }
      EXPECT_TRUE(gpu_matches_cpu(label("softmax_forward", dt, shape), {x}, kTranscendental.of(dt),
                                  [](OpArgs& a) { return OpOutputs().tensor("y", ops::softmax_forward(a[0])); }));
      Tensor y = ops::softmax_forward(x), dy = uniform(shape, dt, 401);
      EXPECT_TRUE(gpu_matches_cpu(label("softmax_backward", dt, shape), {dy, y}, summed(features).of(dt),
                                  [](OpArgs& a) { return OpOutputs().tensor("dx", ops::softmax_backward(a[0], a[1])); }));
    }
  }
}

TEST_F(CudaOps, GeluAndQuickGeluForwardAndBackward) {
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : {Shape{100003}, Shape{2, 197, 3072}, Shape{0}}) {
      Tensor x = uniform(shape, dt, 410, -6, 6);
      if (shape_numel(shape) > 6) {
        const double special[] = {0.0, -10.0, 10.0, -30.0, 30.0, 1e-8};
        for (int i = 0; i < 6; ++i) set_element(x, i, special[i]);
      }
      Tensor dy = uniform(shape, dt, 411);
      EXPECT_TRUE(gpu_matches_cpu(label("gelu_forward", dt, shape), {x}, kTranscendental.of(dt),
                                  [](OpArgs& a) { return OpOutputs().tensor("y", ops::gelu_forward(a[0])); }));
      EXPECT_TRUE(gpu_matches_cpu(label("gelu_backward", dt, shape), {dy, x}, kTranscendental.of(dt),
                                  [](OpArgs& a) { return OpOutputs().tensor("dx", ops::gelu_backward(a[0], a[1])); }));
      EXPECT_TRUE(gpu_matches_cpu(label("quick_gelu_forward", dt, shape), {x}, kTranscendental.of(dt),
                                  [](OpArgs& a) { return OpOutputs().tensor("y", ops::quick_gelu_forward(a[0])); }));
      EXPECT_TRUE(gpu_matches_cpu(
          label("quick_gelu_backward", dt, shape), {dy, x}, kTranscendental.of(dt),
          [](OpArgs& a) { return OpOutputs().tensor("dx", ops::quick_gelu_backward(a[0], a[1])); }));
    }
  }
}

// ---- Attention ------------------------------------------------------------------------------

TEST_F(CudaOps, AttentionForwardAndBackward) {
  struct Case {
    int64_t batch, tokens;
    int heads;
    int64_t head_dim;
  };
  // Every product is one call over all (item, head) blocks: through arrays of block
  // addresses (several items and heads), or one stride (one item; one head).
  const Case cases[] = {{2, 197, 12, 64}, {1, 5, 2, 3}, {3, 1, 4, 1}, {2, 17, 3, 8}, {4, 9, 1, 16}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      const int heads = c.heads;
      const int64_t dim = c.heads * c.head_dim;
      Tensor qkv = uniform({c.batch, c.tokens, 3 * dim}, dt, 500);
      const Tolerance tol = summed(c.tokens + c.head_dim).of(dt);
      EXPECT_TRUE(gpu_matches_cpu(label("attention_forward", dt, qkv.shape(), cat(heads, " heads")), {qkv, Tensor()},
                                  tol, [heads](OpArgs& a) {
                                    return OpOutputs().tensor("ctx", ops::attention_forward(a[0], heads, a[1]));
                                  }));
      Tensor probs;
      ops::attention_forward(qkv, heads, probs);
      Tensor dctx = uniform({c.batch, c.tokens, dim}, dt, 501);
      EXPECT_TRUE(gpu_matches_cpu(label("attention_backward", dt, qkv.shape(), cat(heads, " heads")),
                                  {dctx, qkv, probs}, tol, [heads](OpArgs& a) {
                                    return OpOutputs().tensor("dqkv", ops::attention_backward(a[0], a[1], a[2], heads));
                                  }));
    }
  }
}

// The backward takes the items in chunks whose [items, heads, N, N] scratch fits 256 MiB:
// here 54 items of 2 x 768 x 768 f32, so 55 items make a full chunk and a chunk of one.
TEST_F(CudaOps, AttentionBackwardAcrossScratchChunks) {
  const int heads = 2;
  const int64_t batch = 55, tokens = 768, dim = 16;
  Tensor qkv = uniform({batch, tokens, 3 * dim}, DType::F32, 505);
  Tensor probs;
  ops::attention_forward(qkv, heads, probs);
  Tensor dctx = uniform({batch, tokens, dim}, DType::F32, 506);
  EXPECT_TRUE(gpu_matches_cpu(label("attention_backward", DType::F32, qkv.shape(), "2 heads, two chunks"),
                              {dctx, qkv, probs}, summed(tokens).f32, [heads](OpArgs& a) {
                                return OpOutputs().tensor("dqkv", ops::attention_backward(a[0], a[1], a[2], heads));
                              }));
}

// ---- Cross-entropy ----------------------------------------------------------------------------

Tensor cycling_labels(int64_t batch, int64_t classes) {
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) labels[size_t(b)] = (b * 7 + 3) % classes;
  return index_tensor(labels);
}

TEST_F(CudaOps, CrossEntropyWithAndWithoutSmoothing) {
  struct Case {
    int64_t batch, classes;
    double scale;
  };
  const Case cases[] = {{8, 10, 1}, {64, 1000, 5}, {1, 1, 1}, {3, 2, 20}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      Tensor logits = uniform({c.batch, c.classes}, dt, 600, -c.scale, c.scale);
      Tensor labels = cycling_labels(c.batch, c.classes);
      Tensor probs;
      for (double smoothing : {0.0, 0.1, 1.0}) {
        EXPECT_TRUE(gpu_matches_cpu(label("cross_entropy_forward", dt, logits.shape(), cat("smoothing ", smoothing)),
                                    {logits, labels, Tensor()}, summed(c.classes).of(dt), [smoothing](OpArgs& a) {
                                      return OpOutputs().scalar(
                                          "loss", ops::cross_entropy_forward(a[0], a[1], smoothing, a[2]));
                                    }));
        ops::cross_entropy_forward(logits, labels, smoothing, probs);
        EXPECT_TRUE(gpu_matches_cpu(label("cross_entropy_backward", dt, logits.shape(), cat("smoothing ", smoothing)),
                                    {probs, labels}, kTranscendental.of(dt), [smoothing](OpArgs& a) {
                                      return OpOutputs().tensor(
                                          "dlogits", ops::cross_entropy_backward(a[0], a[1], smoothing, 0.5));
                                    }));
      }
    }
  }
}

TEST_F(CudaOps, CrossEntropyRefusesBadLabelsAndSmoothing) {
  Tensor logits = uniform({3, 4}, DType::F32, 610);
  for (int64_t bad : {int64_t(4), int64_t(-1)}) {
    Tensor labels = index_tensor({0, bad, 2});
    EXPECT_TRUE(both_refuse(cat("cross_entropy_forward with label ", bad), {logits, labels, Tensor()},
                            [](OpArgs& a) {
                              return OpOutputs().scalar("loss", ops::cross_entropy_forward(a[0], a[1], 0, a[2]));
                            }));
    EXPECT_TRUE(both_refuse(cat("cross_entropy_backward with label ", bad), {logits, labels}, [](OpArgs& a) {
      return OpOutputs().tensor("d", ops::cross_entropy_backward(a[0], a[1], 0, 1));
    }));
  }
  EXPECT_TRUE(both_refuse("cross_entropy_forward with smoothing 1.5", {logits, index_tensor({0, 1, 2}), Tensor()},
                          [](OpArgs& a) {
                            return OpOutputs().scalar("loss", ops::cross_entropy_forward(a[0], a[1], 1.5, a[2]));
                          }));
}

// ---- Top-k, gather, scatter ----------------------------------------------------------------------

OpBody topk_body(int64_t k) {
  return [k](OpArgs& a) {
    ops::topk_rows(a[0], k, a[1], a[2]);
    return OpOutputs();
  };
}

TEST_F(CudaOps, TopkOfRandomRows) {
  struct Case {
    Shape shape;
    int64_t k;
  };
  // {768, 3072} with k 30: the selection of GD-FPS on a ViT-Base fc1 weight.
  const Case cases[] = {{{7, 50}, 0},       {{7, 50}, 1},     {{7, 50}, 5},    {{7, 50}, 50},
                        {{768, 3072}, 30}, {{3, 100000}, 7}, {{0, 5}, 3},     {{4, 0}, 0},
                        {{2, 3000}, 3000}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      EXPECT_TRUE(gpu_matches_cpu(label("topk_rows", dt, c.shape, cat("k ", c.k)),
                                  {uniform(c.shape, dt, 700), Tensor(), Tensor()}, kExact, topk_body(c.k)));
    }
  }
}

// Values from a few levels (many ties: lower column first), NaN (never selected; short
// rows padded with -1 / NaN), +inf and -inf (selectable); row 0 all NaN, row 1 with two
// numbers only.
TEST_F(CudaOps, TopkWithTiesNanAndInfinity) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const int64_t rows = 9, cols = 40;
  for (DType dt : kFloatTypes) {
    Tensor x = uniform({rows, cols}, dt, 710, -2, 2);
    for (int64_t i = 0; i < rows * cols; ++i) {
      double v = std::floor(x.item(i));
      if (i % 7 == 3) v = nan;
      if (i % 11 == 5) v = inf;
      if (i % 13 == 6) v = -inf;
      if (i < cols) v = nan;
      if (i >= cols && i < 2 * cols && i != cols + 4 && i != cols + 9) v = nan;
      set_element(x, i, v);
    }
    for (int64_t k : {1, 3, 10, 40}) {
      EXPECT_TRUE(gpu_matches_cpu(label("topk_rows", dt, x.shape(), cat("ties, NaN, inf, k ", k)), {x, Tensor(), Tensor()},
                                  kExact, topk_body(k)));
    }
  }
}

TEST_F(CudaOps, TopkRefusesKOutsideTheColumns) {
  Tensor x = uniform({7, 50}, DType::F32, 720);
  for (int64_t k : {int64_t(51), int64_t(-1)}) {
    EXPECT_TRUE(both_refuse(cat("topk_rows k ", k, " of 50 columns"), {x, Tensor(), Tensor()}, topk_body(k)));
  }
}

Tensor integer_tensor(DType dtype, int64_t n) {
  Tensor t({n}, dtype, Device::cpu());
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::I64) t.data<int64_t>()[i] = i * 1000003 - 5;
    if (dtype == DType::I32) t.data<int32_t>()[i] = int32_t(i * 7 - 3);
    if (dtype == DType::U8) t.data<uint8_t>()[i] = uint8_t(i * 13);
  }
  return t;
}

// gather, gather_columns and scatter move elements of any dtype.
TEST_F(CudaOps, GatherAndScatterMoveAnyDtype) {
  std::vector<int64_t> spread;
  for (int64_t i = 0; i < 21; ++i) spread.push_back((i * 37 + 5) % 1000);
  Tensor grid_indices = index_tensor(spread).reshape({3, 7});
  Tensor repeated = index_tensor({0, 999, 5, 5, 0});
  Tensor unique = sorted_selection(1000, 0.2, 730);
  const int64_t count = unique.numel();
  Tensor columns = index_tensor({499, 0, 7, 7, 250});
  for (DType dt : {DType::F32, DType::F64, DType::I64, DType::I32, DType::U8}) {
    const bool is_float = dt == DType::F32 || dt == DType::F64;
    Tensor x = is_float ? uniform({1000}, dt, 731) : integer_tensor(dt, 1000);
    EXPECT_TRUE(gpu_matches_cpu(label("gather_columns", dt, columns.shape()), {x.reshape({2, 500}), columns}, kExact,
                                [](OpArgs& a) { return OpOutputs().tensor("out", ops::gather_columns(a[0], a[1])); }));
    Tensor values = is_float ? uniform({count}, dt, 732) : integer_tensor(dt, count);
    for (const Tensor& indices : {grid_indices, repeated, index_tensor({})}) {
      EXPECT_TRUE(gpu_matches_cpu(label("gather", dt, indices.shape()), {x, indices}, kExact, [](OpArgs& a) {
        return OpOutputs().tensor("out", ops::gather(a[0], a[1]));
      }));
    }
    EXPECT_TRUE(gpu_matches_cpu(label("scatter", dt, unique.shape()), {x, unique, values}, kExact, [](OpArgs& a) {
      ops::scatter(a[0], a[1], a[2]);
      return OpOutputs();
    }));
  }
}

// As on the host: with a repeated index, the value latest in the list wins.
TEST_F(CudaOps, ScatterWithRepeatedIndicesKeepsTheLastValue) {
  for (DType dt : kFloatTypes) {
    Tensor x = uniform({12}, dt, 740);
    Tensor indices = index_tensor({3, 7, 3, 3, 9, 7});
    Tensor values = uniform({6}, dt, 741);
    EXPECT_TRUE(gpu_matches_cpu(label("scatter", dt, indices.shape(), "repeated indices"), {x, indices, values}, kExact,
                                [](OpArgs& a) {
                                  ops::scatter(a[0], a[1], a[2]);
                                  return OpOutputs();
                                }));
  }
}

TEST_F(CudaOps, ScatterAddAccumulatesRepeatedIndices) {
  std::vector<int64_t> wrapped;
  for (int64_t i = 0; i < 3000; ++i) wrapped.push_back(i * 13 % 1000);
  for (DType dt : kFloatTypes) {
    Tensor x = uniform({1000}, dt, 750);
    Tensor indices = index_tensor(wrapped), values = uniform({3000}, dt, 751);
    EXPECT_TRUE(gpu_matches_cpu(label("scatter_add", dt, indices.shape()), {x, indices, values}, summed(4).of(dt),
                                [](OpArgs& a) {
                                  ops::scatter_add(a[0], a[1], a[2]);
                                  return OpOutputs();
                                }));
  }
}

// A bad index anywhere in the list is refused before anything is written.
TEST_F(CudaOps, IndexOpsRefuseOutOfRangeIndicesAndLeaveXUntouched) {
  Tensor x = uniform({100}, DType::F32, 760), values = uniform({4}, DType::F32, 761);
  for (int64_t bad : {int64_t(100), int64_t(-1)}) {
    Tensor indices = index_tensor({1, 2, 3, bad});
    EXPECT_TRUE(both_refuse(cat("gather index ", bad), {x, indices},
                            [](OpArgs& a) { return OpOutputs().tensor("out", ops::gather(a[0], a[1])); }));
    EXPECT_TRUE(both_refuse(cat("gather_columns column ", bad), {x.reshape({1, 100}), indices},
                            [](OpArgs& a) { return OpOutputs().tensor("out", ops::gather_columns(a[0], a[1])); }));
    EXPECT_TRUE(both_refuse(cat("scatter index ", bad), {x, indices, values}, [](OpArgs& a) {
      ops::scatter(a[0], a[1], a[2]);
      return OpOutputs();
    }));
    EXPECT_TRUE(both_refuse(cat("scatter_add index ", bad), {x, indices, values}, [](OpArgs& a) {
      ops::scatter_add(a[0], a[1], a[2]);
      return OpOutputs();
    }));
  }
}

// ---- Masked weight gradient --------------------------------------------------------------------

TEST_F(CudaOps, MaskedWeightGradAccumulatesAtSelectedEntries) {
  struct Case {
    Shape dy, x;
    double fraction;
  };
  // The fc1 weight of ViT-Base over 2 x 197 tokens at 1% of its entries; every entry of
  // a tiny layer; more tokens than one chunk of the host kernel; nothing selected; no tokens.
  const Case cases[] = {{{2, 197, 3072}, {2, 197, 768}, 0.01},
                        {{5, 3}, {5, 4}, 1.0},
                        {{300, 10}, {300, 7}, 0.5},
                        {{6, 10}, {6, 7}, 0.0},
                        {{0, 10}, {0, 7}, 0.5}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      const int64_t in = c.x.back(), out = c.dy.back(), tokens = shape_numel(c.x) / in;
      Tensor indices = sorted_selection(out * in, c.fraction, 800);
      Tensor dy = uniform(c.dy, dt, 801), x = uniform(c.x, dt, 802);
      Tensor accumulate = uniform({indices.numel()}, dt, 803);
      EXPECT_TRUE(gpu_matches_cpu(label("masked_weight_grad", dt, c.dy, cat(indices.numel(), " entries")),
                                  {dy, x, indices, accumulate}, summed(tokens).of(dt), [in](OpArgs& a) {
                                    ops::masked_weight_grad(a[0], a[1], a[2], in, a[3]);
                                    return OpOutputs();
                                  }));
    }
  }
}

TEST_F(CudaOps, MaskedWeightGradRefusesUnsortedOrOutOfRangeIndices) {
  Tensor dy = uniform({5, 3}, DType::F32, 810), x = uniform({5, 4}, DType::F32, 811);
  Tensor accumulate = uniform({2}, DType::F32, 812);
  for (const Tensor& indices : {index_tensor({5, 3}), index_tensor({4, 4}), index_tensor({0, 12}), index_tensor({-1, 2})}) {
    EXPECT_TRUE(both_refuse(cat("masked_weight_grad indices ", indices.item(0), ", ", indices.item(1)),
                            {dy, x, indices, accumulate}, [](OpArgs& a) {
                              ops::masked_weight_grad(a[0], a[1], a[2], 4, a[3]);
                              return OpOutputs();
                            }));
  }
}

// ---- Patches and tokens ----------------------------------------------------------------------------

TEST_F(CudaOps, PatchifyAndUnpatchify) {
  struct Case {
    Shape images;
    int patch;
  };
  const Case cases[] = {{{2, 3, 224, 224}, 16}, {{1, 2, 8, 12}, 4}, {{3, 1, 4, 4}, 4}, {{0, 3, 8, 8}, 4}};
  for (DType dt : kFloatTypes) {
    for (const Case& c : cases) {
      const int p = c.patch;
      const Shape image_shape = c.images;
      Tensor images = uniform(image_shape, dt, 900);
      EXPECT_TRUE(gpu_matches_cpu(label("patchify", dt, image_shape), {images}, kExact,
                                  [p](OpArgs& a) { return OpOutputs().tensor("patches", ops::patchify(a[0], p)); }));
      const int64_t grid = (image_shape[2] / p) * (image_shape[3] / p);
      Tensor patches = uniform({image_shape[0], grid, image_shape[1] * p * p}, dt, 901);
      EXPECT_TRUE(gpu_matches_cpu(label("unpatchify", dt, patches.shape()), {patches}, kExact, [p, image_shape](OpArgs& a) {
        return OpOutputs().tensor("images", ops::unpatchify(a[0], image_shape, p));
      }));
    }
  }
}

TEST_F(CudaOps, TokenOps) {
  for (DType dt : kFloatTypes) {
    for (int64_t dim : {int64_t(768), int64_t(4)}) {
      Tensor token = uniform({1, 1, dim}, dt, 910), patches = uniform({2, 196, dim}, dt, 911);
      Tensor sequence = uniform({2, 197, dim}, dt, 912), cls = uniform({2, dim}, dt, 913);
      EXPECT_TRUE(gpu_matches_cpu(label("prepend_token", dt, patches.shape()), {token, patches}, kExact,
                                  [](OpArgs& a) { return OpOutputs().tensor("out", ops::prepend_token(a[0], a[1])); }));
      EXPECT_TRUE(gpu_matches_cpu(label("drop_first_token", dt, sequence.shape()), {sequence}, kExact,
                                  [](OpArgs& a) { return OpOutputs().tensor("out", ops::drop_first_token(a[0])); }));
      for (int64_t index : {int64_t(0), int64_t(196)}) {
        EXPECT_TRUE(gpu_matches_cpu(label("select_token", dt, sequence.shape(), cat("token ", index)), {sequence},
                                    kExact, [index](OpArgs& a) {
                                      return OpOutputs().tensor("out", ops::select_token(a[0], index));
                                    }));
        EXPECT_TRUE(gpu_matches_cpu(label("place_token", dt, cls.shape(), cat("token ", index)), {cls}, kExact,
                                    [index](OpArgs& a) {
                                      return OpOutputs().tensor("out", ops::place_token(a[0], 197, index));
                                    }));
      }
    }
    // One token per sequence: dropping it leaves empty sequences.
    EXPECT_TRUE(gpu_matches_cpu(label("drop_first_token", dt, {3, 1, 4}), {uniform({3, 1, 4}, dt, 914)}, kExact,
                                [](OpArgs& a) { return OpOutputs().tensor("out", ops::drop_first_token(a[0])); }));
  }
}

// ---- Optimizer updates -------------------------------------------------------------------------------

TEST_F(CudaOps, SgdUpdateDenseAndMaskedWithEveryMomentumMode) {
  const int64_t n = 3000;
  Tensor value = uniform({n}, DType::F32, 1000);
  Tensor selection = sorted_selection(n, 0.3, 1001);
  for (bool masked : {false, true}) {
    const int64_t count = masked ? selection.numel() : n;
    Tensor grad = uniform({count}, DType::F32, 1002), buffer = uniform({count}, DType::F32, 1003);
    struct Mode {
      bool buffer, first, nesterov;
    };
    for (Mode m : {Mode{false, false, false}, Mode{true, true, false}, Mode{true, false, false}, Mode{true, true, true},
                   Mode{true, false, true}}) {
      SgdUpdate u;
      u.lr = 0.05f;
      u.momentum = m.buffer ? 0.9f : 0.0f;
      u.weight_decay = 1e-4f;
      u.nesterov = m.nesterov;
      u.first = m.first;
      EXPECT_TRUE(gpu_matches_cpu(
          cat("sgd_update ", masked ? "masked" : "dense", m.buffer ? " momentum" : " plain", m.first ? " first" : "",
              m.nesterov ? " nesterov" : ""),
          {value, masked ? selection : Tensor(), grad, m.buffer ? buffer : Tensor()}, kElementwise.f32,
          [masked, m, u](OpArgs& a) {
            ops::sgd_update(a[0], masked ? &a[1] : nullptr, a[2], m.buffer ? &a[3] : nullptr, u);
            return OpOutputs();
          }));
    }
  }
}

TEST_F(CudaOps, AdamWUpdateDenseAndMasked) {
  const int64_t n = 3000;
  Tensor value = uniform({n}, DType::F32, 1010);
  Tensor selection = sorted_selection(n, 0.3, 1011);
  for (bool masked : {false, true}) {
    const int64_t count = masked ? selection.numel() : n;
    Tensor grad = uniform({count}, DType::F32, 1012);
    Tensor m = uniform({count}, DType::F32, 1013, -0.1, 0.1), v = uniform({count}, DType::F32, 1014, 0, 0.01);
    for (int64_t step : {int64_t(1), int64_t(7)}) {
      const AdamWUpdate u = adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.05, step);
      EXPECT_TRUE(gpu_matches_cpu(cat("adamw_update ", masked ? "masked" : "dense", " step ", step),
                                  {value, masked ? selection : Tensor(), grad, m, v}, kTranscendental.f32,
                                  [masked, u](OpArgs& a) {
                                    ops::adamw_update(a[0], masked ? &a[1] : nullptr, a[2], a[3], a[4], u);
                                    return OpOutputs();
                                  }));
    }
  }
}

TEST_F(CudaOps, OptimizerUpdatesRefuseMismatchedOperands) {
  Tensor value = uniform({10}, DType::F32, 1020), grad = uniform({4}, DType::F32, 1021);
  Tensor state = uniform({4}, DType::F32, 1022), short_state = uniform({3}, DType::F32, 1023);
  Tensor indices = index_tensor({1, 3, 5, 7}), too_few = index_tensor({1, 3, 5});
  const SgdUpdate sgd{0.1f, 0.9f, 0.0f, false, false};
  EXPECT_TRUE(both_refuse("sgd_update with 3 indices for 4 gradients", {value, too_few, grad}, [sgd](OpArgs& a) {
    ops::sgd_update(a[0], &a[1], a[2], nullptr, sgd);
    return OpOutputs();
  }));
  EXPECT_TRUE(both_refuse("dense sgd_update with 4 gradients for 10 values", {value, grad}, [sgd](OpArgs& a) {
    ops::sgd_update(a[0], nullptr, a[1], nullptr, sgd);
    return OpOutputs();
  }));
  EXPECT_TRUE(both_refuse("sgd_update with a momentum buffer of 3", {value, indices, grad, short_state},
                          [sgd](OpArgs& a) {
                            ops::sgd_update(a[0], &a[1], a[2], &a[3], sgd);
                            return OpOutputs();
                          }));
  const AdamWUpdate adamw = adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.0, 1);
  EXPECT_TRUE(both_refuse("adamw_update with a second moment of 3", {value, indices, grad, state, short_state},
                          [adamw](OpArgs& a) {
                            ops::adamw_update(a[0], &a[1], a[2], a[3], a[4], adamw);
                            return OpOutputs();
                          }));
  EXPECT_TRUE(both_refuse("adamw_update of an f64 value", {uniform({4}, DType::F64, 1024), grad, state, state},
                          [adamw](OpArgs& a) {
                            ops::adamw_update(a[0], nullptr, a[1], a[2], a[3], adamw);
                            return OpOutputs();
                          }));
}

}  // namespace
}  // namespace vitune::testing
