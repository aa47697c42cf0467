// The device-side statistics of the methods on the GPU against the host: the op GD-FPS's
// anchor is built on (token_abs_sums_into: the same bits, by construction), the column
// slices and f32 <-> f64 conversion plasticity's Gram matrices are built from, the
// Gram matrices themselves, and ActivationStats over a small ViT living on the GPU.
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops.h"
#include "nn/vit.h"
#include "op_harness.h"
#include "peft/activation_stats.h"
#include "peft/plasticity_pairs.h"
#include "small_vit.h"

namespace vitune::testing {
namespace {

class CudaStatistics : public CudaTest {};

// Every addition is the host's, in the host's order: bit for bit, at ViT-B shapes (the
// patches, qkv's and fc2's inputs) and into an accumulator that already holds sums.
TEST_F(CudaStatistics, TokenAbsSumsHaveTheHostsBits) {
  for (DType dt : kFloatTypes) {
    for (const Shape& shape : {Shape{3, 196, 768}, Shape{2, 197, 3072}, Shape{5, 1, 7}, Shape{0, 3, 4}}) {
      Tensor x = uniform(shape, dt, 900, -3, 3);
      Tensor accumulate = uniform({shape[2]}, DType::F64, 901, 0, 10);
      EXPECT_TRUE(gpu_matches_cpu(cat("token_abs_sums_into ", dtype_name(dt), shape_str(shape)), {x, accumulate},
                                  kExact, [](OpArgs& a) {
                                    ops::token_abs_sums_into(a[0], a[1]);
                                    return OpOutputs();
                                  }));
    }
  }
}

TEST_F(CudaStatistics, ColumnSliceMovesEveryDtype) {
  for (DType dt : {DType::F32, DType::F64, DType::I64, DType::U8}) {
    Tensor x = uniform({37, 20000}, DType::F64, 902, 0, 200).to(dt);
    for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 8192}, {8192, 8192}, {16384, 3616}, {5, 0}}) {
      EXPECT_TRUE(gpu_matches_cpu(cat("column_slice ", dtype_name(dt), " [", first, ", +", count, ")"), {x}, kExact,
                                  [first = first, count = count](OpArgs& a) {
                                    return OpOutputs().tensor("slice", ops::column_slice(a[0], first, count));
                                  }));
    }
  }
}

// f32 -> f64 is exact, f64 -> f32 rounds to nearest even on both: the host's bits,
// including values that round up to infinity, subnormals, zeros of both signs and
// infinities; NaN stays NaN.
TEST_F(CudaStatistics, FloatConversionOnTheDeviceHasTheHostsBits) {
  const double big = double(std::numeric_limits<float>::max());
  std::vector<double> special = {0.0, -0.0, 1.0 / 3, -2.5e-39, 1e-46, big, big * (1 + 1e-9), -1e300,
                                 std::numeric_limits<double>::infinity(), 1.0 + std::ldexp(1.0, -24)};
  Tensor doubles = Tensor::from_vector({int64_t(special.size())}, special, Device::cpu());
  for (const Tensor& source : {doubles, uniform({100003}, DType::F64, 903, -1e6, 1e6)}) {
    const Tensor on_gpu = source.to(gpu()).to(DType::F32);
    EXPECT_EQ(on_gpu.device(), gpu());
    EXPECT_TRUE(bitwise_equal(on_gpu.to(Device::cpu()), source.to(DType::F32))) << source.str();
    const Tensor back = on_gpu.to(DType::F64);
    EXPECT_TRUE(bitwise_equal(back.to(Device::cpu()), source.to(DType::F32).to(DType::F64))) << source.str();
  }
  const Tensor nan = Tensor::from_vector<double>({1}, {std::nan("")}, Device::cpu()).to(gpu());
  EXPECT_TRUE(std::isnan(nan.to(DType::F32).item(0)));
}

// f64 GEMMs in two summation orders: agreement to a few ulp of the sums of |products|.
TEST_F(CudaStatistics, GramMatricesOfADeviceBatchMatchTheHost) {
  for (DType dt : kFloatTypes) {
    // 197 x 100 = 19700 features: three column slices of 8192, the last one partial.
    const Tensor x = uniform({6, 197, 100}, dt, 904);
    const Tensor on_host = peft::gram_matrix(x);
    const Tensor on_device = peft::gram_matrix(x.to(gpu()));
    EXPECT_TRUE(on_device.device().is_cpu()) << "the Gram matrix comes back to the host";
    EXPECT_TRUE(matches_reference(on_device, on_host, {1e-11, 1e-12}, cat("gram_matrix ", dtype_name(dt))));
  }
}

// A small ViT on the GPU against the same ViT on the host: the forward passes differ by
// f32 rounding, so the means agree to it; the sums stay on the device until means().
TEST_F(CudaStatistics, ActivationStatsOfAModelOnTheGpuMatchTheHost) {
  nn::VisionTransformer host_model(small_vit_config(3, 32, 2), Device::cpu());
  host_model.init_weights(5);
  nn::VisionTransformer gpu_model(small_vit_config(3, 32, 2), Device::cpu());
  gpu_model.init_weights(5);
  gpu_model.to(gpu());
  peft::ActivationStats on_host(host_model), on_gpu(gpu_model);
  EXPECT_EQ(on_gpu.device(), gpu());
  for (uint64_t batch = 0; batch < 3; ++batch) {
    const Tensor images = uniform({4, 3, 8, 8}, DType::F32, 910 + batch);
    on_host.add_batch(images);
    on_gpu.add_batch(batch == 1 ? images.to(gpu()) : images);  // images on either device
  }
  const auto expected = on_host.means(), got = on_gpu.means();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, expected[i].first);
    EXPECT_TRUE(got[i].second.device().is_cpu()) << got[i].first;
    EXPECT_TRUE(matches_reference(got[i].second, expected[i].second, {1e-6, 1e-5}, got[i].first));
  }
}

}  // namespace
}  // namespace vitune::testing
