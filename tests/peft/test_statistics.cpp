// The statistics behind the sweep report: means and sample standard deviations by hand,
// the incomplete beta function against closed forms, the t distribution against
// closed forms (df 1 and 2), table quantiles and a plain numerical integral of its
// density, and Welch's test against the worked examples of its Wikipedia article.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/error.h"
#include "peft/statistics.h"

namespace vitune::peft {
namespace {

const double kPi = std::acos(-1.0);

TEST(Statistics, MeanAndSampleStdByHand) {
  // {2, 4, 4, 4, 5, 5, 7, 9}: mean 5, squared deviations sum to 32, 32 / 7 = 4.5714...
  std::vector<double> sample{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(sample), 5.0);
  EXPECT_NEAR(sample_std(sample), std::sqrt(32.0 / 7.0), 1e-15);
  EXPECT_THROW(mean({}), Error);
  EXPECT_THROW(sample_std({1.0}), Error);
}

TEST(Statistics, IncompleteBetaMatchesClosedForms) {
  for (double x : {0.0, 0.01, 0.2, 0.5, 0.77, 0.99, 1.0}) {
    EXPECT_NEAR(regularized_incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-14) << x;          // I_x(a,1) = x^a
    EXPECT_NEAR(regularized_incomplete_beta(1, 2.5, x), 1 - std::pow(1 - x, 2.5), 1e-14) << x;  // I_x(1,b)
    // I_x(1/2, 1/2) = (2/pi) asin(sqrt(x)), the arcsine distribution.
    EXPECT_NEAR(regularized_incomplete_beta(0.5, 0.5, x), 2 / kPi * std::asin(std::sqrt(x)), 1e-13) << x;
    EXPECT_NEAR(regularized_incomplete_beta(2.5, 3.5, x) + regularized_incomplete_beta(3.5, 2.5, 1 - x), 1.0, 1e-14);
  }
  EXPECT_NEAR(regularized_incomplete_beta(7, 7, 0.5), 0.5, 1e-14);  // symmetry
  // Reference values from an independent arbitrary-precision evaluation (mpmath.betainc).
  EXPECT_NEAR(regularized_incomplete_beta(2.5, 3.5, 0.3), 0.2967529892956664, 1e-13);
  EXPECT_NEAR(regularized_incomplete_beta(30, 40, 0.45), 0.6447480085585681, 1e-12);
  EXPECT_THROW(regularized_incomplete_beta(0, 1, 0.5), Error);
  EXPECT_THROW(regularized_incomplete_beta(1, 1, 1.5), Error);
}

// The t density integrated from 0 to |t| with Simpson's rule: P(|T| >= |t|) = 1 - 2 * that.
double two_sided_p_by_integration(double t, double df) {
  const double norm = std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2)) / std::sqrt(df * kPi);
  auto density = [&](double x) { return norm * std::pow(1 + x * x / df, -(df + 1) / 2); };
  const int intervals = 20000;
  const double h = std::fabs(t) / intervals;
  double sum = density(0) + density(std::fabs(t));
  for (int i = 1; i < intervals; ++i) sum += (i % 2 ? 4 : 2) * density(i * h);
  return 1 - 2 * sum * h / 3;
}

TEST(Statistics, StudentTMatchesClosedFormsQuantilesAndIntegration) {
  for (double t : {-30.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.0, 4.0, 100.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / kPi, 1e-14) << t;                // Cauchy
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-14) << t;    // df = 2
  }
  // Table quantiles (two-sided): t = 2.228 at df 10 and 2.042 at df 30 give p = 0.05,
  // 4.032 at df 5 gives 0.01, 1.725 at df 20 gives 0.10 (the tables round t to 3 decimals).
  EXPECT_NEAR(student_t_two_sided_p(2.228, 10), 0.05, 1e-4);
  EXPECT_NEAR(student_t_two_sided_p(-2.228, 10), 0.05, 1e-4);
  EXPECT_NEAR(student_t_two_sided_p(2.042, 30), 0.05, 1e-4);
  EXPECT_NEAR(student_t_two_sided_p(4.032, 5), 0.01, 1e-5);
  EXPECT_NEAR(student_t_two_sided_p(1.725, 20), 0.10, 1e-4);
  EXPECT_NEAR(student_t_cdf(2.228, 10), 0.975, 1e-4);
  // Fractional degrees of freedom, as Welch's test produces them.
  for (auto [t, df] : {std::pair{0.5, 3.5}, std::pair{3.0, 7.3}, std::pair{1.2, 24.99}}) {
    EXPECT_NEAR(student_t_two_sided_p(t, df), two_sided_p_by_integration(t, df), 1e-10) << t << " " << df;
  }
  EXPECT_EQ(student_t_two_sided_p(INFINITY, 4), 0.0);
  EXPECT_EQ(student_t_two_sided_p(0, 4), 1.0);
  EXPECT_THROW(student_t_cdf(1, 0), Error);
  EXPECT_THROW(student_t_cdf(NAN, 3), Error);
}

TEST(Statistics, WelchMatchesWorkedExamples) {
  // Wikipedia, "Welch's t-test", examples 1 and 2: t = -2.46, nu = 25.0, p = 0.021 and
  // t = -1.57, nu = 9.9, p = 0.149 (rounded there; the tight values come from an
  // independent arbitrary-precision computation of the same formulas).
  std::vector<double> a1{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  std::vector<double> a2{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  WelchTest first = welch_t_test(a1, a2);
  EXPECT_NEAR(first.t, -2.455356398286006, 1e-12);
  EXPECT_NEAR(first.df, 24.98852929023142, 1e-10);
  EXPECT_NEAR(first.p, 0.021378001462867, 1e-12);

  std::vector<double> b1{17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8};
  std::vector<double> b2{21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8,
                         20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5, 21.5, 21.8};
  WelchTest second = welch_t_test(b1, b2);
  EXPECT_NEAR(second.t, -1.5654335235985073, 1e-12);
  EXPECT_NEAR(second.df, 9.904741248650831, 1e-10);
  EXPECT_NEAR(second.p, 0.14884169660532742, 1e-12);

  // By hand: {1..5} has mean 3, variance 2.5; {2,4,..,10} mean 6, variance 10. The squared
  // standard errors are 0.5 and 2, so t = -3 / sqrt(2.5) and df = 2.5^2 / (0.5^2/4 + 2^2/4).
  WelchTest by_hand = welch_t_test({1, 2, 3, 4, 5}, {2, 4, 6, 8, 10});
  EXPECT_NEAR(by_hand.t, -3 / std::sqrt(2.5), 1e-14);
  EXPECT_NEAR(by_hand.df, 6.25 / 1.0625, 1e-12);
  EXPECT_NEAR(by_hand.p, two_sided_p_by_integration(by_hand.t, by_hand.df), 1e-10);
}

TEST(Statistics, WelchRefusesWhatItCannotTest) {
  EXPECT_FALSE(welch_test_defined({1.0}, {1.0, 2.0}));
  EXPECT_FALSE(welch_test_defined({0.5, 0.5}, {0.7, 0.7}));
  EXPECT_TRUE(welch_test_defined({0.5, 0.5}, {0.7, 0.8}));
  EXPECT_THROW(welch_t_test({0.5, 0.5}, {0.7, 0.7}), Error);
  EXPECT_THROW(welch_t_test({0.5}, {0.7, 0.8}), Error);
}

}  // namespace
}  // namespace vitune::peft
