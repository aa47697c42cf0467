// The supervised contrastive loss against a plain-loop reference and float64 finite
// differences, its thread-count determinism and its argument checks. (The PyTorch golden
// values are compared in tests/peft/test_gps_golden.cpp, whose program reads safetensors.)
#include <cmath>

#include "gradcheck.h"

namespace vitune::testing {
namespace {

using autograd::Variable;
namespace ag = autograd;

// The loss written as its definition reads, without any log-sum-exp rewriting:
//   mean_i  -1/|P(i)| sum_{p in P(i)} log( exp(s_ip) / sum_{a != i} exp(s_ia) ).
double plain_supcon(const Tensor& features, const std::vector<int64_t>& labels, double temperature) {
  const int64_t n = features.dim(0), d = features.dim(1);
  std::vector<std::vector<double>> z(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(d)));
  for (int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (int64_t k = 0; k < d; ++k) norm += features.item(i * d + k) * features.item(i * d + k);
    for (int64_t k = 0; k < d; ++k) z[size_t(i)][size_t(k)] = features.item(i * d + k) / std::sqrt(norm);
  }
  auto similarity = [&](int64_t i, int64_t j) {
    double s = 0;
    for (int64_t k = 0; k < d; ++k) s += z[size_t(i)][size_t(k)] * z[size_t(j)][size_t(k)];
    return s / temperature;
  };
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double denominator = 0;
    for (int64_t a = 0; a < n; ++a) {
      if (a != i) denominator += std::exp(similarity(i, a));
    }
    double sum = 0;
    int positives = 0;
    for (int64_t p = 0; p < n; ++p) {
      if (p == i || labels[size_t(p)] != labels[size_t(i)]) continue;
      sum += std::log(std::exp(similarity(i, p)) / denominator);
      ++positives;
    }
    total += -sum / positives;
  }
  return total / double(n);
}

Variable features_input(const Shape& shape, uint64_t stream, DType dtype = DType::F64) {
  return Variable(random_normal(shape, dtype, kGradcheckSeed, stream), true);
}

TEST(SupervisedContrastive, MatchesThePlainDefinitionForUnevenPositiveSets) {
  // Three rows of class 4, two of class 1, two of class 9: |P(i)| is 2 or 1.
  const std::vector<int64_t> labels{4, 1, 4, 9, 4, 1, 9};
  Variable features = features_input({7, 6}, 1);
  for (double temperature : {0.07, 0.3, 2.0}) {
    Variable loss = ag::supervised_contrastive(features, Tensor::from_vector<int64_t>({7}, labels, Device::cpu()), temperature);
    EXPECT_NEAR(loss.value().item(0), plain_supcon(features.value(), labels, temperature), 1e-11)
        << "temperature " << temperature;
  }
}

TEST(SupervisedContrastive, DependsOnlyOnTheDirectionOfEachRow) {
  Tensor labels = Tensor::from_vector<int64_t>({4}, {0, 1, 0, 1}, Device::cpu());
  Tensor x = random_normal({4, 3}, DType::F64, kGradcheckSeed, 2);
  Tensor scaled = x.clone();
  for (int64_t k = 0; k < 3; ++k) scaled.data<double>()[3 + k] *= 17.5;  // row 1
  double a = ag::supervised_contrastive(Variable(x), labels, 0.1).value().item(0);
  double b = ag::supervised_contrastive(Variable(scaled), labels, 0.1).value().item(0);
  EXPECT_NEAR(a, b, 1e-12);
}

TEST(SupervisedContrastive, FiniteDifferencesInFloat64) {
  Tensor two_views = Tensor::from_vector<int64_t>({6}, {2, 0, 2, 2, 0, 2}, Device::cpu());
  for (double temperature : {0.07, 0.5}) {
    // Small temperatures make the loss curved: a smaller step keeps the truncation error low.
    expect_gradients_match([&](auto& in) { return ag::supervised_contrastive(in[0], two_views, temperature); },
                           {features_input({6, 4}, 3)}, 1e-7, 1e-7, 1e-5);
  }
  Tensor uneven = Tensor::from_vector<int64_t>({5}, {3, 3, 3, 8, 8}, Device::cpu());
  expect_gradients_match([&](auto& in) { return ag::supervised_contrastive(in[0], uneven, 0.2); },
                         {features_input({5, 3}, 4)});
}

TEST(SupervisedContrastive, AZeroRowStaysFinite) {
  Tensor labels = Tensor::from_vector<int64_t>({4}, {0, 1, 0, 1}, Device::cpu());
  Tensor x = random_normal({4, 3}, DType::F64, kGradcheckSeed, 5);
  for (int64_t k = 0; k < 3; ++k) x.data<double>()[k] = 0.0;
  Variable features(x, true);
  Variable loss = ag::supervised_contrastive(features, labels, 0.07);
  ag::backward(loss);
  EXPECT_TRUE(std::isfinite(loss.value().item(0)));
  for (int64_t i = 0; i < features.grad().numel(); ++i) EXPECT_TRUE(std::isfinite(features.grad().item(i)));
}

TEST(SupervisedContrastive, SameBitsForOneAndTwoThreads) {
  std::vector<int64_t> label_values;
  for (int64_t i = 0; i < 96; ++i) label_values.push_back((i % 48) % 7);
  Tensor labels = Tensor::from_vector<int64_t>({96}, label_values, Device::cpu());
  Tensor x = random_normal({96, 40}, DType::F32, kGradcheckSeed, 6);
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    Variable features(x.clone(), true);
    Variable loss = ag::supervised_contrastive(features, labels, 0.07);
    ag::backward(loss);
    return std::make_pair(loss.value(), features.grad());
  };
  auto [loss1, grad1] = run(1);
  auto [loss2, grad2] = run(2);
  EXPECT_TRUE(bitwise_equal(loss1, loss2));
  EXPECT_TRUE(bitwise_equal(grad1, grad2));
}

TEST(SupervisedContrastive, RejectsBadArguments) {
  Variable x(random_normal({4, 3}, DType::F32, kGradcheckSeed, 7), true);
  Tensor good = Tensor::from_vector<int64_t>({4}, {0, 1, 0, 1}, Device::cpu());
  // Row 3 is the only one labelled 2: it has no positive.
  const Tensor lonely_row_3 = Tensor::from_vector<int64_t>({4}, {0, 0, 0, 2}, Device::cpu());
  EXPECT_THROW(ag::supervised_contrastive(x, lonely_row_3, 0.1), Error);
  EXPECT_THROW(ag::supervised_contrastive(x, Tensor::from_vector<int64_t>({3}, {0, 1, 0}, Device::cpu()), 0.1), Error);
  EXPECT_THROW(ag::supervised_contrastive(x, Tensor::from_vector<float>({4}, {0, 1, 0, 1}, Device::cpu()), 0.1), Error);
  EXPECT_THROW(ag::supervised_contrastive(x, good, 0.0), Error);
  EXPECT_THROW(ag::supervised_contrastive(x, good, NAN), Error);
  Variable one_row(random_normal({1, 3}, DType::F32, kGradcheckSeed, 8), true);
  EXPECT_THROW(ag::supervised_contrastive(one_row, Tensor::from_vector<int64_t>({1}, {0}, Device::cpu()), 0.1), Error);
  Variable three_d(random_normal({2, 2, 3}, DType::F32, kGradcheckSeed, 9), true);
  EXPECT_THROW(ag::supervised_contrastive(three_d, good, 0.1), Error);
  try {
    ag::supervised_contrastive(x, lonely_row_3, 0.1);
    FAIL() << "no error for a row without a positive";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vitune::testing
