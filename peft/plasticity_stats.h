// Running summary of a stream of ratios: count, mean, population standard deviation,
// minimum and maximum, in double (Welford's update; Chan's formula to merge two).
#pragma once

#include <cstdint>
#include <limits>

namespace vitune::peft {

struct RunningStats {
  int64_t count = 0;
  double mean = 0;                // 0 when empty
  double squared_deviations = 0;  // sum of (value - mean)^2
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void add(double value);
  void merge(const RunningStats& other);
  // Population standard deviation (numpy's std with ddof 0); 0 when empty.
  double std() const;
};

}  // namespace vitune::peft
