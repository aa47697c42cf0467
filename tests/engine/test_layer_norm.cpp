// Tests of the CPU LayerNorm forward and backward: against a plain double-precision
// reference written here, a float64 finite-difference check, bit-identical results for
// any thread count, a constant row, and errors on bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Shape;
using vitune::Tensor;
using vitune::testing::bitwise_equal;
using vitune::testing::dot;
using vitune::testing::random_normal;
using vitune::testing::tensors_close;
using vitune::testing::ThreadCount;
using vitune::testing::values;
namespace ops = vitune::ops;

constexpr double kEps = 1e-5;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 7;

// a + t * b as an f64 tensor of a's shape.
Tensor shifted(const Tensor& a, double t, const Tensor& b) {
  std::vector<double> va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i) va[i] += t * vb[i];
  return Tensor::from_vector(a.shape(), va, vitune::Device::cpu());
}

// The plain reference, all in double: forward outputs and the three gradients.
struct Reference {
  Tensor y, mean, rstd, dx, dweight, dbias;
};

Reference reference(const Tensor& x_t, const Tensor& w_t, const Tensor& b_t, const Tensor& dy_t,
                    double eps) {
  const int64_t cols = x_t.dim(-1), rows = x_t.numel() / cols;
  std::vector<double> x = values(x_t), w = values(w_t), b = values(b_t), dy = values(dy_t);
  std::vector<double> y(x.size()), mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows)),
      dx(x.size());
  std::vector<double> dw(size_t(cols), 0.0), db(size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0;
    for (int64_t c = 0; c < cols; ++c) m += x[size_t(r * cols + c)];
    m /= double(cols);
    double var = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double centred = x[size_t(r * cols + c)] - m;
      var += centred * centred;
    }
    var /= double(cols);
    double s = 1 / std::sqrt(var + eps);
    mean[size_t(r)] = m;
    rstd[size_t(r)] = s;
    // dx by the chain rule written out in full: d xhat_i / d x_j summed against g_i.
    for (int64_t j = 0; j < cols; ++j) {
      double xhat_j = (x[size_t(r * cols + j)] - m) * s;
      double sum = 0;
      for (int64_t i = 0; i < cols; ++i) {
        double xhat_i = (x[size_t(r * cols + i)] - m) * s;
        double jacobian =
            s * ((i == j ? 1.0 : 0.0) - 1.0 / double(cols) - xhat_i * xhat_j / double(cols));
        sum += dy[size_t(r * cols + i)] * w[size_t(i)] * jacobian;
      }
      dx[size_t(r * cols + j)] = sum;
      y[size_t(r * cols + j)] = xhat_j * w[size_t(j)] + b[size_t(j)];
      dw[size_t(j)] += dy[size_t(r * cols + j)] * xhat_j;
      db[size_t(j)] += dy[size_t(r * cols + j)];
    }
  }
  Reference ref;
  ref.y = Tensor::from_vector(x_t.shape(), y, vitune::Device::cpu());
  ref.mean = Tensor::from_vector({rows}, mean, vitune::Device::cpu());
  ref.rstd = Tensor::from_vector({rows}, rstd, vitune::Device::cpu());
  ref.dx = Tensor::from_vector(x_t.shape(), dx, vitune::Device::cpu());
  ref.dweight = Tensor::from_vector({cols}, dw, vitune::Device::cpu());
  ref.dbias = Tensor::from_vector({cols}, db, vitune::Device::cpu());
  return ref;
}

// Forward and backward of the kernel against the reference. dweight and dbias start
// from nonzero values to check that they accumulate.
void check_against_reference(Shape shape, DType dtype, vitune::testing::Tolerance forward_tol,
                             vitune::testing::Tolerance grad_tol) {
  const int64_t cols = shape.back();
  Tensor x = random_normal(shape, dtype, kSeed, 1, 0.5, 2), dy = random_normal(shape, dtype, kSeed, 2);
  Tensor w = random_normal({cols}, dtype, kSeed, 3, 1, 0.5), b = random_normal({cols}, dtype, kSeed, 4);
  Tensor dw0 = random_normal({cols}, dtype, kSeed, 5), db0 = random_normal({cols}, dtype, kSeed, 6);
  Tensor mean, rstd;
  Tensor y = ops::layer_norm_forward(x, w, b, kEps, mean, rstd);
  Tensor dx, dw = dw0.clone(), db = db0.clone();
  ops::layer_norm_backward(dy, x, w, mean, rstd, &dx, &dw, &db);

  Reference ref = reference(x, w, b, dy, kEps);
  EXPECT_EQ(y.dtype(), dtype);
  EXPECT_EQ(dx.dtype(), dtype);
  EXPECT_TRUE(tensors_close(y, ref.y, forward_tol, "y"));
  EXPECT_TRUE(tensors_close(mean, ref.mean, forward_tol, "mean"));
  EXPECT_TRUE(tensors_close(rstd, ref.rstd, forward_tol, "rstd"));
  EXPECT_TRUE(tensors_close(dx, ref.dx, grad_tol, "dx"));
  Tensor dw_expected = shifted(ref.dweight, 1, dw0), db_expected = shifted(ref.dbias, 1, db0);
  EXPECT_TRUE(tensors_close(dw, dw_expected, grad_tol, "dweight"));
  EXPECT_TRUE(tensors_close(db, db_expected, grad_tol, "dbias"));
}

