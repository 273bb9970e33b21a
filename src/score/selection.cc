#include "score/selection.h"

#include <algorithm>

namespace solbench::score {

namespace {

bool names(const Workload& w, const std::string& want) { return w.uuid.rfind(want, 0) == 0; }

}  // namespace

std::vector<size_t> select_workloads(const Problem& p, const WorkloadSelection& s, Diagnostics& d) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.workloads.size(); ++i)
    if (i < p.resolved.size() && p.resolved[i]) idx.push_back(i);
  if (!s.wanted.empty()) {
    std::vector<size_t> chosen;
    for (const auto& want : s.wanted) {
      std::vector<size_t> hits;
      for (size_t i : idx)
        if (names(p.workloads[i], want)) hits.push_back(i);
      if (hits.empty())
        d.add("--workload", 0, "", "no workload with uuid (or uuid prefix) \"" + want + "\"");
      else if (hits.size() > 1 && p.workloads[hits[0]].uuid != want)
        d.add("--workload", 0, "", "uuid prefix \"" + want + "\" is ambiguous");
      else if (std::find(chosen.begin(), chosen.end(), hits[0]) == chosen.end())
        chosen.push_back(hits[0]);
    }
    idx = chosen;
  }
  if (s.first > 0 && idx.size() > static_cast<size_t>(s.first)) idx.resize(static_cast<size_t>(s.first));
  if (s.smallest > 0) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const auto& ra = *p.resolved[a];
      const auto& rb = *p.resolved[b];
      return ra.input_bytes + ra.output_bytes < rb.input_bytes + rb.output_bytes;
    });
    if (idx.size() > static_cast<size_t>(s.smallest)) idx.resize(static_cast<size_t>(s.smallest));
  }
  return idx;
}

std::vector<std::string> wanted_here(const Problem& p, const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  for (const auto& want : wanted)
    if (std::any_of(p.workloads.begin(), p.workloads.end(),
                    [&](const Workload& w) { return names(w, want); }))
      out.push_back(want);
  return out;
}

}  // namespace solbench::score
