// The slot scheduler: a pool of slots (one per device: cuda:0, cuda:1, ... or
// several "cpu" slots in tests), each running one task at a time; a slot takes
// the next task in order as soon as its previous one ends, so long and short
// problems spread over the devices as they come.
//
// Generic over what a task is: the caller's function gets (task, slot) and does
// the work. It knows nothing of processes or problems, so tests drive it with a
// fake function and check each task runs once and no slot runs two at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

namespace solbench::runset {

struct ScheduleResult {
  size_t started = 0;  // tasks handed to a slot (the first `started` in order, without `ready`)
  bool stopped = false;  // `stop` was seen before every task was started
};

// Runs tasks 0..n_tasks-1 on `n_slots` threads, slot k calling run(task, k) for
// one task at a time. Once `stop` (optional) becomes true no further task is
// started; tasks running then finish (their function sees the flag itself and
// may cut short). If run() throws, no further task starts, the other slots end
// their current task, and the first exception is rethrown here.
// With `ready` a slot takes, of the next `window` tasks not started yet, the first
// that is ready now, else the first of them (run() may then wait for it): so a
// task that would wait (T_b ahead's job for its problem still runs) lets one that
// need not go first. Each task still starts exactly once.
ScheduleResult run_on_slots(size_t n_slots, size_t n_tasks,
                            const std::function<void(size_t task, size_t slot)>& run,
                            const std::atomic<bool>* stop = nullptr,
                            const std::function<bool(size_t task)>& ready = {},
                            size_t window = 1);

// The order to start tasks in on several slots: the costliest first (ties in task
// order), so that a long task does not start last and leave the other slots idle
// while it runs (longest-processing-time-first list scheduling).
std::vector<size_t> costliest_first(const std::vector<double>& cost);

// How to cut tasks into parts for `slots` slots, from each task's per-workload
// costs: a task costing more than one slot's fair share (the total over the
// slots) is cut into runs of consecutive workloads, as many as its cost holds
// shares (rounded up, one workload at least each), of about equal cost; every
// other task stays whole. On a single slot nothing is cut. So one evaluation
// longer than the rest together runs on several devices instead of holding the
// run's end while the others are idle. Returns, per task, its parts as lists of
// workload positions (one part listing them all when the task stays whole).
std::vector<std::vector<std::vector<size_t>>> split_for_slots(
    const std::vector<std::vector<double>>& workload_costs, size_t slots);

// Several evaluations on one GPU (--jobs-per-gpu N > 1) share its memory. Which of
// the tasks, by their per-workload costs (a workload's input and output bytes), must
// run alone on their GPU: those whose largest workload, times `footprint` (the copies
// of its values an evaluation's processes hold at once), passes `beside_bytes`.
std::vector<bool> runs_alone(const std::vector<std::vector<double>>& workload_costs,
                             double footprint, double beside_bytes);

}  // namespace solbench::runset
