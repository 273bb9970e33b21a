#include "harness/timing/gpu/bounded_wait.h"

#include <pthread.h>

#include <chrono>

namespace solbench::gpu {

using Clock = std::chrono::steady_clock;

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
}  // namespace

// One wait's work and its progress; shared with the thread, which may outlive the
// caller's interest in it (a stuck synchronisation).
struct BoundedWaiter::Job {
  Sync phase1;
  std::vector<Sync> phase2;
  int phase1_code = 0;
  std::vector<int> phase2_codes;
  bool phase1_done = false;
  bool done = false;
  Clock::time_point phase1_end{};
  Clock::time_point end{};
};

struct BoundedWaiter::Shared {
  std::mutex mu;
  std::condition_variable wake;      // the thread: a job or quit
  std::condition_variable progress;  // the caller: a phase finished
  std::shared_ptr<Job> job;          // the job the thread should run next
  bool quit = false;
};

BoundedWaiter::BoundedWaiter(std::function<void()> thread_start)
    : shared_(std::make_shared<Shared>()) {
  thread_ = std::thread(loop, shared_, std::move(thread_start));
}

BoundedWaiter::~BoundedWaiter() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->quit = true;
  }
  shared_->wake.notify_all();
  // A thread blocked in a synchronisation cannot be joined; it owns a reference to
  // the shared state and ends with the process.
  if (stuck_.load())
    thread_.detach();
  else
    thread_.join();
}

void BoundedWaiter::loop(std::shared_ptr<Shared> s, std::function<void()> thread_start) {
  pthread_setname_np(pthread_self(), "sb-gpu-idle");
  if (thread_start) thread_start();
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->wake.wait(lock, [&] { return s->quit || s->job != nullptr; });
    if (s->quit) return;
    std::shared_ptr<Job> job = std::move(s->job);
    lock.unlock();
    const int c1 = job->phase1 ? job->phase1() : 0;
    lock.lock();
    job->phase1_code = c1;
    job->phase1_done = true;
    job->phase1_end = Clock::now();
    lock.unlock();
    s->progress.notify_all();
    for (const Sync& sync : job->phase2) {
      const int c = sync();
      lock.lock();
      job->phase2_codes.push_back(c);
      lock.unlock();
    }
    lock.lock();
    job->done = true;
    job->end = Clock::now();
    s->progress.notify_all();
  }
}

BoundedWaiter::Result BoundedWaiter::run(const Sync& phase1, double phase1_bound_s,
                                         const std::vector<Sync>& phase2, double phase2_bound_s) {
  Result r;
  if (stuck_.load()) {
    r.finished = false;
    return r;
  }
  auto job = std::make_shared<Job>();
  job->phase1 = phase1;
  job->phase2 = phase2;
  const Clock::time_point t0 = Clock::now();
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->job = job;
  shared_->wake.notify_one();
  if (!shared_->progress.wait_until(lock, t0 + seconds(phase1_bound_s),
                                    [&] { return job->phase1_done; })) {
    r.finished = false;
    r.stuck_phase = 1;
    r.phase1_ms = ms_between(t0, Clock::now());
    stuck_.store(true);
    return r;
  }
  r.phase1_code = job->phase1_code;
  r.phase1_ms = ms_between(t0, job->phase1_end);
  const Clock::time_point t1 = job->phase1_end;
  if (!shared_->progress.wait_until(lock, t1 + seconds(phase2_bound_s),
                                    [&] { return job->done; })) {
    r.finished = false;
    r.stuck_phase = 2;
    r.stuck_item = job->phase2_codes.size();
    r.phase2_codes = job->phase2_codes;
    r.phase2_ms = ms_between(t1, Clock::now());
    stuck_.store(true);
    return r;
  }
  r.phase2_codes = job->phase2_codes;
  r.phase2_ms = ms_between(t1, job->end);
  return r;
}

}  // namespace solbench::gpu