TEST(LayerNormTest, MatchesReferenceF32) {
  // 70 columns: a full block of the column-parallel reduction plus a partial one.
  check_against_reference({37, 70}, DType::F32, vitune::testing::kF32Forward,
                          vitune::testing::kF32Gradient);
}

TEST(LayerNormTest, MatchesReferenceF64) {
  check_against_reference({37, 70}, DType::F64, vitune::testing::kF64Exact,
                          vitune::testing::kF64Exact);
}

TEST(LayerNormTest, MatchesReferenceForThreeDimensionalInput) {
  check_against_reference({3, 5, 24}, DType::F64, vitune::testing::kF64Exact,
                          vitune::testing::kF64Exact);
}

// Central difference of t -> f(t) at 0 with step 1e-6.
double central_difference(const std::function<double(double)>& f) {
  const double h = 1e-6;
  return (f(h) - f(-h)) / (2 * h);
}

TEST(LayerNormTest, BackwardMatchesFiniteDifferencesF64) {
  const DType f64 = DType::F64;
  Tensor x = random_normal({4, 9}, f64, kSeed, 11, 0.3, 1.5), w = random_normal({9}, f64, kSeed, 12, 1, 0.5);
  Tensor b = random_normal({9}, f64, kSeed, 13), dy = random_normal({4, 9}, f64, kSeed, 14);
  Tensor vx = random_normal({4, 9}, f64, kSeed, 15);
  Tensor vw = random_normal({9}, f64, kSeed, 16);
  Tensor vb = random_normal({9}, f64, kSeed, 17);
  // L(x, w, b) = sum(dy * y), so its gradient is what the backward returns for dy.
  auto loss = [&](const Tensor& xs, const Tensor& ws, const Tensor& bs) {
    Tensor mean, rstd;
    return dot(dy, ops::layer_norm_forward(xs, ws, bs, kEps, mean, rstd));
  };
  Tensor mean, rstd;
  ops::layer_norm_forward(x, w, b, kEps, mean, rstd);
  Tensor dx, dw = Tensor::zeros({9}, f64, vitune::Device::cpu()), db = Tensor::zeros({9}, f64, vitune::Device::cpu());
  ops::layer_norm_backward(dy, x, w, mean, rstd, &dx, &dw, &db);

  const double along_x =
      central_difference([&](double t) { return loss(shifted(x, t, vx), w, b); });
  const double along_w =
      central_difference([&](double t) { return loss(x, shifted(w, t, vw), b); });
  const double along_b =
      central_difference([&](double t) { return loss(x, w, shifted(b, t, vb)); });
  EXPECT_NEAR(along_x, dot(dx, vx), 1e-6 * std::fabs(dot(dx, vx)));
  EXPECT_NEAR(along_w, dot(dw, vw), 1e-6 * std::fabs(dot(dw, vw)));
  EXPECT_NEAR(along_b, dot(db, vb), 1e-6 * std::fabs(dot(db, vb)));
}

TEST(LayerNormTest, ResultsDoNotDependOnThreadCount) {
  Tensor x = random_normal({301, 200}, DType::F32, kSeed, 21);
  Tensor dy = random_normal({301, 200}, DType::F32, kSeed, 22);
  Tensor w = random_normal({200}, DType::F32, kSeed, 23), b = random_normal({200}, DType::F32, kSeed, 24);
  struct Run {
    Tensor y, mean, rstd, dx, dw, db;
  };
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    Run r;
    r.y = ops::layer_norm_forward(x, w, b, kEps, r.mean, r.rstd);
    r.dw = Tensor::zeros({200}, DType::F32, vitune::Device::cpu());
    r.db = Tensor::zeros({200}, DType::F32, vitune::Device::cpu());
    ops::layer_norm_backward(dy, x, w, r.mean, r.rstd, &r.dx, &r.dw, &r.db);
    return r;
  };
  Run one = run(1);
  for (int threads : {2, 3}) {
    Run many = run(threads);
    EXPECT_TRUE(bitwise_equal(one.y, many.y)) << threads;
    EXPECT_TRUE(bitwise_equal(one.mean, many.mean)) << threads;
    EXPECT_TRUE(bitwise_equal(one.rstd, many.rstd)) << threads;
    EXPECT_TRUE(bitwise_equal(one.dx, many.dx)) << threads;
    EXPECT_TRUE(bitwise_equal(one.dw, many.dw)) << threads;
    EXPECT_TRUE(bitwise_equal(one.db, many.db)) << threads;
  }
}

