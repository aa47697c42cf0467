// Tests of the CPU cross-entropy with label smoothing and its backward: against a plain
// double-precision reference written here (smoothing 0 and 0.1), a float64
// finite-difference check, bit-identical results for any thread count, equal and huge
// logits, and errors for bad labels and shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::testing::bitwise_equal;
using vitune::testing::random_normal;
using vitune::testing::tensors_close;
using vitune::testing::ThreadCount;
using vitune::testing::values;
namespace ops = vitune::ops;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 9;

// Labels b * 7 mod classes, a fixed spread over the classes.
Tensor spread_labels(int64_t batch, int64_t classes) {
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) labels[size_t(b)] = (b * 7) % classes;
  return Tensor::from_vector({batch}, labels, vitune::Device::cpu());
}

struct Reference {
  double loss;
  Tensor probs, dlogits;
};

// The definition written out: target = (1-s) onehot + s/C, logp by log-softmax,
// loss = mean_b -sum_c target_c logp_c, dlogits = (softmax - target) * scale / B.
Reference reference(const Tensor& logits_t, const Tensor& labels_t, double s, double grad_scale) {
  const int64_t batch = logits_t.dim(0), classes = logits_t.dim(1);
  std::vector<double> x = values(logits_t), probs(x.size()), dlogits(x.size());
  std::vector<int64_t> labels = labels_t.to_vector<int64_t>();
  double total = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const double* xb = x.data() + b * classes;
    double max = xb[0];
    for (int64_t c = 1; c < classes; ++c) max = std::max(max, xb[c]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(xb[c] - max);
    for (int64_t c = 0; c < classes; ++c) {
      double logp = xb[c] - max - std::log(sum);
      double target = (c == labels[size_t(b)] ? 1 - s : 0.0) + s / double(classes);
      total -= target * logp;
      probs[size_t(b * classes + c)] = std::exp(logp);
      dlogits[size_t(b * classes + c)] = (std::exp(logp) - target) * grad_scale / double(batch);
    }
  }
  return {total / double(batch), Tensor::from_vector(logits_t.shape(), probs, vitune::Device::cpu()),
          Tensor::from_vector(logits_t.shape(), dlogits, vitune::Device::cpu())};
}

void check_against_reference(DType dtype, double smoothing, vitune::testing::Tolerance tol) {
  Tensor logits = random_normal({9, 11}, dtype, kSeed, 1, 0, 3), labels = spread_labels(9, 11);
  Tensor probs;
  double loss = ops::cross_entropy_forward(logits, labels, smoothing, probs);
  Tensor dlogits = ops::cross_entropy_backward(probs, labels, smoothing, 0.7);
  Reference ref = reference(logits, labels, smoothing, 0.7);
  EXPECT_NEAR(loss, ref.loss, tol.abs + tol.rel * std::fabs(ref.loss));
  EXPECT_EQ(probs.dtype(), dtype);
  EXPECT_EQ(dlogits.dtype(), dtype);
  EXPECT_TRUE(tensors_close(probs, ref.probs, tol, "probs"));
  EXPECT_TRUE(tensors_close(dlogits, ref.dlogits, tol, "dlogits"));
}

TEST(CrossEntropyTest, MatchesReferenceF32) {
  check_against_reference(DType::F32, 0.0, vitune::testing::kF32Forward);
  check_against_reference(DType::F32, 0.1, vitune::testing::kF32Forward);
}

TEST(CrossEntropyTest, MatchesReferenceF64) {
  check_against_reference(DType::F64, 0.0, vitune::testing::kF64Exact);
  check_against_reference(DType::F64, 0.1, vitune::testing::kF64Exact);
}

TEST(CrossEntropyTest, BackwardMatchesFiniteDifferencesF64) {
  for (double smoothing : {0.0, 0.1}) {
    Tensor logits = random_normal({4, 6}, DType::F64, kSeed, 11, 0, 2), labels = spread_labels(4, 6);
    Tensor v = random_normal({4, 6}, DType::F64, kSeed, 12);
    const double grad_scale = 0.7;
    auto loss_along = [&](double t) {
      std::vector<double> xs = values(logits), vs = values(v);
      for (size_t i = 0; i < xs.size(); ++i) xs[i] += t * vs[i];
      Tensor probs;
      return grad_scale * ops::cross_entropy_forward(Tensor::from_vector(logits.shape(), xs, vitune::Device::cpu()),
                                                     labels, smoothing, probs);
    };
    const double h = 1e-6;
    const double numeric = (loss_along(h) - loss_along(-h)) / (2 * h);
    Tensor probs;
    ops::cross_entropy_forward(logits, labels, smoothing, probs);
    std::vector<double> grad =
        values(ops::cross_entropy_backward(probs, labels, smoothing, grad_scale));
    std::vector<double> vv = values(v);
    double analytic = 0;
    for (size_t i = 0; i < grad.size(); ++i) analytic += grad[i] * vv[i];
    EXPECT_NEAR(numeric, analytic, 1e-6 * std::fabs(analytic)) << "smoothing " << smoothing;
  }
}

