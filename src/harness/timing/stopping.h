// When to stop taking timing samples (nvbench's "stdrel" idea): after at least
// `min_samples`, stop once the relative standard error of the median is below the
// target; stop regardless at `max_samples` or when the time budget is spent.
#pragma once

#include <string>
#include <vector>

namespace solbench::harness {

class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  virtual void add(double sample_ms) = 0;
  // True once enough precision is reached (the budget is the caller's concern).
  virtual bool converged() const = 0;
  virtual std::string name() const = 0;
};

// Relative standard error of the median below `target` after `min_samples`.
class MedianRseCriterion final : public StoppingCriterion {
 public:
  MedianRseCriterion(double target, int min_samples) : target_(target), min_(min_samples) {}
  void add(double sample_ms) override;
  bool converged() const override { return converged_; }
  std::string name() const override { return "median-rse"; }
  double current_rse() const { return rse_; }

 private:
  double target_;
  int min_;
  std::vector<double> samples_;
  double sum_ = 0, sum_sq_ = 0;
  double rse_ = 1e300;
  bool converged_ = false;
};

}  // namespace solbench::harness
