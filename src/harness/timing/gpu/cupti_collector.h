// CuptiCollector (internal): the process's one CUPTI client. It records, through
// the CUPTI callback API, the correlation ids of every CUDA runtime and driver call
// made by any thread while a window is open, and receives, through the activity
// API, the kernel, memcpy and memset records of every stream and context. A
// measured call's activities are the records whose correlation id was issued
// inside its window, so work it put on side streams (or other devices) counts.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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
  std::string name;    // kernel: its (mangled) name; memcpy: "memcpy HtoD" etc.; memset: "memset"
};

// The API calls of one window, grouped by top-level call (a runtime call and the
// driver calls it makes internally form one group, keyed by the outer call's id).
struct WindowCalls {
  std::unordered_map<uint32_t, uint32_t> group_of;  // correlation id -> group id
  std::vector<uint32_t> work_groups;  // groups whose top-level call should create GPU work
  size_t api_calls = 0;
};

class CuptiCollector {
 public:
  // The instance, created on first use. Null when CUPTI cannot be used (the
  // library refuses, another profiler such as ncu owns it, ...); `why` says why.
  static CuptiCollector* instance(std::string* why);

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

  // Called by CUPTI (through static trampolines); public for them only.
  void on_api(bool enter, uint32_t correlation_id, const char* function_name);
  void on_buffer(uint8_t* buffer, size_t valid_size);

 private:
  CuptiCollector() = default;
  bool init(std::string* why);

  std::mutex mu_;                  // guards everything below
  bool recording_ = false;
  WindowCalls calls_;
  std::vector<GpuActivity> pending_;
  uint64_t dropped_ = 0;
  bool hw_trace_ = false;  // set once in init()
};

}  // namespace solbench::gpu::detail
