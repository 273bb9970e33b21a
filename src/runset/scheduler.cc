#include "runset/scheduler.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace solbench::runset {

ScheduleResult run_on_slots(size_t n_slots, size_t n_tasks,
                            const std::function<void(size_t, size_t)>& run,
                            const std::atomic<bool>* stop) {
  if (n_slots == 0 && n_tasks > 0) throw std::invalid_argument("run_on_slots: no slot to run on");
  std::mutex m;
  size_t next = 0;
  bool stopped = false;
  std::exception_ptr error;
  // The next task for a slot, or none (all handed out, stopped, or failed).
  auto take = [&](size_t& task) {
    std::lock_guard lock(m);
    if (error || next >= n_tasks) return false;
    if (stop && stop->load()) {
      stopped = true;
      return false;
    }
    task = next++;
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
  return {next, stopped};
}

std::vector<size_t> costliest_first(const std::vector<double>& cost) {
  std::vector<size_t> order(cost.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  return order;
}

}  // namespace solbench::runset
