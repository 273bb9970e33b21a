// BoundedWaiter: runs synchronisations that may never return (a CUDA device
// synchronise behind a kernel that spins forever) on a thread of its own, so that
// the caller can give up after a bound instead of blocking with them.
//
// A wait has two phases. Phase 1 is one synchronisation with a long bound (the
// work the call queued on its own stream, however long it legitimately runs);
// phase 2 is a list of synchronisations (the whole device, other contexts) that
// must all return within a short bound counted from the end of phase 1: what is
// still running then was left behind. Once a wait has timed out the thread may be
// blocked for good: every later wait fails at once, and the process must end (its
// exit ends the GPU work too). CUDA-free, so it is tested without a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace solbench::gpu {

class BoundedWaiter {
 public:
  // One synchronisation: returns an error code of its API, 0 for success.
  using Sync = std::function<int()>;

  struct Result {
    bool finished = true;   // every synchronisation returned within its bound
    int stuck_phase = 0;    // 1 or 2 when not finished (0 when the waiter was stuck before)
    size_t stuck_item = 0;  // phase 2: the synchronisation that had not returned
    int phase1_code = 0;
    std::vector<int> phase2_codes;  // one per phase-2 synchronisation that returned
    double phase1_ms = 0;           // how long phase 1 took (or waited, when it timed out)
    double phase2_ms = 0;           // how long phase 2 took after phase 1
  };

  // `thread_start` runs first on the waiter's thread (selects the CUDA device).
  explicit BoundedWaiter(std::function<void()> thread_start = {});
  // Joins the thread, or leaves it behind when it is stuck in a synchronisation.
  ~BoundedWaiter();
  BoundedWaiter(const BoundedWaiter&) = delete;
  BoundedWaiter& operator=(const BoundedWaiter&) = delete;

  // Runs `phase1` (may be empty) then every `phase2` synchronisation on the thread.
  // Waits for phase 1 at most `phase1_bound_s`, then for phase 2 at most
  // `phase2_bound_s` more. Called from one thread at a time.
  Result run(const Sync& phase1, double phase1_bound_s, const std::vector<Sync>& phase2,
             double phase2_bound_s);

  // True once a wait timed out: the thread may never come back.
  bool stuck() const { return stuck_.load(); }

 private:
  struct Job;
  struct Shared;
  static void loop(std::shared_ptr<Shared> s, std::function<void()> thread_start);

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  std::atomic<bool> stuck_{false};
};

}  // namespace solbench::gpu
