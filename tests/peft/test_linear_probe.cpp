// The logistic-regression probe against PyTorch's L-BFGS in float64 on the same
// objective (tests/golden/probe_golden.json, tools/make_probe_golden.py): the objective
// at the golden weights is PyTorch's and its gradient there is ~0; fit from zero, the
// weights, bias and accuracies are the golden ones; the gradient checks against finite
// differences; bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "peft/linear_probe.h"
#include "test_util.h"

namespace vitune::peft {
namespace {

using nlohmann::json;

json golden() {
  std::ifstream in(testing::data_path("probe_golden.json"));
  return json::parse(in);
}

ProbeFeatures features(const json& rows, const json& labels) {
  ProbeFeatures f;
  f.count = int64_t(rows.size());
  f.dim = int64_t(rows[0].size());
  for (const json& row : rows) {
    for (const json& v : row) f.values.push_back(v.get<double>());
  }
  f.labels = labels.get<std::vector<int64_t>>();
  return f;
}

// [weight (dim x classes), bias] as the probe packs them.
std::vector<double> golden_parameters(const json& g) {
  std::vector<double> p;
  for (const json& row : g["weight"]) {
    for (const json& v : row) p.push_back(v.get<double>());
  }
  for (const json& v : g["bias"]) p.push_back(v.get<double>());
  return p;
}

TEST(LinearProbe, ObjectiveIsPyTorchsAndItsGradientVanishesAtTheGoldenOptimum) {
  const json g = golden();
  const ProbeFeatures train = features(g["train_features"], g["train_labels"]);
  std::vector<double> gradient;
  const double value = logistic_objective(train, 3, g["c"].get<double>(), golden_parameters(g), &gradient);
  EXPECT_NEAR(value, g["objective"].get<double>(), 1e-13);
  for (double entry : gradient) EXPECT_LT(std::abs(entry), 1e-8);
}

TEST(LinearProbe, FitMatchesPyTorchsLbfgs) {
  const json g = golden();
  const ProbeFeatures train = features(g["train_features"], g["train_labels"]);
  const ProbeFeatures eval = features(g["eval_features"], g["eval_labels"]);
  LogisticOptions options;
  options.c = g["c"].get<double>();
  const LogisticProbe probe = fit_logistic_probe(train, 3, options);
  EXPECT_TRUE(probe.converged) << probe.gradient_max;
  EXPECT_LE(probe.gradient_max, 1e-7);
  EXPECT_GT(probe.iterations, 3);
  const std::vector<double> expected = golden_parameters(g);
  std::vector<double> fitted = probe.weight;
  fitted.insert(fitted.end(), probe.bias.begin(), probe.bias.end());
  ASSERT_EQ(fitted.size(), expected.size());
  for (size_t i = 0; i < fitted.size(); ++i) EXPECT_NEAR(fitted[i], expected[i], 1e-5) << "parameter " << i;
  EXPECT_NEAR(probe.objective, g["objective"].get<double>(), 1e-12);
  EXPECT_DOUBLE_EQ(probe_accuracy(probe, train), g["train_accuracy"].get<double>());
  EXPECT_DOUBLE_EQ(probe_accuracy(probe, eval), g["eval_accuracy"].get<double>());
  // A stronger regularisation (smaller C) gives smaller weights.
  options.c = 0.01;
  const LogisticProbe strong = fit_logistic_probe(train, 3, options);
  double norm = 0, strong_norm = 0;
  for (size_t i = 0; i < probe.weight.size(); ++i) {
    norm += probe.weight[i] * probe.weight[i];
    strong_norm += strong.weight[i] * strong.weight[i];
  }
  EXPECT_LT(strong_norm, 0.5 * norm);
}

TEST(LinearProbe, GradientMatchesFiniteDifferences) {
  const json g = golden();
  const ProbeFeatures train = features(g["train_features"], g["train_labels"]);
  std::vector<double> p(size_t((train.dim + 1) * 3));
  for (size_t i = 0; i < p.size(); ++i) p[i] = 0.1 * std::sin(double(i) + 1);
  std::vector<double> gradient;
  logistic_objective(train, 3, 0.7, p, &gradient);
  for (size_t i = 0; i < p.size(); ++i) {
    std::vector<double> up = p, down = p;
    up[i] += 1e-6;
    down[i] -= 1e-6;
    const double numeric = (logistic_objective(train, 3, 0.7, up, nullptr) -
                            logistic_objective(train, 3, 0.7, down, nullptr)) / 2e-6;
    EXPECT_NEAR(gradient[i], numeric, 1e-8) << "parameter " << i;
  }
}

TEST(LinearProbe, RefusesBadInput) {
  const json g = golden();
  ProbeFeatures train = features(g["train_features"], g["train_labels"]);
  EXPECT_THROW(fit_logistic_probe(train, 1, {}), Error);
  EXPECT_THROW(fit_logistic_probe(train, 2, {}), Error);  // label 2 is outside [0, 2)
  LogisticOptions bad;
  bad.c = 0;
  EXPECT_THROW(fit_logistic_probe(train, 3, bad), Error);
  EXPECT_THROW(fit_logistic_probe(ProbeFeatures{}, 3, {}), Error);
  const LogisticProbe probe = fit_logistic_probe(train, 3, {});
  ProbeFeatures narrow = train;
  narrow.dim = 4;
  EXPECT_THROW(probe_accuracy(probe, narrow), Error);
}

}  // namespace
}  // namespace vitune::peft
