// One GPU's memory, shared out between the workers that measure T_b.
//
// T_b's workers spend most of their time in torch.compile's CPU work, which needs
// little of the GPU (the workload's inputs, the worker's CUDA context), and a few
// seconds a workload in the GPU work after it (the compiled graph's first runs and
// Triton's autotuning, the correctness rounds, the timed loop with its input sets):
// about harness::kValuesFootprint times the workload's bytes (the public L2/056's
// 3.4 GB workload: a 27 GB peak). Counting that peak for every worker at once left
// one worker for such a problem; instead each worker holds shares of the GPU's memory
// for what it puts there, a few while it compiles and the footprint for its GPU work,
// and waits for them, so the CPUs alone count the workers (score/baseline.h).
//
// A share is a file (<timing lock>.mem-<k>, made by the parent beside the GPU's
// timing lock, device_lock.h); holding it is holding its flock exclusively, so a
// worker that dies gives its shares back with its files. A worker asks in turn:
// whoever holds <timing lock>.mem-queue takes free shares as they come back until
// it has all it asked for, so a large request is not passed over by small ones.
// Nothing waits for shares while holding any (a worker gives back its compile's
// shares before it asks for its GPU work's, and asks outside the GPU's timing lock),
// so the queue always moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace solbench::harness {

// The size of one share.
inline constexpr uint64_t kMemoryShareBytes = 1ull << 30;
// The part of the GPU's memory shared out; the rest is left to what does not ask:
// `run`'s T_b ahead jobs beside evaluations (16 GiB, runset/run.cc), the workers' CUDA
// contexts between their holds, an evaluation's own workers beside T_b's ahead.
inline constexpr double kSharedMemoryFraction = 0.6;

// The shares for a GPU of `gpu_memory_bytes` (0 where no share is made).
size_t memory_share_count(uint64_t gpu_memory_bytes);

// Makes `units` shares beside the GPU's timing lock file `timing_lock` (and the
// queue), where missing; returns the prefix the worker opens them by, "" where there
// is no lock or a file cannot be made (then no worker waits for memory).
std::string prepare_memory_shares(const std::string& timing_lock, size_t units);

class MemoryShares {
 public:
  MemoryShares() = default;
  // Opens the first `units` shares under `prefix` (read-only: a flock needs no write
  // access) and the queue; "" or a file that cannot be opened: shares that never wait
  // (is_open() false).
  MemoryShares(const std::string& prefix, size_t units);
  ~MemoryShares();
  MemoryShares(const MemoryShares&) = delete;
  MemoryShares& operator=(const MemoryShares&) = delete;
  MemoryShares(MemoryShares&& o) noexcept;
  MemoryShares& operator=(MemoryShares&& o) noexcept;

  bool is_open() const { return queue_ >= 0 && !units_.empty(); }
  size_t units() const { return units_.size(); }
  // Blocks until this process holds `n` shares (at most units(); what it holds
  // already counts); returns the milliseconds waited.
  double acquire(size_t n);
  // Gives back every share this process holds.
  void release();
  size_t held() const { return held_.size(); }

 private:
  std::vector<int> units_;   // the share files' descriptors
  std::vector<size_t> held_;  // indices into units_
  int queue_ = -1;
};

// The shares a workload of `bytes` (inputs and outputs) holds for its GPU work:
// kValuesFootprint times its bytes, in whole shares, at least one.
size_t memory_shares_for(uint64_t bytes);
// What a worker holds on the GPU while it compiles a workload, besides its inputs:
// its CUDA context, cuBLAS's and Inductor's buffers.
inline constexpr uint64_t kCompileBytes = 1ull << 30;
// The shares it holds then: its inputs of `bytes` and kCompileBytes, whole shares.
size_t memory_shares_while_compiling(uint64_t input_bytes);

// Holds `n` shares from construction to destruction.
class MemorySharesHold {
 public:
  MemorySharesHold(MemoryShares& shares, size_t n)
      : shares_(shares), waited_ms_(shares.acquire(n)) {}
  ~MemorySharesHold() { shares_.release(); }
  MemorySharesHold(const MemorySharesHold&) = delete;
  MemorySharesHold& operator=(const MemorySharesHold&) = delete;
  double waited_ms() const { return waited_ms_; }

 private:
  MemoryShares& shares_;
  double waited_ms_;
};

}  // namespace solbench::harness
