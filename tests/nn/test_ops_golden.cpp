// Single ops against PyTorch on the cases tools/op_cases.py saved: LayerNorm, softmax,
// GELU, label-smoothed cross-entropy, attention (forward and backward) and top-k. (It
// lives with the nn tests because reading the golden file needs the safetensors reader.)
#include "engine/ops.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

struct OpsGolden : ::testing::Test {
  nn::SafetensorsFile g = nn::read_safetensors(data_path("ops_golden.safetensors"));
  Tensor at(const std::string& name) { return g.at(name).clone(); }
};

TEST_F(OpsGolden, LayerNorm) {
  Tensor mean, rstd;
  Tensor y = ops::layer_norm_forward(at("ln.x"), at("ln.w"), at("ln.b"), 1e-5, mean, rstd);
  EXPECT_TRUE(tensors_close(y, at("ln.y"), kF32Forward, "ln.y"));
  Tensor dx(at("ln.x").shape(), DType::F32, Device::cpu());
  Tensor dw = Tensor::zeros(at("ln.w").shape(), DType::F32, Device::cpu()), db = Tensor::zeros(at("ln.b").shape(), DType::F32, Device::cpu());
  ops::layer_norm_backward(at("ln.dy"), at("ln.x"), at("ln.w"), mean, rstd, &dx, &dw, &db);
  EXPECT_TRUE(tensors_close(dx, at("ln.dx"), kF32Gradient, "ln.dx"));
  EXPECT_TRUE(tensors_close(dw, at("ln.dw"), kF32Gradient, "ln.dw"));
  EXPECT_TRUE(tensors_close(db, at("ln.db"), kF32Gradient, "ln.db"));
}

TEST_F(OpsGolden, Softmax) {
  Tensor y = ops::softmax_forward(at("softmax.x"));
  EXPECT_TRUE(tensors_close(y, at("softmax.y"), kF32Forward, "softmax.y"));
  EXPECT_TRUE(tensors_close(ops::softmax_backward(at("softmax.dy"), y), at("softmax.dx"), kF32Gradient, "softmax.dx"));
}

TEST_F(OpsGolden, Gelu) {
  EXPECT_TRUE(tensors_close(ops::gelu_forward(at("gelu.x")), at("gelu.y"), kF32Forward, "gelu.y"));
  EXPECT_TRUE(tensors_close(ops::gelu_backward(at("gelu.dy"), at("gelu.x")), at("gelu.dx"), kF32Gradient, "gelu.dx"));
}

TEST_F(OpsGolden, CrossEntropyWithLabelSmoothing) {
  Tensor probs;
  double loss = ops::cross_entropy_forward(at("ce.logits"), at("ce.labels"), 0.1, probs);
  EXPECT_NEAR(loss, at("ce.loss").item(0), 1e-5 + 1e-4 * std::fabs(at("ce.loss").item(0)));
  Tensor dlogits = ops::cross_entropy_backward(probs, at("ce.labels"), 0.1, 1.0);
  EXPECT_TRUE(tensors_close(dlogits, at("ce.dlogits"), kF32Gradient, "ce.dlogits"));
}

TEST_F(OpsGolden, Attention) {
  Tensor probs;
  Tensor ctx = ops::attention_forward(at("attn.qkv"), 2, probs);
  EXPECT_TRUE(tensors_close(ctx, at("attn.ctx"), kF32Forward, "attn.ctx"));
  Tensor dqkv = ops::attention_backward(at("attn.dctx"), at("attn.qkv"), probs, 2);
  EXPECT_TRUE(tensors_close(dqkv, at("attn.dqkv"), kF32Gradient, "attn.dqkv"));
}

TEST_F(OpsGolden, TopK) {
  Tensor values, indices;
  ops::topk_rows(at("topk.x"), 3, values, indices);
  EXPECT_TRUE(bitwise_equal(values, at("topk.values")));
  EXPECT_TRUE(bitwise_equal(indices, at("topk.indices")));
}

}  // namespace
}  // namespace vitune::testing
