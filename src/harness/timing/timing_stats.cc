#include "harness/timing/timing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace solbench::harness {

double median_inplace(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  double hi = *mid;
  if (n % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), mid);
  return 0.5 * (lo + hi);
}

double median_rse(double stddev, double median, int count) {
  if (count < 2 || median <= 0) return 0;
  // Asymptotic standard error of the median of a normal sample: sqrt(pi/2) sigma / sqrt(n).
  constexpr double kSqrtHalfPi = 1.2533141373155003;
  return kSqrtHalfPi * stddev / std::sqrt(static_cast<double>(count)) / median;
}

TimingStats summarize(std::span<const double> samples_ms) {
  TimingStats s;
  s.count = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return s;
  std::vector<double> v(samples_ms.begin(), samples_ms.end());
  s.min_ms = *std::min_element(v.begin(), v.end());
  s.max_ms = *std::max_element(v.begin(), v.end());
  s.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean_ms) * (x - s.mean_ms);
  s.stddev_ms = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  s.median_ms = median_inplace(v);
  s.rse = median_rse(s.stddev_ms, s.median_ms, s.count);
  return s;
}

json TimingStats::to_json() const {
  json j = json::object();
  j["median_ms"] = median_ms;
  j["mean_ms"] = mean_ms;
  j["min_ms"] = min_ms;
  j["max_ms"] = max_ms;
  j["stddev_ms"] = stddev_ms;
  j["count"] = count;
  j["rse"] = rse;
  return j;
}

TimingStats TimingStats::from_json(const json& j) {
  TimingStats s;
  s.median_ms = j.value("median_ms", 0.0);
  s.mean_ms = j.value("mean_ms", 0.0);
  s.min_ms = j.value("min_ms", 0.0);
  s.max_ms = j.value("max_ms", 0.0);
  s.stddev_ms = j.value("stddev_ms", 0.0);
  s.count = j.value("count", 0);
  s.rse = j.value("rse", 0.0);
  return s;
}

}  // namespace solbench::harness
