// Every op given tensors on two devices refuses with a vitune::Error instead of reading
// one device's memory as the other's: with the device tensor first (the CUDA definition
// refuses the host tensor) and, where the op takes two or more, with the host tensor
// first (the host definition refuses the device tensor).
#include <functional>
#include <string>

#include "engine/error.h"
#include "engine/ops.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaOpErrors : public CudaTest {};

void expect_refused(const std::string& what, const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw something other than vitune::Error: " << e.what();
  }
}

Tensor host(const Shape& shape, uint64_t stream) { return uniform(shape, DType::F32, stream); }
Tensor device(const Shape& shape, uint64_t stream) { return host(shape, stream).to(gpu()); }

TEST_F(CudaOpErrors, GemmWithOperandsOnTwoDevices) {
  for (bool a_on_gpu : {true, false}) {
    for (int other = 0; other < 2; ++other) {
      // a on one device; b (other 0) or c (other 1) on the other one.
      Tensor a = a_on_gpu ? device({4, 3}, 1) : host({4, 3}, 1);
      Tensor b = (a_on_gpu == (other == 0)) ? host({3, 5}, 2) : device({3, 5}, 2);
      Tensor c = (a_on_gpu == (other == 1)) ? host({4, 5}, 3) : device({4, 5}, 3);
      expect_refused(cat("gemm, a on ", a.device().str(), ", b on ", b.device().str(), ", c on ", c.device().str()),
                     [&] { ops::gemm(false, false, 1, a, b, 0, c); });
      // linear_forward: w on b's device, bias on c's.
      Tensor w = b.device().is_cpu() ? host({5, 3}, 4) : device({5, 3}, 4);
      Tensor bias = c.device().is_cpu() ? host({5}, 5) : device({5}, 5);
      expect_refused(cat("linear_forward, x on ", a.device().str(), ", w on ", w.device().str(), ", bias on ",
                         bias.device().str()),
                     [&] { ops::linear_forward(a, w, bias, c); });
      Tensor sa = a.reshape({1, 4, 3}), sb = b.reshape({1, 3, 5}), sc = c.reshape({1, 4, 5});
      expect_refused(cat("gemm_batched, a on ", a.device().str(), ", b on ", b.device().str(), ", c on ",
                         c.device().str()),
                     [&] { ops::gemm_batched(false, false, 1, sa, sb, 0, sc); });
    }
  }
}

TEST_F(CudaOpErrors, ElementwiseAndReductionsWithOperandsOnTwoDevices) {
  Tensor h = host({2, 3}, 10), d = device({2, 3}, 11);
  Tensor h_row = host({3}, 12), d_row = device({3}, 13);
  for (bool device_first : {true, false}) {
    Tensor& first = device_first ? d : h;
    Tensor& second = device_first ? h : d;
    Tensor& row = device_first ? h_row : d_row;
    const std::string order = device_first ? " (device tensor first)" : " (host tensor first)";
    expect_refused("add" + order, [&] { ops::add(first, second); });
    expect_refused("mul" + order, [&] { ops::mul(first, second); });
    expect_refused("axpy" + order, [&] { ops::axpy(1, first, second); });
    expect_refused("add_row_broadcast" + order, [&] { ops::add_row_broadcast(first, row); });
    expect_refused("sum_rows_into" + order, [&] { ops::sum_rows_into(first, row); });
  }
}

TEST_F(CudaOpErrors, LayerNormSoftmaxGeluWithOperandsOnTwoDevices) {
  Tensor x = device({4, 6}, 20), weight = device({6}, 21), bias = device({6}, 22);
  Tensor mean, rstd;
  ops::layer_norm_forward(x, weight, bias, 1e-6, mean, rstd);
  Tensor dy = device({4, 6}, 23), host_dy = host({4, 6}, 23), host_weight = host({6}, 21);
  Tensor host_x = host({4, 6}, 20);
  expect_refused("layer_norm_forward with a host weight", [&] {
    Tensor m, r;
    ops::layer_norm_forward(x, host_weight, bias, 1e-6, m, r);
  });
  expect_refused("layer_norm_forward of a host x with device parameters", [&] {
    Tensor m, r;
    ops::layer_norm_forward(host_x, weight, bias, 1e-6, m, r);
  });
  expect_refused("layer_norm_backward with a host dy", [&] {
    Tensor dx;
    ops::layer_norm_backward(host_dy, x, weight, mean, rstd, &dx, nullptr, nullptr);
  });
  expect_refused("layer_norm_backward with a host dweight", [&] {
    Tensor dw = host({6}, 24);
    ops::layer_norm_backward(dy, x, weight, mean, rstd, nullptr, &dw, nullptr);
  });
  expect_refused("layer_norm_backward with a host dx to write", [&] {
    Tensor dx = host({4, 6}, 25);
    ops::layer_norm_backward(dy, x, weight, mean, rstd, &dx, nullptr, nullptr);
  });
  Tensor y = ops::softmax_forward(x);
  expect_refused("softmax_backward with a host dy", [&] { ops::softmax_backward(host_dy, y); });
  expect_refused("softmax_backward with a host y", [&] { ops::softmax_backward(dy, host_x); });
  expect_refused("gelu_backward with a host dy", [&] { ops::gelu_backward(host_dy, x); });
  expect_refused("gelu_backward with a host x", [&] { ops::gelu_backward(dy, host_x); });
}

