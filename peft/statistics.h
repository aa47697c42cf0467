// Summary statistics and Welch's unequal-variance t-test for comparing finetuning runs
// across seeds: mean, sample standard deviation, the regularised incomplete beta
// function and the Student t distribution built on it (no external math library).
#pragma once

#include <vector>

namespace vitune::peft {

// The arithmetic mean; throws vitune::Error for an empty sample.
double mean(const std::vector<double>& sample);
// The sample standard deviation (divisor n - 1); throws for fewer than two values.
double sample_std(const std::vector<double>& sample);

// I_x(a, b) = B(x; a, b) / B(a, b) for a, b > 0 and x in [0, 1].
double regularized_incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with df > 0 degrees of freedom.
double student_t_cdf(double t, double df);
// P(|T| >= |t|): the two-sided p-value of a t statistic.
double student_t_two_sided_p(double t, double df);

struct WelchTest {
  double t = 0;   // (mean_a - mean_b) / sqrt(s_a^2/n_a + s_b^2/n_b)
  double df = 0;  // Welch-Satterthwaite degrees of freedom
  double p = 1;   // two-sided
};

// Whether Welch's test is defined for these samples: at least two values each and not
// both without spread (then the standard error is zero and t is undefined).
bool welch_test_defined(const std::vector<double>& a, const std::vector<double>& b);
// Welch's t-test of mean(a) == mean(b); throws vitune::Error where it is not defined.
WelchTest welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace vitune::peft
