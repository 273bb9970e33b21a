// CuptiCollector (internal): the process's one CUPTI client. It records, through
// the CUPTI callback API, the correlation ids of every CUDA runtime and driver call
// made by any thread while a window is open, and receives, through the activity
// API, the kernel, memcpy and memset records of every stream and context. A
// measured call's activities are the records whose correlation id was issued
// inside its window, so work it put on side streams (or other devices) counts.
//
// For DeviceIdleGuard (device_idle.h) it also keeps, from the moment it is set up
// (before any solution code is loaded), the CUDA contexts the process creates and
// every kernel and graph launch of any thread, context and stream, until a wait for
// the device shows them finished: what is still running after the bound is named.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/timing/gpu/launch_table.h"

namespace solbench::gpu::detail {

struct GpuActivity {
  enum class Kind { Kernel, Memcpy, Memset };
  Kind kind = Kind::Kernel;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint64_t bytes = 0;  // memcpy / memset
  uint32_t grid[3] = {0, 0, 0};   // kernel: grid and block dimensions (the profile's breakdown)
  uint32_t block[3] = {0, 0, 0};
  std::string name;    // kernel: its (mangled) name; memcpy: "memcpy HtoD" etc.; memset: "memset"
};

// The API calls of one window, grouped by top-level call (a runtime call and the
// driver calls it makes internally form one group, keyed by the outer call's id).
struct WindowCalls {
  std::unordered_map<uint32_t, uint32_t> group_of;  // correlation id -> group id
  std::vector<uint32_t> work_groups;  // groups whose top-level call should create GPU work
  size_t api_calls = 0;
};

// A CUDA context created after CUPTI was set up (any device), not yet destroyed.
struct TrackedContext {
  void* context = nullptr;  // CUcontext
  uint32_t id = 0;          // CUPTI's context id
};

// True for the names of CUDA runtime and driver functions that launch kernels or
// graphs (cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, ...).
bool launches_kernels(const char* api_function);

class CuptiCollector {
 public:
  // The instance, created on first use. Null when CUPTI cannot be used (the
  // library refuses, another profiler such as ncu owns it, ...); `why` says why.
  static CuptiCollector* instance(std::string* why);
  // The instance if one was created, else null (creates nothing).
  static CuptiCollector* existing();

  void open_window();
  WindowCalls close_window();

  // Delivers every record CUPTI holds. Call after synchronising the device so
  // that the window's activities are complete.
  void flush();

  // Moves out the pending records whose correlation id belongs to `calls`;
  // discards the others (they belong to no open window: flushes, setup work).
  std::vector<GpuActivity> take(const WindowCalls& calls);

  // Records CUPTI dropped for want of buffer space since the last call.
  uint64_t take_dropped();

  // How kernel start/end times are taken: "hardware events" (Blackwell's HES,
  // cuptiActivityEnableHWTrace) or "software instrumentation" (the kernels are
  // patched and bracketed by semaphores; measurably slower per block and per
  // launch on Hopper: docs/gpu-timing.md).
  const char* kernel_timestamps() const {
    return hw_trace_ ? "hardware events" : "software instrumentation";
  }

  // Contexts created since CUPTI was set up (primary contexts made later included).
  std::vector<TrackedContext> contexts();
  // The number of launches tracked so far: launches made from now on get a
  // larger seq.
  uint64_t launch_seq();
  // Forgets the launches with seq below `seq` (a wait begun after them found the
  // device idle: they finished).
  void forget_launches_before(uint64_t seq);
  // The tracked launches without a complete activity record, oldest first, at most
  // `max`; `total` gets their number. Flush first.
  std::vector<TrackedLaunch> unfinished_launches(size_t max, size_t* total);

  // Called by CUPTI (through static trampolines); public for them only.
  void on_api(bool enter, uint32_t correlation_id, const char* function_name);
  // A kernel or graph launch call: `top` is the outermost API call of the thread
  // (`group` its correlation id); at exit `failed` says that it returned an error.
  void on_launch(bool enter, bool top, uint32_t correlation_id, uint32_t group,
                 const char* symbol, const char* function, uint32_t context_id, bool failed);
  void on_context(bool created, void* context);
  void on_buffer(uint8_t* buffer, size_t valid_size);

 private:
  CuptiCollector() = default;
  bool init(std::string* why);

  std::mutex mu_;                  // guards everything below
  bool recording_ = false;
  uint64_t windows_ = 0;           // windows opened so far
  WindowCalls calls_;
  std::vector<GpuActivity> pending_;
  uint64_t dropped_ = 0;
  bool hw_trace_ = false;  // set once in init()
  std::vector<TrackedContext> contexts_;
  LaunchTable launches_;
};

}  // namespace solbench::gpu::detail
