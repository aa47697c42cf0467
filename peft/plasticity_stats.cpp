// RunningStats: Welford's one-pass update and Chan et al.'s pairwise merge, which avoid
// the cancellation of E[v^2] - E[v]^2.
#include "peft/plasticity_stats.h"

#include <algorithm>
#include <cmath>

namespace vitune::peft {

void RunningStats::add(double value) {
  ++count;
  const double delta = value - mean;
  mean += delta / double(count);
  squared_deviations += delta * (value - mean);
  min = std::min(min, value);
  max = std::max(max, value);
}

void RunningStats::merge(const RunningStats& other) {
  if (other.count == 0) return;
  if (count == 0) {
    *this = other;
    return;
  }
  const double total = double(count + other.count);
  const double delta = other.mean - mean;
  mean += delta * double(other.count) / total;
  squared_deviations += other.squared_deviations + delta * delta * double(count) * double(other.count) / total;
  count += other.count;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
}

double RunningStats::std() const { return count > 0 ? std::sqrt(squared_deviations / double(count)) : 0.0; }

}  // namespace vitune::peft
