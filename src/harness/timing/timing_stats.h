// Summary statistics of a timing sample: median, mean, min, max, standard deviation
// and the relative standard error of the median.
#pragma once

#include <span>
#include <vector>

#include "core/json.h"

namespace solbench::harness {

struct TimingStats {
  int count = 0;
  double median_ms = 0;
  double mean_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double stddev_ms = 0;  // sample standard deviation (n - 1)
  // Relative standard error of the median: sqrt(pi/2) * stddev / sqrt(n) / median
  // (the large-sample approximation for roughly normal samples). 0 for n < 2.
  double rse = 0;

  json to_json() const;
  static TimingStats from_json(const json& j);
};

// Statistics of `samples_ms` (any order). An empty sample gives all zeros.
TimingStats summarize(std::span<const double> samples_ms);

// The median of `v` (reorders it). 0 for an empty vector.
double median_inplace(std::vector<double>& v);

// Relative standard error of the median from the moments above.
double median_rse(double stddev, double median, int count);

}  // namespace solbench::harness
