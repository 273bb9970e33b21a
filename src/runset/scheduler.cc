#include "runset/scheduler.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace solbench::runset {

ScheduleResult run_on_slots(size_t n_slots, size_t n_tasks,
                            const std::function<void(size_t, size_t)>& run,
                            const std::atomic<bool>* stop,
                            const std::function<bool(size_t)>& ready, size_t window) {
  if (n_slots == 0 && n_tasks > 0) throw std::invalid_argument("run_on_slots: no slot to run on");
  std::mutex m;
  size_t next = 0;  // the first task not started
  size_t started = 0;
  std::vector<char> taken(n_tasks, 0);
  bool stopped = false;
  std::exception_ptr error;
  // The next task for a slot, or none (all handed out, stopped, or failed).
  auto take = [&](size_t& task) {
    std::lock_guard lock(m);
    while (next < n_tasks && taken[next]) ++next;
    if (error || next >= n_tasks) return false;
    if (stop && stop->load()) {
      stopped = true;
      return false;
    }
    task = next;
    if (ready) {
      size_t seen = 0;
      for (size_t t = next; t < n_tasks && seen < std::max<size_t>(window, 1); ++t) {
        if (taken[t]) continue;
        ++seen;
        if (ready(t)) {
          task = t;
          break;
        }
      }
    }
    taken[task] = 1;
    ++started;
    return true;
  };
  auto slot_loop = [&](size_t slot) {
    size_t task = 0;
    while (take(task)) {
      try {
        run(task, slot);
      } catch (...) {
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t used = std::min(n_slots, n_tasks);
  threads.reserve(used);
  for (size_t k = 0; k < used; ++k) threads.emplace_back(slot_loop, k);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return {started, stopped};
}

std::vector<size_t> costliest_first(const std::vector<double>& cost) {
  std::vector<size_t> order(cost.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  return order;
}

std::vector<std::vector<std::vector<size_t>>> split_for_slots(
    const std::vector<std::vector<double>>& workload_costs, size_t slots) {
  double total = 0;
  for (const auto& w : workload_costs) total = std::accumulate(w.begin(), w.end(), total);
  const double share = slots > 0 ? total / double(slots) : 0;
  std::vector<std::vector<std::vector<size_t>>> out;
  out.reserve(workload_costs.size());
  for (const auto& w : workload_costs) {
    const double cost = std::accumulate(w.begin(), w.end(), 0.0);
    size_t parts = 1;
    if (slots > 1 && share > 0 && cost > share && w.size() > 1)
      parts = std::min(w.size(), static_cast<size_t>(std::ceil(cost / share)));
    // Cut where the running cost first reaches each j/parts of the task's, keeping
    // at least one workload per part.
    std::vector<std::vector<size_t>> cut(parts);
    double before = 0;
    size_t part = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      const size_t left = w.size() - k;      // workloads not placed yet, this one included
      const size_t later = parts - part - 1;  // parts after the current one
      const bool reached = before >= cost * double(part + 1) / double(parts);
      if (later > 0 && !cut[part].empty() && (reached || left <= later)) ++part;
      cut[part].push_back(k);
      before += w[k];
    }
    out.push_back(std::move(cut));
  }
  return out;
}

std::vector<bool> runs_alone(const std::vector<std::vector<double>>& workload_costs,
                             double footprint, double beside_bytes) {
  std::vector<bool> alone;
  for (const auto& costs : workload_costs) {
    const double largest = costs.empty() ? 0 : *std::max_element(costs.begin(), costs.end());
    alone.push_back(largest * footprint > beside_bytes);
  }
  return alone;
}

}  // namespace solbench::runset
