// A logarithmic axis: values in [10^lo, 10^hi] mapped onto a pixel range.
#pragma once

#include <vector>

namespace solbench::report {

class LogScale {
 public:
  // The whole decades that hold every positive value in [min, max] (each
  // widened by `pad_decades` first); at least one decade. Values <= 0 or not
  // finite are ignored; with none left the axis is [10^0, 10^1].
  static LogScale covering(double min, double max, double pad_decades, double px_from,
                           double px_to);
  LogScale(int lo_decade, int hi_decade, double px_from, double px_to);

  // The pixel of `v` (> 0); values outside the decades fall outside the range.
  double px(double v) const;
  bool contains(double v) const;  // within [10^lo, 10^hi] (and > 0)
  int lo() const { return lo_; }
  int hi() const { return hi_; }
  std::vector<double> decades() const;  // 10^lo, ..., 10^hi
  // Pixels per decade (negative for an axis drawn upwards).
  double px_per_decade() const { return (px_to_ - px_from_) / (hi_ - lo_); }

 private:
  int lo_, hi_;
  double px_from_, px_to_;
};

}  // namespace solbench::report