TEST(LayerNormTest, ConstantRowGivesTheBias) {
  Tensor x = Tensor::full({2, 6}, 3.25, DType::F32, vitune::Device::cpu());
  Tensor w = random_normal({6}, DType::F32, kSeed, 31), b = random_normal({6}, DType::F32, kSeed, 32);
  Tensor mean, rstd;
  Tensor y = ops::layer_norm_forward(x, w, b, 1e-6, mean, rstd);
  EXPECT_TRUE(bitwise_equal(y.rows(0, 1).reshape({6}), b));
  EXPECT_TRUE(bitwise_equal(y.rows(1, 2).reshape({6}), b));
  EXPECT_EQ(mean.item(0), 3.25);
  EXPECT_FLOAT_EQ(float(rstd.item(0)), float(1 / std::sqrt(1e-6)));
  Tensor dx, dw = Tensor::zeros({6}, DType::F32, vitune::Device::cpu()), db = Tensor::zeros({6}, DType::F32, vitune::Device::cpu());
  ops::layer_norm_backward(random_normal({2, 6}, DType::F32, kSeed, 33), x, w, mean, rstd, &dx, &dw, &db);
  for (double v : values(dx)) EXPECT_TRUE(std::isfinite(v));
  for (int64_t c = 0; c < 6; ++c) EXPECT_EQ(dw.item(c), 0.0) << c;  // xhat is 0
}

TEST(LayerNormTest, GradientsNobodyAskedForAreSkipped) {
  Tensor x = random_normal({5, 8}, DType::F64, kSeed, 41), dy = random_normal({5, 8}, DType::F64, kSeed, 42);
  Tensor w = random_normal({8}, DType::F64, kSeed, 43), b = random_normal({8}, DType::F64, kSeed, 44);
  Tensor mean, rstd;
  ops::layer_norm_forward(x, w, b, kEps, mean, rstd);
  Tensor dx_all, dw_all = Tensor::zeros({8}, DType::F64, vitune::Device::cpu()), db_all = Tensor::zeros({8}, DType::F64, vitune::Device::cpu());
  ops::layer_norm_backward(dy, x, w, mean, rstd, &dx_all, &dw_all, &db_all);

  Tensor dx_only;
  ops::layer_norm_backward(dy, x, w, mean, rstd, &dx_only, nullptr, nullptr);
  EXPECT_TRUE(bitwise_equal(dx_only, dx_all));
  Tensor dw_only = Tensor::zeros({8}, DType::F64, vitune::Device::cpu());
  ops::layer_norm_backward(dy, x, w, mean, rstd, nullptr, &dw_only, nullptr);
  EXPECT_TRUE(bitwise_equal(dw_only, dw_all));
  // A given dx of the right shape is written in place, whatever it held.
  Tensor dx_given = Tensor::full({5, 8}, 9.0, DType::F64, vitune::Device::cpu());
  ops::layer_norm_backward(dy, x, w, mean, rstd, &dx_given, nullptr, nullptr);
  EXPECT_TRUE(bitwise_equal(dx_given, dx_all));
}

TEST(LayerNormTest, BadArgumentsThrow) {
  Tensor x = random_normal({4, 6}, DType::F32, kSeed, 51), w = random_normal({6}, DType::F32, kSeed, 52);
  Tensor b = random_normal({6}, DType::F32, kSeed, 53);
  Tensor mean, rstd;
  EXPECT_THROW(ops::layer_norm_forward(x, random_normal({5}, DType::F32, kSeed, 54), b, kEps, mean, rstd),
               Error);
  EXPECT_THROW(ops::layer_norm_forward(x, w.to(DType::F64), b, kEps, mean, rstd), Error);
  EXPECT_THROW(ops::layer_norm_forward(x, w, b, 0.0, mean, rstd), Error);
  EXPECT_THROW(ops::layer_norm_forward(x, w, b, std::nan(""), mean, rstd), Error);
  EXPECT_THROW(ops::layer_norm_forward(Tensor::full({}, 1.0, DType::F32, vitune::Device::cpu()), w, b, kEps, mean, rstd), Error);
  EXPECT_THROW(ops::layer_norm_forward(Tensor::zeros({4, 6}, DType::I64, vitune::Device::cpu()), w, b, kEps, mean, rstd),
               Error);
  try {
    ops::layer_norm_forward(x, random_normal({5}, DType::F32, kSeed, 54), b, kEps, mean, rstd);
    ADD_FAILURE() << "a wrong weight shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("weight"), std::string::npos) << e.what();
  }

  ops::layer_norm_forward(x, w, b, kEps, mean, rstd);
  Tensor dx, dw = Tensor::zeros({6}, DType::F32, vitune::Device::cpu()), wrong = Tensor::zeros({5}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(ops::layer_norm_backward(random_normal({4, 5}, DType::F32, kSeed, 55), x, w, mean, rstd,
                                        &dx, nullptr, nullptr),
               Error);
  EXPECT_THROW(ops::layer_norm_backward(x, x, w, random_normal({3}, DType::F32, kSeed, 56), rstd, &dx,
                                        nullptr, nullptr),
               Error);
  EXPECT_THROW(ops::layer_norm_backward(x, x, w, mean, rstd, nullptr, &wrong, nullptr), Error);
  Tensor dx_wrong = Tensor::zeros({4, 6}, DType::F64, vitune::Device::cpu());
  EXPECT_THROW(ops::layer_norm_backward(x, x, w, mean, rstd, &dx_wrong, nullptr, nullptr), Error);
}

}  // namespace
