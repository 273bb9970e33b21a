#include "harness/timing/gpu/gpu_timer_options.h"

#include "harness/timing/gpu/device.h"

namespace solbench::gpu {

void prepare_l2_flush(GpuTimerOptions& o, int device) {
  if (o.flush_l2 && !o.l2_flush)
    o.l2_flush = std::make_shared<L2Flush>(query_device(device).l2_bytes, o.l2_mode);
}

void flush_l2(const GpuTimerOptions& o, cudaStream_t stream) {
  if (o.flush_l2 && o.l2_flush) o.l2_flush->flush(stream);
}

void l2_flush_details(const GpuTimerOptions& o, json& j) {
  j["l2_flush"] = o.flush_l2 && o.l2_flush ? json(to_string(o.l2_flush->mode())) : json(nullptr);
  if (o.flush_l2 && o.l2_flush) j["l2_flush_bytes"] = o.l2_flush->bytes();
}

}  // namespace solbench::gpu
