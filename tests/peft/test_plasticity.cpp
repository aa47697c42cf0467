// Plasticity measurement: pairwise ratios against plain per-pair computations (a linear
// map, LayerNorm's invariances), Gram-matrix distances against direct differences, the
// running statistics, and the whole meter against PyTorch golden values on the tiny ViT.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/variable.h"
#include "engine/error.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "peft/plasticity.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

using peft::PairCounts;
using peft::RunningStats;

// Plain per-pair statistics of a list of ratios.
struct PlainStats {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
};
PlainStats plain_stats(const std::vector<double>& v) {
  PlainStats s;
  for (double x : v) {
    s.mean += x / double(v.size());
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  for (double x : v) s.std += (x - s.mean) * (x - s.mean) / double(v.size());
  s.std = std::sqrt(s.std);
  return s;
}

// |row a - row b| of the flattened batch, plainly.
double plain_distance(const Tensor& x, int64_t a, int64_t b) {
  const int64_t width = x.numel() / x.dim(0);
  double sum = 0;
  for (int64_t i = 0; i < width; ++i) {
    double d = x.item(a * width + i) - x.item(b * width + i);
    sum += d * d;
  }
  return std::sqrt(sum);
}

void expect_stats(const RunningStats& actual, const PlainStats& expected, double rel, const std::string& what) {
  EXPECT_NEAR(actual.mean, expected.mean, rel * std::fabs(expected.mean)) << what;
  EXPECT_NEAR(actual.std(), expected.std, rel * std::fabs(expected.mean)) << what;
  EXPECT_NEAR(actual.min, expected.min, rel * std::fabs(expected.min)) << what;
  EXPECT_NEAR(actual.max, expected.max, rel * std::fabs(expected.max)) << what;
}

TEST(PlasticityPairs, GramDistancesMatchDirectDifferences) {
  Tensor wide = random_normal({4, 3, 3000}, DType::F32, 8, 0);  // 9000 columns: more than one slice
  std::vector<double> wide_distances = peft::pair_distances(peft::gram_matrix(wide));
  EXPECT_NEAR(wide_distances[0], plain_distance(wide, 0, 1), 1e-9 * wide_distances[0]);
  EXPECT_NEAR(wide_distances[5], plain_distance(wide, 2, 3), 1e-9 * wide_distances[5]);
  for (double offset : {0.0, 100.0}) {
    Tensor x = random_normal({7, 5, 6}, DType::F32, 3, 0, offset, 1.0);
    std::vector<double> distances = peft::pair_distances(peft::gram_matrix(x));
    ASSERT_EQ(distances.size(), 21u);
    size_t k = 0;
    for (int64_t a = 0; a < 7; ++a)
      for (int64_t b = a + 1; b < 7; ++b, ++k) {
        double expected = plain_distance(x, a, b);
        EXPECT_NEAR(distances[k], expected, 1e-9 * expected) << "pair " << a << "," << b << " offset " << offset;
      }
  }
}

TEST(PlasticityPairs, MatchedDistancesAreRowDifferences) {
  Tensor a = random_normal({4, 3, 5}, DType::F32, 5, 0);
  Tensor b = random_normal({4, 3, 5}, DType::F32, 5, 1);
  std::vector<double> d = peft::matched_distances(a, b);
  for (int64_t k = 0; k < 4; ++k) {
    double sum = 0;
    for (int64_t i = 0; i < 15; ++i) sum += std::pow(a.item(k * 15 + i) - b.item(k * 15 + i), 2);
    EXPECT_NEAR(d[size_t(k)], std::sqrt(sum), 1e-12 * std::sqrt(sum));
  }
  EXPECT_THROW(peft::matched_distances(a, random_normal({3, 3, 5}, DType::F32, 5, 2)), Error);
}

TEST(PlasticityPairs, LinearMapRatiosMatchTheClosedForm) {
  // f(x) = x W^T token by token; the ratio of a pair is |(x - y) W^T| / |x - y|.
  const int64_t batch = 6, tokens = 3, in = 4, out = 5;
  for (DType dtype : {DType::F64, DType::F32}) {
    Tensor x = random_normal({batch, tokens, in}, dtype, 11, 0);
    Tensor w = random_normal({out, in}, DType::F64, 11, 1);
    Tensor y({batch, tokens, out}, dtype, Device::cpu());
    for (int64_t t = 0; t < batch * tokens; ++t)
      for (int64_t j = 0; j < out; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < in; ++k) sum += x.item(t * in + k) * w.item(j * in + k);
        if (dtype == DType::F64)
          y.data<double>()[t * out + j] = sum;
        else
          y.data<float>()[t * out + j] = float(sum);
      }
    std::vector<double> expected;
    for (int64_t a = 0; a < batch; ++a)
      for (int64_t b = a + 1; b < batch; ++b) {
        double num = 0, den = 0;
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t k = 0; k < in; ++k) {
            double d = x.item((a * tokens + t) * in + k) - x.item((b * tokens + t) * in + k);
            den += d * d;
          }
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t j = 0; j < out; ++j) {
            double d = 0;
            for (int64_t k = 0; k < in; ++k)
              d += (x.item((a * tokens + t) * in + k) - x.item((b * tokens + t) * in + k)) * w.item(j * in + k);
            num += d * d;
          }
        expected.push_back(std::sqrt(num / den));
      }
    RunningStats stats;
    PairCounts counts;
    peft::add_pair_ratios(peft::gram_matrix(x), peft::gram_matrix(y), stats, counts);
    EXPECT_EQ(counts.used, 15);
    EXPECT_EQ(counts.skipped, 0);
    expect_stats(stats, plain_stats(expected), dtype == DType::F64 ? 1e-10 : 1e-5, dtype_name(dtype));
  }
}

