// Learning-rate schedules against their closed forms, and gradient clipping and norms
// per component against sums computed by hand.
#include <cmath>

#include "nn/gradients.h"
#include "nn/schedule.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(Schedule, CosineWithLinearWarmup) {
  nn::Schedule s;
  s.base_lr = 0.1;
  s.warmup_steps = 4;
  s.total_steps = 14;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.025);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 0.1);
  EXPECT_NEAR(s.lr_at(9), 0.05, 1e-15);   // halfway through the cosine
  EXPECT_NEAR(s.lr_at(14), 0.0, 1e-15);
  EXPECT_NEAR(s.lr_at(100), 0.0, 1e-15);  // held at the floor
  s.min_lr = 0.01;
  EXPECT_NEAR(s.lr_at(9), 0.055, 1e-15);
}

TEST(Schedule, ConstantAndStep) {
  nn::Schedule s;
  s.kind = nn::ScheduleKind::Constant;
  s.base_lr = 0.3;
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 0.3);
  s.kind = nn::ScheduleKind::Step;
  s.step_size = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.3);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 0.15);
  EXPECT_DOUBLE_EQ(s.lr_at(25), 0.075);
}

TEST(Schedule, BadValuesAndNamesAreErrors) {
  nn::Schedule s;
  s.base_lr = -1;
  EXPECT_THROW(s.validate(), Error);
  EXPECT_THROW(nn::parse_schedule_kind("linear", "--schedule"), Error);
  EXPECT_EQ(nn::parse_schedule_kind("step", "--schedule"), nn::ScheduleKind::Step);
}

struct TwoParameters {
  nn::Parameter qkv{"blocks.1.attn.qkv.weight", Tensor::zeros({2}, DType::F32, Device::cpu())};
  nn::Parameter head{"head.weight", Tensor::zeros({2}, DType::F32, Device::cpu())};
  std::vector<nn::Parameter*> all{&qkv, &head};
  TwoParameters() {
    autograd::accumulate_grad(qkv.var(), Tensor::from_vector<float>({2}, {3, 4}, Device::cpu()));   // norm 5
    autograd::accumulate_grad(head.var(), Tensor::from_vector<float>({2}, {0, 12}, Device::cpu()));  // norm 12
  }
};

TEST(Gradients, NormsPerComponentAndLayer) {
  TwoParameters p;
  nn::GradNorms norms = nn::grad_norms(p.all);
  EXPECT_DOUBLE_EQ(norms.total, 13.0);
  EXPECT_DOUBLE_EQ(norms.per_component.at(nn::Component::MHA), 5.0);
  EXPECT_DOUBLE_EQ(norms.per_component.at(nn::Component::Head), 12.0);
  EXPECT_DOUBLE_EQ(norms.per_layer.at(1).at(nn::Component::MHA), 5.0);
  EXPECT_EQ(norms.per_layer.size(), 1u);
}

TEST(Gradients, ClippingScalesByMaxNormOverNormAsPyTorch) {
  TwoParameters p;
  EXPECT_DOUBLE_EQ(nn::clip_grad_norm(p.all, 1.0), 13.0);
  double c = 1.0 / (13.0 + 1e-6);
  EXPECT_NEAR(p.qkv.grad().item(1), 4 * c, 1e-7);
  EXPECT_NEAR(p.head.grad().item(1), 12 * c, 1e-7);
  // Below the threshold nothing changes.
  TwoParameters q;
  nn::clip_grad_norm(q.all, 100.0);
  EXPECT_EQ(q.head.grad().item(1), 12.0);
}

}  // namespace
}  // namespace vitune::testing
