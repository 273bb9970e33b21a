#include "harness/timing/stopping.h"

#include <cmath>

#include "harness/timing/timing_stats.h"

namespace solbench::harness {

void MedianRseCriterion::add(double sample_ms) {
  samples_.push_back(sample_ms);
  sum_ += sample_ms;
  sum_sq_ += sample_ms * sample_ms;
  const int n = static_cast<int>(samples_.size());
  if (n < 2 || n < min_) return;
  const double mean = sum_ / n;
  const double var = std::max(0.0, (sum_sq_ - n * mean * mean) / (n - 1));
  std::vector<double> copy = samples_;  // n stays small (thousands at most)
  const double median = median_inplace(copy);
  rse_ = median_rse(std::sqrt(var), median, n);
  converged_ = rse_ < target_;
}

}  // namespace solbench::harness
