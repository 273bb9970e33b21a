#include "harness/values.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "harness/sha256.h"
#include "harness/timing/timing_stats.h"

namespace solbench::harness {

uint64_t value_seed(uint64_t secret, const std::string& uuid, ValueKind kind, int index) {
  Sha256 h;
  h.field("solbench values");
  h.field(std::to_string(secret));
  h.field(uuid);
  h.field(kind == ValueKind::Round ? "round" : "call");
  h.field(std::to_string(index));
  const std::string hex = h.hex_digest();
  return std::stoull(hex.substr(0, 16), nullptr, 16) >> 1;
}

// ---------------------------------------------------------------- worker side

LocalValues::LocalValues(uint64_t secret) : secret_(secret), fresh_(std::random_device{}()) {}

uint64_t LocalValues::round_seed(const std::string& uuid, int round) {
  return value_seed(secret_, uuid, ValueKind::Round, round);
}

CallGrant LocalValues::call(int) { return {fresh_() >> 1, -1}; }

json ParentValues::ask(json request) {
  request = make_frame(FrameType::Values, std::move(request));
  const int64_t t0 = monotonic_ns();
  json reply = ask_(request);
  wait_ns_ += monotonic_ns() - t0;
  if (frame_type(reply) != FrameType::Values)
    throw std::runtime_error("the parent did not answer a values request");
  return reply;
}

uint64_t ParentValues::round_seed(const std::string&, int round) {
  return ask({{"what", "round"}, {"round", round}}).at("seed").get<uint64_t>();
}

CallGrant ParentValues::call(int call) {
  const json r = ask({{"what", "call"}, {"call", call}});
  return {r.at("seed").get<uint64_t>(), r.value("keep", -1)};
}

int ParentValues::calls_end(int calls) {
  return ask({{"what", "calls_end"}, {"calls", calls}}).value("keep", -1);
}

double ParentValues::take_wait_ms() {
  const double ms = static_cast<double>(wait_ns_) / 1e6;
  wait_ns_ = 0;
  return ms;
}

// ---------------------------------------------------------------- parent side

ValueIssuer::ValueIssuer(uint64_t secret, int max_rounds, int max_calls)
    : secret_(secret), max_rounds_(max_rounds), max_calls_(max_calls) {}

void ValueIssuer::begin(const std::string& uuid, int sample) {
  active_ = true;
  uuid_ = uuid;
  sample_ = std::max(0, sample);
  next_round_ = 0;
  ended_ = false;
  end_ns_ = 0;
  call_ns_.clear();
  slots_.clear();
  // The picks are the parent's: seeded from the secret, unknown to the worker.
  pick_.seed(value_seed(secret_, uuid, ValueKind::Call, -1));
}

json ValueIssuer::answer(const json& request, int64_t now_ns) {
  if (!active_) throw ValueViolation("a values request outside a workload");
  const std::string what = request.value("what", "");
  json reply = make_frame(FrameType::Values);
  // Reservoir sampling over the pool's calls: call `done` has returned.
  auto keep = [&](int done) {
    int slot = -1;
    if (done < sample_) {
      slot = done;
    } else if (sample_ > 0) {
      const int j = static_cast<int>(std::uniform_int_distribution<int64_t>(0, done)(pick_));
      if (j < sample_) slot = j;
    }
    if (slot >= 0) {
      if (static_cast<size_t>(slot) >= slots_.size()) slots_.resize(slot + 1, -1);
      slots_[slot] = done;
    }
    return slot;
  };
  if (what == "round") {
    const int r = request.value("round", -1);
    if (!call_ns_.empty() || r != next_round_ || r >= max_rounds_)
      throw ValueViolation(fmt::format(
          "a request for the values of round {} where the harness asks for round {} next", r,
          next_round_));
    ++next_round_;
    reply["seed"] = value_seed(secret_, uuid_, ValueKind::Round, r);
    return reply;
  }
  if (what == "call") {
    const int c = request.value("call", -1);
    const int expected = static_cast<int>(call_ns_.size());
    if (ended_ || c != expected || c >= max_calls_)
      throw ValueViolation(fmt::format(
          "a request for the values of call {} where the harness asks for call {} next", c,
          ended_ ? -1 : expected));
    reply["keep"] = c > 0 ? keep(c - 1) : -1;
    call_ns_.push_back(now_ns);
    reply["seed"] = value_seed(secret_, uuid_, ValueKind::Call, c);
    return reply;
  }
  if (what == "calls_end") {
    const int n = request.value("calls", -1);
    if (ended_ || n != static_cast<int>(call_ns_.size()) || n == 0)
      throw ValueViolation(fmt::format("the end of the timed calls after {} calls, where {} "
                                       "were handed out",
                                       n, call_ns_.size()));
    ended_ = true;
    end_ns_ = now_ns;
    reply["keep"] = keep(n - 1);
    return reply;
  }
  throw ValueViolation("a values request of an unknown kind");
}

std::string ValueIssuer::check(WorkloadOutcome& o) const {
  if (!o.timing) return "";
  TimingResult& t = *o.timing;
  const int n = static_cast<int>(call_ns_.size());
  const int w = t.warmup_calls;
  const int timed = static_cast<int>(t.samples_ms.size());
  if (!ended_ || w < 0 || w + timed != n)
    return fmt::format("the worker reported {} warm-up and {} timed calls, but the parent "
                       "handed out the values of {} calls{}",
                       w, timed, n, ended_ ? "" : " and saw no end of the loop");
  if (timed == 0) return "the worker reported no timed call";
  // Call p ran between its request and the next one (the end for the last call):
  // nothing of it can have taken longer. The margin covers the GPU's clock
  // against the host's, not a call's work.
  auto wall_ms = [&](int p) {
    const int64_t until = p + 1 < n ? call_ns_[p + 1] : end_ns_;
    return static_cast<double>(until - call_ns_[p]) / 1e6;
  };
  std::vector<double> walls;
  for (int k = 0; k < timed; ++k) {
    const double wall = wall_ms(w + k), got = t.samples_ms[k];
    walls.push_back(wall);
    if (!(got >= 0) || got > wall * 1.01 + 0.02)
      return fmt::format("the worker reported {:.4f} ms for timed call {}, which took {:.4f} ms "
                         "from its request to the next on the parent's clock",
                         got, k + 1, wall);
  }
  const double reported_median = t.stats.median_ms;
  t.stats = summarize(t.samples_ms);
  const TimingStats wall_stats = summarize(walls);
  o.extra["parent_clock"] = {{"calls", n},
                             {"timed_calls", timed},
                             {"call_wall_median_ms", wall_stats.median_ms},
                             {"median_ms", t.stats.median_ms},
                             {"worker_median_ms", reported_median}};
  if (o.record && o.record->timed) {
    std::set<int> picked(slots_.begin(), slots_.end());
    picked.erase(-1);
    std::set<int> recorded;
    for (const RecordedCall& c : o.record->samples) {
      recorded.insert(c.pool_call);
      if (c.call != (c.pool_call >= w ? c.pool_call - w : -1))
        return fmt::format("the record numbers pool call {} as timed call {} after {} warm-up "
                           "calls",
                           c.pool_call, c.call, w);
    }
    if (recorded != picked)
      return fmt::format("the worker recorded {} calls for verification, not the {} the parent "
                         "picked after they had returned",
                         recorded.size(), picked.size());
  }
  return "";
}

}  // namespace solbench::harness