TEST(PlasticityPairs, IdenticalInputsAreSkippedNotDividedByZero) {
  Tensor x = random_normal({3, 2, 4}, DType::F32, 2, 0);
  std::copy(x.data<float>(), x.data<float>() + 8, x.data<float>() + 16);  // sample 2 = sample 0
  RunningStats stats;
  PairCounts counts;
  peft::add_pair_ratios(peft::gram_matrix(x), peft::gram_matrix(x), stats, counts);
  EXPECT_EQ(counts.skipped, 1);
  EXPECT_EQ(stats.count, 2);
  EXPECT_NEAR(stats.mean, 1.0, 1e-9);
}

// LayerNorm (gamma = `gamma`, beta = 0, eps 1e-6) of a batch [B, n, d].
Tensor layer_norm(const Tensor& x, double gamma) {
  nn::LayerNorm norm("ln", x.dim(-1), 1e-6, Device::cpu());
  norm.weight.mutable_value().fill(gamma);
  autograd::NoGradGuard no_grad;
  return norm.forward(autograd::Variable(x)).value();
}

RunningStats ratios(const Tensor& x, const Tensor& y) {
  RunningStats stats;
  PairCounts counts;
  peft::add_pair_ratios(peft::gram_matrix(x), peft::gram_matrix(y), stats, counts);
  return stats;
}

TEST(PlasticityPairs, LayerNormIgnoresScaleAndShift) {
  // LN(a x + c) = LN(x) for a > 0 when gamma = 1, beta = 0 (eps aside): the pair
  // (x, a x + c) has plasticity 0 however far apart the two are.
  Tensor x = random_normal({1, 4, 16}, DType::F32, 9, 0);
  Tensor pair({2, 4, 16}, DType::F32, Device::cpu());
  for (int64_t i = 0; i < 64; ++i) {
    pair.data<float>()[i] = x.data<float>()[i];
    pair.data<float>()[64 + i] = 3.0f * x.data<float>()[i] + 5.0f;
  }
  RunningStats stats = ratios(pair, layer_norm(pair, 1.0));
  ASSERT_EQ(stats.count, 1);
  EXPECT_LT(stats.mean, 1e-5);
}

