// Summary statistics, the regularised incomplete beta function (continued fraction,
// evaluated with the modified Lentz method), the Student t distribution and Welch's test.
#include "peft/statistics.h"

#include <cmath>

#include "engine/error.h"

namespace vitune::peft {

double mean(const std::vector<double>& sample) {
  VITUNE_CHECK(!sample.empty(), "mean: the sample is empty");
  double sum = 0;
  for (double v : sample) sum += v;
  return sum / double(sample.size());
}

double sample_std(const std::vector<double>& sample) {
  VITUNE_CHECK(sample.size() >= 2, "sample_std: needs at least two values, got ", sample.size());
  const double m = mean(sample);
  double squares = 0;
  for (double v : sample) squares += (v - m) * (v - m);
  return std::sqrt(squares / double(sample.size() - 1));
}

namespace {

// The continued fraction of I_x(a, b) (x^a (1-x)^b / (a B(a,b)) times its value):
//   1 / (1 + d1 / (1 + d2 / (1 + ...))),
//   d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),  d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)).
// It converges quickly for x < (a+1)/(a+b+2). Modified Lentz: the value is the product
// of the ratios C_j D_j of successive convergents, kept away from division by zero.
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kTolerance = 1e-15;
  constexpr int kMaxTerms = 10000;
  double f = 1, c = 1, d = 0;
  for (int j = 1; j <= kMaxTerms; ++j) {
    const int m = j / 2;
    const double term = j % 2 == 1 ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                                    : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 + term * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + term / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double ratio = c * d;
    f *= ratio;
    if (std::fabs(ratio - 1) < kTolerance) return 1 / f;
  }
  throw Error(cat("regularized_incomplete_beta: the continued fraction did not converge for a = ", a, ", b = ", b,
                  ", x = ", x));
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  VITUNE_CHECK(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b),
               "regularized_incomplete_beta: a and b must be positive and finite, got a = ", a, ", b = ", b);
  VITUNE_CHECK(x >= 0 && x <= 1, "regularized_incomplete_beta: x must be in [0, 1], got ", x);
  if (x == 0 || x == 1) return x;
  // I_x(a, b) = 1 - I_{1-x}(b, a): evaluate the fraction on the side where it converges.
  if (x > (a + 1) / (a + b + 2)) return 1 - regularized_incomplete_beta(b, a, 1 - x);
  const double log_beta = std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
  const double front = std::exp(a * std::log(x) + b * std::log1p(-x) - log_beta) / a;
  return front * incomplete_beta_fraction(a, b, x);
}

// For T ~ t(df): P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2).
double student_t_two_sided_p(double t, double df) {
  VITUNE_CHECK(!std::isnan(t), "student_t: the t statistic is NaN");
  VITUNE_CHECK(df > 0 && std::isfinite(df), "student_t: degrees of freedom must be positive and finite, got ", df);
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * student_t_two_sided_p(t, df);
  return t >= 0 ? 1 - tail : tail;
}

bool welch_test_defined(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() >= 2 && b.size() >= 2 && (sample_std(a) > 0 || sample_std(b) > 0);
}

WelchTest welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  VITUNE_CHECK(a.size() >= 2 && b.size() >= 2, "welch_t_test: needs at least two values per sample, got ", a.size(),
               " and ", b.size());
  VITUNE_CHECK(welch_test_defined(a, b), "welch_t_test: both samples have zero variance, so t is undefined");
  const double na = double(a.size()), nb = double(b.size());
  const double sa = sample_std(a), sb = sample_std(b);
  const double va = sa * sa / na, vb = sb * sb / nb;  // squared standard errors of the two means
  WelchTest result;
  result.t = (mean(a) - mean(b)) / std::sqrt(va + vb);
  result.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  result.p = student_t_two_sided_p(result.t, result.df);
  return result;
}

}  // namespace vitune::peft
