// LaunchGate: nvbench's blocking kernel, for both GPU timers.
//
// close() queues a kernel on the measured stream that spins until open() writes a
// flag in mapped host memory (or a timeout passes). The launches a call makes in
// between wait behind it and, once the gate opens, run back to back: the span then
// holds the GPU's work, not the host's launch path. That matters most under CUPTI,
// whose kernel tracing costs tens of microseconds of host time per launch on
// Hopper (docs/gpu-timing.md): without the gate a call of many small kernels is
// timed mostly as host gaps. Work on streams that do not wait for the measured one
// (non-blocking streams) is not held, and is still counted by CUPTI.
//
// A call that waits for its own stream inside (a synchronising copy, `.item()`,
// cudaFree) waits for the timeout. One timeout is forgiven (a library handle made
// on the first call may synchronise once); after two in a row the gate stays open
// for the rest of its life.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "core/json.h"
#include "harness/timing/gpu/pinned_buffer.h"

namespace solbench::gpu {

class LaunchGate {
 public:
  // `enabled` false (or a build without device kernels) gives a gate that never closes.
  LaunchGate(bool enabled, double timeout_s);

  bool configured() const { return flags_ != nullptr; }
  bool enabled() const { return configured() && !gave_up_; }
  // Outside the measured span, after the stream is idle: queues the blocking kernel.
  void close(cudaStream_t stream);
  // Right after the call returned: lets the queued work run.
  void open();
  // Once the stream has passed the gate (the span was synchronised): reads whether
  // the blocking kernel ran into its timeout (the second in a row gives up the gate).
  void settle();
  // Whether the last settled span's gate opened by timeout.
  bool last_timed_out() const { return last_timed_out_; }
  uint64_t timeouts() const { return timeouts_; }
  bool gave_up() const { return gave_up_; }

 private:
  std::unique_ptr<PinnedBuffer> flags_;  // [0] release, [1] timed out
  double timeout_s_;
  bool closed_ = false;
  bool last_timed_out_ = false;
  bool gave_up_ = false;
  int strikes_ = 0;  // consecutive timeouts
  uint64_t timeouts_ = 0;
};

// What a gate did, for a timer's details(): "block_launch" (a gate was set up),
// "block_timeouts" (spans whose gate opened by timeout), "block_gave_up" (the
// gate is left open) and "block_timed_out" (the last span's did).
void gate_details(const LaunchGate& gate, json& j);

}  // namespace solbench::gpu