TEST(PlasticityPairs, LayerNormOfStandardisedTokensScalesAsPredicted) {
  // Tokens with mean 0 and variance 1 pass LN (gamma g) as g x / sqrt(1 + eps); for
  // the scaled batch a x the ratio of every pair is g / a (up to eps / a^2).
  Tensor x = random_normal({5, 3, 32}, DType::F32, 4, 0);
  float* p = x.data<float>();
  for (int64_t t = 0; t < 15; ++t) {
    double mean = 0, var = 0;
    for (int k = 0; k < 32; ++k) mean += p[t * 32 + k] / 32.0;
    for (int k = 0; k < 32; ++k) var += std::pow(p[t * 32 + k] - mean, 2) / 32.0;
    for (int k = 0; k < 32; ++k) p[t * 32 + k] = float((p[t * 32 + k] - mean) / std::sqrt(var));
  }
  for (double a : {0.5, 1.0, 4.0}) {
    for (double gamma : {1.0, 2.5}) {
      Tensor scaled = x.clone();
      for (int64_t i = 0; i < scaled.numel(); ++i) scaled.data<float>()[i] *= float(a);
      RunningStats stats = ratios(scaled, layer_norm(scaled, gamma));
      EXPECT_EQ(stats.count, 10);
      EXPECT_NEAR(stats.mean, gamma / a, 1e-4 * gamma / a) << "a " << a << " gamma " << gamma;
      EXPECT_NEAR(stats.min, gamma / a, 1e-4 * gamma / a);
      EXPECT_NEAR(stats.max, gamma / a, 1e-4 * gamma / a);
    }
  }
}

TEST(PlasticityStats, MergeEqualsOneStream) {
  RunningStats all, first, second;
  for (int i = 0; i < 50; ++i) {
    double v = std::sin(i * 0.7) * 3 + i * 0.01;
    all.add(v);
    (i < 20 ? first : second).add(v);
  }
  first.merge(second);
  EXPECT_EQ(first.count, all.count);
  EXPECT_NEAR(first.mean, all.mean, 1e-12);
  EXPECT_NEAR(first.std(), all.std(), 1e-12);
  EXPECT_EQ(first.min, all.min);
  EXPECT_EQ(first.max, all.max);
}

// ---- The meter on the tiny ViT against tools/make_plasticity_golden.py -------------

// The golden file, and the tiny ViT on `device`; images() hands its inputs over there.
struct Golden {
  explicit Golden(Device device) : device(device), model(nn::load_vit(data_path("tiny_vit.safetensors"), device)) {}
  Device device;
  nn::SafetensorsFile file = nn::read_safetensors(data_path("plasticity_golden.safetensors"));
  nn::LoadedVit model;
  const Tensor& at(const std::string& name) const { return file.at(name); }
  Tensor images(const std::string& name) const { return file.at(name).to(device); }
};

class PlasticityGolden : public OnDevice {};

// stats [depth, components, 4] (mean, std, min, max) and bounds [depth, components].
void expect_report(const peft::PlasticityReport& report, const Tensor& stats, const Tensor& bounds, size_t components) {
  ASSERT_EQ(report.layers.size(), size_t(stats.dim(0)) * components);
  const Tolerance ratio_tol{1e-5, 2e-4};
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const peft::LayerPlasticity& layer = report.layers[i];
    const std::string what =
        std::string("block ") + std::to_string(layer.block) + " " + peft::component_name(layer.component);
    const double* expected = stats.data<double>() + i * 4;
    const double actual[4] = {layer.ratios.mean, layer.ratios.std(), layer.ratios.min, layer.ratios.max};
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(actual[k], expected[k], ratio_tol.abs + ratio_tol.rel * std::fabs(expected[k]))
          << what << " stat " << k;
    const double bound = bounds.data<double>()[i];
    EXPECT_NEAR(layer.bound, bound, 1e-4 * bound) << what << " bound";
  }
}

