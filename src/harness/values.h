// The values a workload's calls are given, and who may know them when.
//
// Every input value a solution sees (a correctness round's inputs, a timing input
// set, a timed call's fresh values) is drawn from a seed. The seeds are derived
// from a secret that only the parent and the reference worker (which never loads
// solution code) hold. A worker that runs solution code asks the parent for each
// seed at the moment it needs it, over its channel:
//
//   worker -> parent  {"type":"values", "what":"round", "round": r}
//                     {"type":"values", "what":"call", "call": i}
//                     {"type":"values", "what":"calls_end", "calls": n}
//   parent -> worker  {"type":"values", "seed": S, "keep": slot}
//
// so the values of call i do not exist anywhere in the worker before call i-1 has
// returned, whatever code in the worker reads its own memory. The parent also
// decides which calls are kept for verification (reservoir sampling over every
// pool call, "keep": the slot that call i-1 takes, or -1), after the call has
// returned; and it answers only the next request the harness would make (rounds
// in order, calls in order, each once), so a request that is not the harness's
// shows as a protocol violation. Each request's arrival is a time stamp on the
// parent's clock: a timed call's span lies between its request and the next one,
// which bounds what the worker may report (ValueIssuer::check).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"

namespace solbench::harness {

// What a seed is for: a round (correctness rounds 0..R-1, then the timing input
// sets R, R+1, ...) or a call of the timing loop's argument pool (warm-up included).
enum class ValueKind { Round, Call };

// The seed (below 2^63) of one round or call of workload `uuid`, from the
// evaluation's secret: SHA-256 of them all, so that knowing any number of seeds
// tells nothing of another.
uint64_t value_seed(uint64_t secret, const std::string& uuid, ValueKind kind, int index);

// A seed handed out for a call, and where the previous call's outputs go.
struct CallGrant {
  uint64_t seed = 0;
  int keep = -1;  // the sample slot of the previous call (-1: not kept)
};

// The worker's side: where its seeds come from.
class ValueSource {
 public:
  virtual ~ValueSource() = default;
  virtual uint64_t round_seed(const std::string& uuid, int round) = 0;
  // Call `call` of the workload in progress.
  virtual CallGrant call(int call) = 0;
  // After the loop's last call (`calls` in all): the slot of that last call.
  virtual int calls_end(int calls) = 0;
  // Time spent waiting for seeds since the last call of this (then reset to 0).
  virtual double take_wait_ms() { return 0; }
};

// A worker that runs no solution code (the reference worker) derives its seeds
// from the secret in its plan; its own timing pool (T_ref) draws fresh seeds
// that nobody else needs and keeps nothing.
class LocalValues final : public ValueSource {
 public:
  explicit LocalValues(uint64_t secret);
  uint64_t round_seed(const std::string& uuid, int round) override;
  CallGrant call(int call) override;
  int calls_end(int) override { return -1; }

 private:
  uint64_t secret_;
  std::mt19937_64 fresh_;
};

// A worker that runs solution code asks the parent; `ask` sends a frame and
// returns the parent's reply (it ends the process when the parent is gone).
class ParentValues final : public ValueSource {
 public:
  using Ask = std::function<json(const json&)>;
  explicit ParentValues(Ask ask) : ask_(std::move(ask)) {}
  uint64_t round_seed(const std::string& uuid, int round) override;
  CallGrant call(int call) override;
  int calls_end(int calls) override;
  double take_wait_ms() override;

 private:
  json ask(json request);
  Ask ask_;
  int64_t wait_ns_ = 0;
};

// The parent's side, one per worker: answers the requests of the workload in
// progress and afterwards checks the worker's report against what it handed out.
class ValueIssuer {
 public:
  // `rounds`: correctness rounds; `max_rounds`: rounds including timing sets;
  // `max_calls`: the pool's capacity.
  ValueIssuer(uint64_t secret, int max_rounds, int max_calls);

  // A workload begins: `sample` calls are kept for verification.
  void begin(const std::string& uuid, int sample);
  // The reply to a "values" request, read at `now_ns` on the parent's clock.
  // Throws ValueViolation when the request is not the next one the harness makes.
  json answer(const json& request, int64_t now_ns);

  // Why the worker's outcome for this workload cannot be believed ("" when it
  // can): the number of calls it reports against the seeds it was given, each
  // timed call's reported time against the parent's clock, and the sampled calls
  // of its record against the ones the parent picked. Also replaces the
  // outcome's statistics by those of its samples (the worker may not state a
  // median its samples do not have) and adds extra["parent_clock"].
  std::string check(WorkloadOutcome& o) const;

  int calls() const { return static_cast<int>(call_ns_.size()); }
  bool active() const { return active_; }

 private:
  uint64_t secret_;
  int max_rounds_, max_calls_;
  bool active_ = false;
  std::string uuid_;
  int sample_ = 0;
  int next_round_ = 0;
  bool ended_ = false;
  int64_t end_ns_ = 0;
  std::vector<int64_t> call_ns_;  // when each call's request arrived
  std::vector<int> slots_;        // pool call per sample slot
  std::mt19937_64 pick_;
};

// A request the harness would not make (out of order, twice, after the end).
struct ValueViolation : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace solbench::harness