TEST(CrossEntropyTest, ResultsDoNotDependOnThreadCount) {
  Tensor logits = random_normal({301, 100}, DType::F32, kSeed, 21, 0, 3), labels = spread_labels(301, 100);
  struct Run {
    double loss;
    Tensor probs, dlogits;
  };
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    Run r;
    r.loss = ops::cross_entropy_forward(logits, labels, 0.1, r.probs);
    r.dlogits = ops::cross_entropy_backward(r.probs, labels, 0.1, 1.0);
    return r;
  };
  Run one = run(1);
  for (int threads : {2, 3}) {
    Run many = run(threads);
    EXPECT_EQ(one.loss, many.loss) << threads;
    EXPECT_TRUE(bitwise_equal(one.probs, many.probs)) << threads;
    EXPECT_TRUE(bitwise_equal(one.dlogits, many.dlogits)) << threads;
  }
}

TEST(CrossEntropyTest, EqualLogitsGiveLogOfClassCount) {
  for (double smoothing : {0.0, 0.1}) {
    Tensor probs;
    double loss = ops::cross_entropy_forward(Tensor::full({3, 10}, 42.0, DType::F32, vitune::Device::cpu()), spread_labels(3, 10),
                                             smoothing, probs);
    EXPECT_NEAR(loss, std::log(10.0), 1e-6) << smoothing;
    for (int64_t i = 0; i < probs.numel(); ++i) EXPECT_FLOAT_EQ(float(probs.item(i)), 0.1f);
  }
}

TEST(CrossEntropyTest, HugeLogitsDoNotOverflow) {
  Tensor logits = Tensor::from_vector<float>({2, 3}, {1e4f, 0, -1e4f, 1e4f, 0, -1e4f}, vitune::Device::cpu());
  Tensor labels = Tensor::from_vector<int64_t>({2}, {0, 2}, vitune::Device::cpu());
  Tensor probs;
  // Row 0 is certain and right (loss 0), row 1 certain and wrong (loss 2e4).
  EXPECT_NEAR(ops::cross_entropy_forward(logits, labels, 0.0, probs), 1e4, 1e-6);
  // With s = 0.1 and C = 3: 0.9 (lse - x_label) + 0.1 (lse - mean x), lse = 1e4, mean x = 0.
  EXPECT_NEAR(ops::cross_entropy_forward(logits, labels, 0.1, probs), (1e3 + 19e3) / 2, 1e-6);
  EXPECT_TRUE(tensors_close(probs, Tensor::from_vector<double>({2, 3}, {1, 0, 0, 1, 0, 0}, vitune::Device::cpu()),
                            vitune::testing::kF32Forward, "probs"));
  Tensor dlogits = ops::cross_entropy_backward(probs, labels, 0.0, 1.0);
  EXPECT_TRUE(tensors_close(dlogits, Tensor::from_vector<double>({2, 3}, {0, 0, 0, 0.5, 0, -0.5}, vitune::Device::cpu()),
                            vitune::testing::kF32Forward, "dlogits"));
}

TEST(CrossEntropyTest, OutOfRangeLabelNamesRowAndValue) {
  Tensor logits = random_normal({4, 5}, DType::F32, kSeed, 31), probs;
  for (int64_t bad : {int64_t(5), int64_t(-1)}) {
    Tensor labels = Tensor::from_vector<int64_t>({4}, {0, 1, bad, 3}, vitune::Device::cpu());
    try {
      ops::cross_entropy_forward(logits, labels, 0.0, probs);
      ADD_FAILURE() << "label " << bad << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("row 2"), std::string::npos) << message;
      EXPECT_NE(message.find("label " + std::to_string(bad)), std::string::npos) << message;
    }
    EXPECT_THROW(ops::cross_entropy_backward(Tensor::full({4, 5}, 0.2, DType::F32, vitune::Device::cpu()), labels, 0.0, 1.0), Error);
  }
}

TEST(CrossEntropyTest, BadArgumentsThrow) {
  Tensor logits = random_normal({4, 5}, DType::F32, kSeed, 41), labels = spread_labels(4, 5), probs;
  EXPECT_THROW(ops::cross_entropy_forward(logits, labels.to(DType::F32), 0.0, probs), Error);
  EXPECT_THROW(ops::cross_entropy_forward(logits, Tensor::zeros({4}, DType::I32, vitune::Device::cpu()), 0.0, probs),
               Error);
  EXPECT_THROW(ops::cross_entropy_forward(logits, spread_labels(3, 5), 0.0, probs), Error);
  EXPECT_THROW(ops::cross_entropy_forward(random_normal({20}, DType::F32, kSeed, 42), labels, 0.0, probs),
               Error);
  EXPECT_THROW(ops::cross_entropy_forward(Tensor::zeros({0, 5}, DType::F32, vitune::Device::cpu()), spread_labels(0, 5), 0.0, probs),
               Error);
  EXPECT_THROW(ops::cross_entropy_forward(logits, labels, 1.5, probs), Error);
  EXPECT_THROW(ops::cross_entropy_forward(logits, labels, -0.1, probs), Error);
  EXPECT_THROW(ops::cross_entropy_backward(Tensor::zeros({4, 5}, DType::I64, vitune::Device::cpu()), labels, 0.0, 1.0),
               Error);
}

}  // namespace
