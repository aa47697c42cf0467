// GPS against PyTorch (tools/make_gps_golden.py, everything computed in float64), on
// every device: the supervised contrastive loss and its gradient, and the GPS scores of
// every selectable weight of the tiny ViT over two batches, for cross-entropy and for
// SupCon.
#include "autograd/functions.h"
#include "device_test.h"
#include "test_gps_fixture.h"

namespace vitune::testing {
namespace {

using autograd::Variable;

// A float64 run differs from the reference by rounding only; the scores are stored
// in float32, which costs up to half an ulp (6e-8 relative) on each side.
constexpr Tolerance kScoresF64{1e-9, 2e-7};
// A float32 run: rounding grows through two blocks, the backward and (for SupCon) the
// 1/T = 14 of the similarities. The scores are up to ~2 (median ~0.1); the worst error
// seen is 2e-6 absolute. An entry whose sum nearly cancels keeps only an absolute error.
constexpr Tolerance kScoresF32{1e-5, 1e-4};

class GpsGolden : public OnDevice {};

TEST_P(GpsGolden, SupervisedContrastiveLossAndGradientMatchPyTorch) {
  const Tensor labels = gps_golden().at("loss_case.labels").to(device());
  for (const auto& [key, temperature] : {std::pair<std::string, double>{"t007", 0.07}, {"t05", 0.5}}) {
    const std::string prefix = "loss_case." + key;
    for (DType dtype : {DType::F64, DType::F32}) {
      const Tolerance loss_tol = dtype == DType::F64 ? kF64Exact : kF32Forward;
      const Tolerance grad_tol = dtype == DType::F64 ? kF64Exact : kF32Gradient;
      Variable features(gps_golden().at("loss_case.features").to(dtype).to(device()).clone(), true);
      Variable loss = autograd::supervised_contrastive(features, labels, temperature);
      EXPECT_TRUE(tensors_close(loss.value(), gps_golden().at(prefix + ".loss"), loss_tol, prefix + ".loss"));
      autograd::backward(loss);
      EXPECT_TRUE(tensors_close(features.grad(), gps_golden().at(prefix + ".grad"), grad_tol, prefix + ".grad"));
    }
  }
}

void expect_scores_match(peft::GpsLoss loss, const std::string& prefix, Device device) {
  for (DType dtype : {DType::F64, DType::F32}) {
    auto model = gps_tiny_vit(dtype, device);
    const std::vector<std::string> names = gps_selectable_weights(*model);
    ASSERT_EQ(names.size(), 9u);
    auto scores = peft::gps_scores_from_batches(*model, names, loss, 0.07, gps_golden_batches(dtype));
    ASSERT_EQ(scores.size(), names.size());
    for (size_t n = 0; n < names.size(); ++n) {
      EXPECT_EQ(scores[n].first, names[n]);
      EXPECT_EQ(scores[n].second.dtype(), DType::F32);
      EXPECT_TRUE(tensors_close(scores[n].second, gps_golden().at(prefix + names[n]),
                                dtype == DType::F64 ? kScoresF64 : kScoresF32,
                                prefix + names[n] + (dtype == DType::F64 ? " (f64)" : " (f32)")));
    }
  }
}

TEST_P(GpsGolden, CrossEntropyScoresMatchPyTorch) {
  expect_scores_match(peft::GpsLoss::CrossEntropy, "ce.", device());
}

TEST_P(GpsGolden, ContrastiveScoresMatchPyTorch) {
  expect_scores_match(peft::GpsLoss::SupervisedContrastive, "supcon.", device());
}

VITUNE_ON_EVERY_DEVICE(GpsGolden);

}  // namespace
}  // namespace vitune::testing