TEST_F(CudaOpErrors, AttentionAndCrossEntropyWithOperandsOnTwoDevices) {
  Tensor qkv = device({2, 5, 12}, 30), probs;
  ops::attention_forward(qkv, 2, probs);
  Tensor dctx = device({2, 5, 4}, 31), host_dctx = host({2, 5, 4}, 31), host_qkv = host({2, 5, 12}, 30);
  expect_refused("attention_backward with a host dctx", [&] { ops::attention_backward(host_dctx, qkv, probs, 2); });
  expect_refused("attention_backward with a host qkv", [&] { ops::attention_backward(dctx, host_qkv, probs, 2); });
  expect_refused("attention_backward with host probs",
                 [&] { ops::attention_backward(dctx, qkv, probs.to(Device::cpu()), 2); });

  Tensor logits = device({3, 4}, 32), host_logits = host({3, 4}, 32);
  Tensor labels = index_tensor({0, 1, 3}), device_labels = labels.to(gpu());
  expect_refused("cross_entropy_forward with host labels", [&] {
    Tensor p;
    ops::cross_entropy_forward(logits, labels, 0, p);
  });
  expect_refused("cross_entropy_forward of host logits with device labels", [&] {
    Tensor p;
    ops::cross_entropy_forward(host_logits, device_labels, 0, p);
  });
  expect_refused("cross_entropy_backward with host labels", [&] { ops::cross_entropy_backward(logits, labels, 0, 1); });
  expect_refused("cross_entropy_backward of host probs with device labels",
                 [&] { ops::cross_entropy_backward(host_logits, device_labels, 0, 1); });
}

TEST_F(CudaOpErrors, IndexingAndMaskedGradientWithOperandsOnTwoDevices) {
  Tensor x = device({20}, 40), host_x = host({20}, 40);
  Tensor indices = index_tensor({1, 4, 9}), device_indices = indices.to(gpu());
  Tensor values = device({3}, 41), host_values = host({3}, 41);
  expect_refused("gather with host indices", [&] { ops::gather(x, indices); });
  expect_refused("gather of a host x with device indices", [&] { ops::gather(host_x, device_indices); });
  expect_refused("scatter with host indices", [&] { ops::scatter(x, indices, values); });
  expect_refused("scatter with host values", [&] { ops::scatter(x, device_indices, host_values); });
  expect_refused("scatter into a host x", [&] { ops::scatter(host_x, device_indices, values); });
  expect_refused("scatter_add with host indices", [&] { ops::scatter_add(x, indices, values); });
  expect_refused("scatter_add into a host x", [&] { ops::scatter_add(host_x, device_indices, values); });

  Tensor dy = device({5, 3}, 42), xs = device({5, 4}, 43), accumulate = device({3}, 44);
  Tensor selection = index_tensor({0, 5, 11}), device_selection = selection.to(gpu());
  expect_refused("masked_weight_grad with host indices",
                 [&] { ops::masked_weight_grad(dy, xs, selection, 4, accumulate); });
  expect_refused("masked_weight_grad with a host accumulator", [&] {
    Tensor host_accumulate = host({3}, 44);
    ops::masked_weight_grad(dy, xs, device_selection, 4, host_accumulate);
  });
  expect_refused("masked_weight_grad with a host x",
                 [&] { ops::masked_weight_grad(dy, host({5, 4}, 43), device_selection, 4, accumulate); });
  expect_refused("masked_weight_grad of a host dy",
                 [&] { ops::masked_weight_grad(host({5, 3}, 42), xs, device_selection, 4, accumulate); });
}

TEST_F(CudaOpErrors, TokensWithOperandsOnTwoDevices) {
  expect_refused("prepend_token, device token and host sequences",
                 [&] { ops::prepend_token(device({1, 1, 4}, 50), host({2, 3, 4}, 51)); });
  expect_refused("prepend_token, host token and device sequences",
                 [&] { ops::prepend_token(host({1, 1, 4}, 50), device({2, 3, 4}, 51)); });
}

TEST_F(CudaOpErrors, OptimizerUpdatesWithOperandsOnTwoDevices) {
  const SgdUpdate sgd{0.1f, 0.9f, 0.0f, false, false};
  const AdamWUpdate adamw = adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.0, 1);
  Tensor value = device({10}, 60), host_value = host({10}, 60);
  Tensor grad = device({3}, 61), host_grad = host({3}, 61);
  Tensor state = device({3}, 62), host_state = host({3}, 62);
  Tensor indices = index_tensor({1, 4, 9}), device_indices = indices.to(gpu());
  expect_refused("sgd_update with host indices", [&] { ops::sgd_update(value, &indices, grad, nullptr, sgd); });
  expect_refused("sgd_update with a host gradient",
                 [&] { ops::sgd_update(value, &device_indices, host_grad, nullptr, sgd); });
  expect_refused("sgd_update with a host momentum buffer",
                 [&] { ops::sgd_update(value, &device_indices, grad, &host_state, sgd); });
  expect_refused("sgd_update of a host value", [&] { ops::sgd_update(host_value, &device_indices, grad, &state, sgd); });
  expect_refused("adamw_update with a host first moment",
                 [&] { ops::adamw_update(value, &device_indices, grad, host_state, state, adamw); });
  expect_refused("adamw_update with a host second moment",
                 [&] { ops::adamw_update(value, &device_indices, grad, state, host_state, adamw); });
  expect_refused("adamw_update with host indices", [&] { ops::adamw_update(value, &indices, grad, state, state, adamw); });
  expect_refused("adamw_update of a host value",
                 [&] { ops::adamw_update(host_value, &device_indices, grad, state, state, adamw); });
}

}  // namespace
}  // namespace vitune::testing
