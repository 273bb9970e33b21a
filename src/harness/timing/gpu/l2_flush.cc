#include "harness/timing/gpu/l2_flush.h"

#include <algorithm>
#include <chrono>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/gpu_kernels.h"

namespace solbench::gpu {

namespace {
// At least 2 x L2, rounded up to whole 16-byte vectors; a device that reports no
// L2 still gets a buffer large enough to matter (64 MiB).
size_t flush_bytes(int64_t l2_bytes) {
  const int64_t base = l2_bytes > 0 ? 2 * l2_bytes : (int64_t{64} << 20);
  return static_cast<size_t>((base + 15) / 16 * 16);
}
}  // namespace

L2Flush::L2Flush(int64_t l2_bytes, L2FlushMode mode)
    : buffer_(flush_bytes(l2_bytes)),
      mode_(mode == L2FlushMode::WriteThenRead && !kernels_available() ? L2FlushMode::Write
                                                                       : mode) {}

void L2Flush::flush(cudaStream_t stream) {
  // A different byte every time: a write of the value already there could be
  // elided by a clever memory system, and it costs nothing to avoid the question.
  value_ = static_cast<uint8_t>(value_ * 37u + 11u);
  SB_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), value_, buffer_.bytes(), stream));
  if (mode_ == L2FlushMode::WriteThenRead) launch_l2_read(buffer_.get(), buffer_.bytes(), stream);
  ++count_;
}

PersistingL2Reset::PersistingL2Reset(int device) {
  int max_persisting = 0;
  supported_ = cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize,
                                      device) == cudaSuccess &&
               max_persisting > 0;
  // What the runtime set before any solution code ran (the timer is made before
  // the solution is loaded): reset too, but not reported as the solution's.
  size_t limit = 0;
  if (supported_ && cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess)
    initial_limit_ = before_solution_ = limit;
  (void)cudaGetLastError();
}

void PersistingL2Reset::apply(cudaStream_t stream) {
  if (!supported_) return;
  const auto t0 = std::chrono::steady_clock::now();
  size_t limit = 0;
  SB_CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  if (limit > 0) {
    SB_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
    ++limit_resets_;
    max_limit_ = std::max<uint64_t>(max_limit_, limit);
    if (limit != initial_limit_) {
      ++new_limit_resets_;
      new_max_limit_ = std::max<uint64_t>(new_max_limit_, limit);
    }
    initial_limit_ = 0;  // from now on any set-aside is someone's after the reset
  }
  // Some streams (the legacy default stream) have no attributes to read: nothing
  // can have been set on them either.
  cudaStreamAttrValue v{};
  if (cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v) == cudaSuccess) {
    if (v.accessPolicyWindow.num_bytes > 0) {
      cudaStreamAttrValue none{};
      none.accessPolicyWindow.num_bytes = 0;  // a window of 0 bytes is no window
      none.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
      none.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
      SB_CUDA_CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &none));
      ++window_resets_;
      ++new_window_resets_;
    }
  } else {
    (void)cudaGetLastError();
  }
  // Always: lines may stay persisting after the limit went back to 0 (a solution
  // that lowers it again itself), and nothing cheaper tells whether any is.
  SB_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  ++applied_;
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  total_us_ += us;
  max_us_ = std::max(max_us_, us);
}

void PersistingL2Reset::details(json& j) const {
  if (!supported_) {
    j["persisting_l2"] = "no persisting set-aside on this device";
    return;
  }
  json p = {{"resets", applied_}, {"limit_resets", limit_resets_},
            {"window_resets", window_resets_}};
  if (max_limit_) p["max_limit_bytes"] = max_limit_;
  if (before_solution_) p["limit_bytes_before_the_solution"] = before_solution_;
  if (applied_) {
    p["mean_us"] = total_us_ / static_cast<double>(applied_);
    p["max_us"] = max_us_;
  }
  j["persisting_l2"] = std::move(p);
}

json PersistingL2Reset::take_findings() {
  if (new_limit_resets_ == 0 && new_window_resets_ == 0) return json();
  json f = {{"limit_resets", new_limit_resets_}, {"window_resets", new_window_resets_}};
  if (new_max_limit_) f["max_limit_bytes"] = new_max_limit_;
  f["note"] = "the solution kept a persisting L2 set-aside or an access-policy window on the "
              "harness's stream; both were reset and persisting lines made normal before every "
              "timed call (after the L2 flush nothing it kept there is left)";
  new_limit_resets_ = new_window_resets_ = new_max_limit_ = 0;
  return f;
}

const char* to_string(L2FlushMode mode) {
  switch (mode) {
    case L2FlushMode::Write: return "write";
    case L2FlushMode::WriteThenRead: return "write-then-read";
  }
  return "?";
}

}  // namespace solbench::gpu
