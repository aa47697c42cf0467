// Every gradient a backward makes -- a dense leaf's buffer, a masked leaf's selected
// entries, an inner node's temporary -- is made on the device of its value: on the
// emulated device, where making one on the cpu would be an error at the next op.
#include "autograd/functions.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const Device kEmulated = Device::emulated();

TEST(GradientDevices, EveryDestinationIsOnTheValuesDevice) {
  autograd::Variable x(random_normal({4, 5}, DType::F32, 5, 0).to(kEmulated), true, "x");
  autograd::Variable dense(random_normal({3, 5}, DType::F32, 5, 1).to(kEmulated), true, "dense");
  autograd::Variable masked(random_normal({2, 3}, DType::F32, 5, 2).to(kEmulated), true, "masked");
  masked.set_grad_indices(Tensor::from_vector<int64_t>({2}, {1, 4}, Device::cpu()));
  EXPECT_EQ(masked.grad_indices().device(), kEmulated);
  autograd::Variable bias(Tensor::zeros({2}, DType::F32, kEmulated), true, "bias");
  autograd::Variable h = autograd::gelu(autograd::linear(x, dense, autograd::Variable()));
  autograd::Variable y = autograd::linear(h, masked, bias);
  autograd::backward(autograd::cross_entropy(y, Tensor::from_vector<int64_t>({4}, {0, 1, 1, 0}, kEmulated)));
  for (const autograd::Variable* v : {&x, &dense, &masked, &bias}) {
    ASSERT_TRUE(v->grad().defined()) << v->name();
    EXPECT_EQ(v->grad().device(), kEmulated) << v->name();
  }
  EXPECT_EQ(masked.grad().shape(), Shape({2}));
}

}  // namespace
}  // namespace vitune::testing
