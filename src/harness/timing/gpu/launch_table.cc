#include "harness/timing/gpu/launch_table.h"

namespace solbench::gpu::detail {

void LaunchTable::on_record(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns) {
  if (end_ns == 0 || end_ns < start_ns) return;
  if (auto it = by_corr_.find(correlation_id); it != by_corr_.end())
    launches_.at(it->second).finished = true;
}

void LaunchTable::erase(uint32_t correlation_id) {
  auto it = by_corr_.find(correlation_id);
  if (it == by_corr_.end()) return;
  auto l = launches_.find(it->second);
  for (uint32_t c : l->second.correlation_ids) by_corr_.erase(c);
  launches_.erase(l);
}

void LaunchTable::forget_before(uint64_t seq) {
  while (!launches_.empty() && launches_.begin()->first < seq) {
    for (uint32_t c : launches_.begin()->second.correlation_ids) by_corr_.erase(c);
    launches_.erase(launches_.begin());
  }
}

std::vector<TrackedLaunch> LaunchTable::unfinished(size_t max, size_t* total) const {
  std::vector<TrackedLaunch> out;
  size_t n = 0;
  for (const auto& [seq, l] : launches_) {
    if (l.finished) continue;
    if (out.size() < max) out.push_back(l);
    ++n;
  }
  if (total) *total = n;
  return out;
}

}  // namespace solbench::gpu::detail