TEST_P(PlasticityGolden, PaperProtocolMatchesPyTorch) {
  Golden golden(device());
  peft::PlasticityMeter meter(*golden.model.model, {peft::PlasticityProtocol::Paper, true});
  meter.add_batch(golden.images("images"));
  peft::PlasticityReport report = meter.report();
  EXPECT_EQ(report.images, 6);
  EXPECT_EQ(report.tokens, 17);
  expect_report(report, golden.at("paper.stats"), golden.at("paper.bounds"), 6);
  for (const peft::LayerPlasticity& layer : report.layers) EXPECT_EQ(layer.ratios.count, 15);
  ASSERT_EQ(report.components.size(), 6u);
  EXPECT_EQ(report.components[5].ratios.count, 30);  // "block" over both blocks
  EXPECT_NEAR(report.components[0].ratios.mean,
              0.5 * (golden.at("paper.stats").item(0) + golden.at("paper.stats").item(24)), 1e-4);
}

TEST_P(PlasticityGolden, PaperProtocolWithoutGeluMatchesPyTorch) {
  Golden golden(device());
  peft::PlasticityMeter meter(*golden.model.model, {peft::PlasticityProtocol::Paper, false});
  meter.add_batch(golden.images("images"));
  peft::PlasticityReport report = meter.report();
  EXPECT_FALSE(report.fc1_gelu);
  const Tensor& fc1 = golden.at("paper_no_gelu.fc1");
  for (int block = 0; block < 2; ++block) {
    const peft::LayerPlasticity& layer = report.layers[size_t(block) * 6 + 3];
    ASSERT_EQ(layer.component, peft::PlasticityComponent::Fc1);
    EXPECT_NEAR(layer.ratios.mean, fc1.item(block * 4), 2e-4 * fc1.item(block * 4));
    EXPECT_NEAR(layer.ratios.max, fc1.item(block * 4 + 3), 2e-4 * fc1.item(block * 4 + 3));
  }
}

TEST_P(PlasticityGolden, ReferenceProtocolMatchesPyTorch) {
  Golden golden(device());
  peft::PlasticityMeter meter(*golden.model.model, {peft::PlasticityProtocol::Reference, true});
  meter.add_paired_batch(golden.images("reference_images"), golden.images("images"));
  peft::PlasticityReport report = meter.report();
  EXPECT_FALSE(report.fc1_gelu);  // the reference code measures fc1 before GELU
  expect_report(report, golden.at("reference.stats"), golden.at("reference.bounds"), 5);
  for (const peft::LayerPlasticity& layer : report.layers) EXPECT_EQ(layer.ratios.count, 6);
}

TEST_P(PlasticityGolden, ProtocolsRejectTheOtherEntryPointAndBadImages) {
  Golden golden(device());
  peft::PlasticityMeter paper(*golden.model.model, {peft::PlasticityProtocol::Paper, true});
  EXPECT_THROW(paper.add_paired_batch(golden.images("images"), golden.images("images")), Error);
  EXPECT_THROW(paper.add_batch(Tensor::zeros({2, 1, 16, 16}, DType::F32, device())), Error);
  peft::PlasticityMeter reference(*golden.model.model, {peft::PlasticityProtocol::Reference, true});
  EXPECT_THROW(reference.add_batch(golden.images("images")), Error);
  EXPECT_THROW(reference.add_paired_batch(golden.images("images").rows(0, 3), golden.images("images")), Error);
  EXPECT_THROW(peft::parse_plasticity_protocol("papers"), Error);
  EXPECT_EQ(peft::parse_plasticity_protocol("reference"), peft::PlasticityProtocol::Reference);
}

VITUNE_ON_EVERY_DEVICE(PlasticityGolden);

}  // namespace
}  // namespace vitune::testing
