#include "report/log_scale.h"

#include <algorithm>
#include <cmath>

namespace solbench::report {

LogScale LogScale::covering(double min, double max, double pad_decades, double px_from,
                            double px_to) {
  const bool have_min = std::isfinite(min) && min > 0;
  const bool have_max = std::isfinite(max) && max > 0;
  if (!have_min && !have_max) return LogScale(0, 1, px_from, px_to);
  const double lmin = std::log10(have_min ? min : max) - pad_decades;
  const double lmax = std::log10(have_max ? max : min) + pad_decades;
  int lo = int(std::floor(lmin + 1e-9));
  int hi = int(std::ceil(lmax - 1e-9));
  if (hi <= lo) hi = lo + 1;
  return LogScale(lo, hi, px_from, px_to);
}

LogScale::LogScale(int lo_decade, int hi_decade, double px_from, double px_to)
    : lo_(lo_decade), hi_(std::max(hi_decade, lo_decade + 1)), px_from_(px_from), px_to_(px_to) {}

double LogScale::px(double v) const {
  return px_from_ + (std::log10(v) - lo_) * px_per_decade();
}

bool LogScale::contains(double v) const {
  if (!(v > 0) || !std::isfinite(v)) return false;
  const double l = std::log10(v);
  return l >= lo_ - 1e-9 && l <= hi_ + 1e-9;
}

std::vector<double> LogScale::decades() const {
  std::vector<double> out;
  for (int d = lo_; d <= hi_; ++d) out.push_back(std::pow(10.0, d));
  return out;
}

}  // namespace solbench::report
