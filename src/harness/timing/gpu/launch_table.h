// LaunchTable: the kernel and graph launches a process made since the device was
// last found idle, and which of them have a complete activity record, so that a
// wait that gives up can name what is still running (device_idle.h). Filled by the
// CUPTI collector's API callbacks and activity buffers; CUDA-free and not
// thread-safe (the collector holds its lock around it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace solbench::gpu::detail {

// A kernel or graph launch seen by the API callbacks (seq: launch order).
struct TrackedLaunch {
  uint64_t seq = 0;
  std::string name;         // the kernel's (mangled) symbol; empty for graph launches
  std::string api;          // the launching API function ("cudaLaunchKernel", ...)
  uint32_t context_id = 0;  // CUPTI's id of the context current at the launch
  std::string when;         // "in timed span 3", "after timed span 3", ...
  bool finished = false;    // a complete activity record of it arrived
  std::vector<uint32_t> correlation_ids;  // the launch call's and its nested driver calls'
};

class LaunchTable {
 public:
  static constexpr size_t kCapacity = 4096;

  // A launch API call. `top`: the outermost API call of its thread, `group` that
  // call's correlation id (a runtime launch and the driver launch it makes inside
  // are one launch). At exit only `failed` matters: a launch that returned an error
  // runs nothing and never gets a record. `when` is asked for new launches only.
  template <typename When>
  void on_call(bool enter, bool top, uint32_t correlation_id, uint32_t group, const char* symbol,
               const char* api, uint32_t context_id, bool failed, When&& when) {
    if (!enter) {
      if (top && failed) erase(correlation_id);
      return;
    }
    TrackedLaunch* l = find_or_add(top ? correlation_id : group, context_id, when);
    if (!l) return;
    if (l->name.empty() && symbol && *symbol) l->name = symbol;
    if (l->api.empty() && api) l->api = api;
    if (correlation_id != l->correlation_ids.front() &&
        by_corr_.emplace(correlation_id, l->seq).second)
      l->correlation_ids.push_back(correlation_id);
  }

  // An activity record of `correlation_id` (kernel, memcpy or memset). A forced
  // flush also hands over records of work still running, with no end time: those
  // do not finish a launch.
  void on_record(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns);

  // Launches made from now on get a seq >= next_seq().
  uint64_t next_seq() const { return next_seq_; }
  // Forgets the launches with seq below `seq` (a wait begun after them found the
  // device idle: they finished).
  void forget_before(uint64_t seq);
  // The launches without a complete record, oldest first, at most `max`; `total`
  // gets their number.
  std::vector<TrackedLaunch> unfinished(size_t max, size_t* total) const;
  size_t size() const { return launches_.size(); }
  uint64_t untracked() const { return untracked_; }  // launches past kCapacity

 private:
  template <typename When>
  TrackedLaunch* find_or_add(uint32_t key, uint32_t context_id, When&& when) {
    if (auto it = by_corr_.find(key); it != by_corr_.end()) return &launches_.at(it->second);
    if (launches_.size() >= kCapacity) {
      ++untracked_;
      return nullptr;
    }
    TrackedLaunch l;
    l.seq = next_seq_++;
    l.context_id = context_id;
    l.when = when();
    l.correlation_ids.push_back(key);
    by_corr_.emplace(key, l.seq);
    return &launches_.emplace(l.seq, std::move(l)).first->second;
  }
  void erase(uint32_t correlation_id);

  std::map<uint64_t, TrackedLaunch> launches_;     // by seq
  std::unordered_map<uint32_t, uint64_t> by_corr_;  // correlation id -> seq
  uint64_t next_seq_ = 0;
  uint64_t untracked_ = 0;
};

}  // namespace solbench::gpu::detail
