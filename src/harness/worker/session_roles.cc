// The verdict strategy of each WorkerRole (protocol.h), on the shared round loop,
// timed pool run and sampled-call verification (session_state.h):
//
//   InProcess   Solution (and Baseline): the solution called here, the reference
//               run here, outputs compared here; then timing, the sampled timed
//               calls checked, T_ref
//   Recording   Recorder: the same calls and checks of the solution's own
//               behaviour, no reference; each round's and sampled call's outputs
//               and input digests written for the Judge (python/solbench_py/record.py)
//   Judging     Judge: no solution code; the inputs generated again, the reference
//               run here, the Recorder's records read as data and compared; T_ref
#include <exception>
#include <map>

#include <fmt/format.h>

#include "harness/worker/session_state.h"

namespace solbench::harness::detail {

namespace {

// ---------------------------------------------------------------- in-process

// The sampled timed calls of this process's own pool run.
class PoolSamples final : public SampledSource {
 public:
  PoolSamples(WorkerSession::Impl& s, TimedRun& t, py::object& w) : s_(s), t_(t), w_(w) {}
  size_t size() const override { return t_.kept.size(); }
  std::string name(size_t i) const override {
    return call_name(t_.kept[i].call, t_.kept[i].pool_call);
  }
  py::list pristine(size_t i) override {
    try {
      return t_.pool.attr("pristine")(t_.kept[i].pool_call, t_.kept[i].seed).cast<py::list>();
    } catch (py::error_already_set& e) {
      throw s_.reference_failure(e, "the reference failed on a timed call's inputs: ");
    }
  }
  std::pair<py::object, std::string> observed(size_t i, const py::list& pristine,
                                              bool inputs) override {
    std::string changed;
    if (inputs) {
      const auto names = w_.attr("changed_inputs")(t_.kept[i].inputs_after, pristine)
                             .cast<std::vector<std::string>>();
      if (!names.empty()) changed = names.front();
    }
    return {t_.kept[i].outputs, changed};
  }
  py::object values() override { return t_.pool; }

 private:
  WorkerSession::Impl& s_;
  TimedRun& t_;
  py::object& w_;
};

class InProcess : public RoleVerdict {
 public:
  using RoleVerdict::RoleVerdict;

  void evaluate(WorkloadRun& run) override {
    run.candidate = s_.solution_candidate(run.w);
    s_.run_rounds(run);
    run.o.correctness = run.acc;
    if (!s_.plan.time_solution) return;
    TimedRun t = s_.timed_pool_run(run, /*with_reference=*/true);
    // Gap 1 of docs/harness.md: re-check what timed calls produced, against the
    // reference run on the values each sampled call saw (generated again).
    PoolSamples samples(s_, t, run.w);
    s_.verify_sampled_calls(run, samples, t.sets);
    run.o.timing = t.result;
    s_.profile_pass(run, t);  // after the checks on the timed calls: it changes nothing they saw
    // In-worker T_ref only where the parent runs no reference worker (runner.h).
    if (s_.plan.time_reference)
      s_.time_reference(run.index, run.w, t.input_sets, t.ref_sets, run.o);
  }

  PhaseTimes round_phases() const override {
    return {"inputs_ms", "reference_ms", "solution_ms", "check_ms"};
  }
  void round(WorkloadRun& run, int round, py::list& inputs, PhaseTimes& t) override {
    const py::list refs = t.time("reference_ms", [&] {
      return s_.reference_outputs(run.w, inputs, "the reference failed: ");
    });
    const py::list outs = s_.alloc_outputs(run.w, refs);
    const py::object before = run.w.attr("snapshot")(inputs);
    const py::list got = t.time("solution_ms", [&] {
      return s_.call_solution(round, *run.candidate, inputs, outs);
    });
    s_.after_call(round, got, [&] {
      WorkerSession::Impl::check_inputs(run.w, inputs, before,
                                        fmt::format("in correctness round {}", round + 1));
    });
    t.time("check_ms", [&] { s_.compare_outputs(run, round, got, refs); });
  }
};

// The scoring baseline: in-process, and each outcome says how the reference ran.
//
// Several baseline workers measure one evaluation's T_b side by side
// (score/baseline.h); as in every worker, each of their steps that runs kernels holds
// the GPU's timing lock shared and each timed loop exclusively (device_lock.h).
// What needs no GPU, compiling the workload's shapes under torch.compile (seconds
// of Dynamo and Inductor), happens first and outside any step: baseline.precompile
// holds the lock (exclusively) only while a compiled graph executes, and Inductor's
// benchmarks (Triton's autotuning) hold it exclusively wherever they run, so no
// other kernel runs beside what they time (the lock is lent to Python at start).
class Baseline final : public InProcess {
 public:
  using InProcess::InProcess;

  void evaluate(WorkloadRun& run) override {
    if (!s_.plan.device.is_cuda() || !s_.timing_lock.is_open()) return InProcess::evaluate(run);
    auto a = ahead_.find(run.index);
    // With the GPU's memory shared out (memory_shares.h): the compile up to its first
    // GPU step first, as ahead of "go", holding no share; then the GPU work holding
    // the workload's footprint in shares, which other workers' compiles do not wait for.
    const bool shared_memory = s_.memory_shares.is_open();
    const bool compiled_here = shared_memory && a == ahead_.end();
    if (compiled_here) {  // its phases as for a workload tried ahead (kept in ahead_)
      const json before = run.o.phases_ms;
      ahead(run);
      run.o.phases_ms = before;
      a = ahead_.find(run.index);
    }
    // (Shares that are not open hold nothing and wait for nothing.)
    const MemorySharesHold hold(
        s_.memory_shares,
        memory_shares_for(workload_input_bytes(run.spec) + workload_output_bytes(run.spec)));
    if (shared_memory) {
      run.o.phases_ms["memory_shares"] = static_cast<double>(s_.memory_shares.held());
      run.o.phases_ms["memory_share_wait_ms"] =
          hold.waited_ms() + (a != ahead_.end() ? a->second.value("compile_share_wait_ms", 0.0) : 0.0);
    }
    const bool stopped = a != ahead_.end() && a->second.contains("precompile_stopped");
    if (a != ahead_.end() && !stopped) {
      // Compiled before "go", beside the solution's evaluation (compile_ahead), or
      // here before the shares.
      for (const auto& [k, v] : a->second.items()) run.o.phases_ms[k] = v;
      if (!compiled_here) run.o.phases_ms["precompiled_ahead"] = 1;
    } else if (s_.baseline_method == "torch.compile") {
      // Stopped ahead at its first GPU step: what is left (the graph's first run
      // and Triton's autotuning; after a graph break or a benchmark, more of the
      // compile) happens here, outside any step, as for a workload never tried
      // ahead. Left to the first round it happened inside that round's step, which
      // holds the GPU's lock shared: L2/036's worker ahead compiled 113 s so, and
      // 555 of the 884 T_b workloads of the public set's first 63 problems stopped
      // ahead (session 44, one H100).
      if (stopped) {
        run.o.phases_ms["ahead_stopped_ms"] = a->second.value("precompile_ms", 0.0);
        if (a->second.contains("precompile_stopped_in_compile"))
          run.o.phases_ms["ahead_stopped_in_compile"] = 1;
      }
      precompile(run);
    }
    if (a != ahead_.end()) ahead_.erase(a);
    InProcess::evaluate(run);
    // What torch's allocator keeps of the workload goes back to the GPU before its
    // shares do (after the last workload the worker's exit would free it only later).
    if (shared_memory) s_.release_device_memory();
  }

  // Before "go" (WorkerPlan::gpu_after_go): the workload's first call up to its
  // first GPU step (the solution's correctness rounds and the judge may run kernels
  // now, without the lock: Triton's autotuning must not run beside them), its
  // phases kept for its outcome. Every compile stops at a GPU step ahead of "go":
  // at its graph's first execution, with the graph compiled (and cached), or at a
  // benchmark Inductor runs while compiling (padding a matmul or not), in the middle
  // of a compile that then failed and starts again at the next call. False for the
  // latter, and for a first graph before a graph break: no compile done for
  // hand-back's count (kept_at_go).
  bool ahead(WorkloadRun& run) override {
    if (!s_.plan.device.is_cuda() || !s_.timing_lock.is_open() ||
        s_.baseline_method != "torch.compile")
      return false;
    {
      // Its inputs and the worker's context on the GPU while it compiles (memory_shares.h).
      const MemorySharesHold hold(s_.memory_shares,
                                  memory_shares_while_compiling(workload_input_bytes(run.spec)));
      if (s_.memory_shares.is_open()) run.o.phases_ms["compile_share_wait_ms"] = hold.waited_ms();
      precompile(run, /*run_graphs=*/false);
    }
    ahead_[run.index] = run.o.phases_ms;
    return !run.o.phases_ms.contains("precompile_stopped_in_compile");
  }

  void finished(WorkloadOutcome& o) override {
    // A compile that failed on a call switched the callable to eager (its
    // method/reason attributes say so); read after the workload, for the workload.
    std::string method = s_.baseline_method, reason = s_.baseline_reason;
    try {
      py::object m = py::getattr(s_.solution_fn, "method", py::none());
      if (!m.is_none()) method = m.cast<std::string>();
      py::object r = py::getattr(s_.solution_fn, "reason", py::none());
      if (!r.is_none()) reason = r.cast<std::string>();
    } catch (const std::exception&) {
      // Keep what start() reported.
    }
    o.extra["baseline"] = {{"method", method}, {"reason", reason}};
  }

 private:
  // The first call of the workload's shapes, on inputs of its own (a seed no
  // other call uses; values do not matter to the compile), outside the lock. A
  // failure here is left to the first correctness round, which meets it again.
  void precompile(WorkloadRun& run, bool run_graphs = true) {
    Stopwatch sw;
    try {
      py::list inputs;
      {
        const WorkerSession::Impl::GpuStep step(s_);  // the inputs are made on the GPU
        inputs = run.w.attr("make_inputs")(0, kPrecompileSeed).cast<py::list>();
      }
      const py::dict r = s_.runtime.attr("precompile")(s_.solution_fn, inputs, run_graphs);
      run.o.phases_ms["precompile_locked_ms"] = r["locked_ms"].cast<double>();
      if (r["stopped"].cast<bool>()) run.o.phases_ms["precompile_stopped"] = 1;
      // Stopped with most of the compile still to do: by a benchmark in the middle
      // of Inductor's compile (that compile failed, and the next call does it again
      // from the start), or at the first graph before a graph break (what follows it
      // is traced and compiled only when the call gets there).
      if (r.contains("stopped_at")) {
        const std::string at = r["stopped_at"].cast<std::string>();
        if (at == "benchmark" || at == "graph_break")
          run.o.phases_ms["precompile_stopped_in_compile"] = 1;
      }
    } catch (py::error_already_set&) {
      // The rounds make inputs and call the reference again, and say what fails.
    }
    run.o.phases_ms["precompile_ms"] = sw.ms();
  }

  static constexpr uint64_t kPrecompileSeed = 0x9e3779b97f4a7c15ULL;
  std::map<size_t, json> ahead_;  // workloads compiled ahead: their precompile phases
};

// ---------------------------------------------------------------- recording
// The calls and the checks of the solution's own behaviour as in-process, but no
// reference runs here and no output is compared. Each correctness round and each
// sampled timed call is written (record.py) for the Judge, which judges them after
// this worker has exited.

class Recording final : public RoleVerdict {
 public:
  using RoleVerdict::RoleVerdict;

  void begin(size_t) override {
    rec_ = CallRecord{};
    in_timing_ = false;
  }
  void evaluate(WorkloadRun& run) override {
    dir_ = fs::current_path() / "judge" / std::to_string(run.index);
    std::error_code ec;
    if (!fs::create_directory(dir_, ec))  // made by the worker, never found
      throw Finish{Status::RuntimeError,
                   "cannot make the record folder " + dir_.string() + ": " +
                       (ec ? ec.message() : std::string("it exists already"))};
    run.candidate = s_.solution_candidate(run.w);
    s_.run_rounds(run);
    if (s_.plan.time_solution) {
      // The rounds are on disk with their digests: a streamed Judge judges them
      // while this worker times the solution (the parent decides; protocol.h).
      s_.emit(make_frame(FrameType::Rounds, {{"index", run.index}, {"record", rec_.to_json()}}));
      timing(run);
    }
    attach(run.o, false);
  }
  void failed(WorkloadOutcome& o) override { attach(o, true); }

  PhaseTimes round_phases() const override { return {"inputs_ms", "solution_ms", "record_ms"}; }
  void round(WorkloadRun& run, int round, py::list& inputs, PhaseTimes& t) override {
    py::list outs;
    py::object before;
    // (inputs_ms's parts beside it: what inputs cost the Recorder, step by step.)
    t.time("inputs_ms", [&] {
      outs = t.time("inputs_outputs_ms", [&] { return s_.alloc_outputs(run.w, py::none()); });
      // What the call was given: the judge tells "not these inputs" from "changed".
      before = t.time("inputs_digests_ms",
                      [&] { return s_.record_mod.attr("digests")(inputs); });
    });
    const py::list got = t.time("solution_ms", [&] {
      return s_.call_solution(round, *run.candidate, inputs, outs);
    });
    t.time("checks_ms", [&] { s_.after_call(round, got, {}); });
    t.time("record_ms", [&] {
      const std::string file = fmt::format("r{}.rec", round);
      rec_.rounds.push_back({round, -1, -1, file,
                             write(file, got, inputs, before,
                                   fmt::format("correctness round {}", round + 1))});
    });
  }

 private:
  void timing(WorkloadRun& run) {
    in_timing_ = true;
    const TimedRun t = s_.timed_pool_run(run, /*with_reference=*/false);
    Stopwatch rsw;
    int k = 0;
    for (const auto& saved : t.kept) {
      const WorkerSession::Impl::GpuStep step(s_);  // copied off the GPU
      const std::string file = fmt::format("s{}.rec", k++);
      rec_.samples.push_back({-1, saved.call, saved.pool_call, file,
                              write(file, saved.outputs, saved.inputs_after, py::none(),
                                    call_name(saved.call, saved.pool_call))});
    }
    rec_.timed = true;
    run.o.phases_ms["record_samples_ms"] = rsw.ms();
    run.o.extra["verification"] = {{"recorded_calls", t.kept.size()}, {"input_sets", t.sets}};
    run.o.timing = t.result;
    s_.profile_pass(run, t);  // the samples are written: nothing recorded depends on it
  }

  // Writes one call's record; returns its SHA-256.
  std::string write(const std::string& file, const py::handle& outputs, const py::handle& inputs,
                    const py::handle& before, const std::string& what) {
    try {
      return s_.record_mod.attr("write_call")((dir_ / file).string(), outputs, inputs, before)
          .cast<std::string>();
    } catch (py::error_already_set& e) {
      throw Finish{Status::RuntimeError,
                   fmt::format("could not record {}: {}", what, python_error_text(e))};
    }
  }

  void attach(WorkloadOutcome& o, bool failed) {
    CallRecord r = rec_;
    if (failed) {
      r.failed_stage = in_timing_ ? "timing" : "round";
      r.failed_round = in_timing_ ? -1 : static_cast<int>(r.rounds.size());
      r.samples.clear();  // a failed timing loop recorded none worth judging
      if (in_timing_) r.timed = false;
    }
    o.record = std::move(r);
  }

  // The current workload's record, its folder, and whether its evaluation had
  // reached the timed calls (where a failure happened).
  CallRecord rec_;
  fs::path dir_;
  bool in_timing_ = false;
};

// ---------------------------------------------------------------- judging
// The Judge never loaded the solution, and the Recorder has exited. With a record,
// the inputs are generated again (same seed and round; for timed calls the same
// fresh seed, from the secret), the reference runs here, and the recorded outputs
// (read as data, their SHA-256 checked) are compared, as in-process would. The
// verdict is the first failure in the order the calls were made; when the
// solution's own evaluation failed at some stage, everything recorded before it is
// judged and a reference that cannot run at that stage still decides first (the
// parent keeps the solution's failure otherwise). Without a record: T_ref only.

Finish unreadable_record(const std::string& what, const std::string& why) {
  return Finish{Status::RuntimeError,
                fmt::format("the solution's worker left an unreadable record of {}: {}", what, why)};
}

class Judging final : public RoleVerdict {
 public:
  using RoleVerdict::RoleVerdict;

  void evaluate(WorkloadRun& run) override {
    const auto& records = s_.plan.judge.records;
    if (run.index < records.size() && records[run.index])
      judge(run, *records[run.index]);
    else
      reference_only(run);
  }

  int round_count(const WorkloadRun&) const override {
    return static_cast<int>(record_->rounds.size());
  }
  WorkloadPhase round_phase() const override { return WorkloadPhase::Judging; }
  PhaseTimes round_phases() const override { return {"inputs_ms", "reference_ms", "check_ms"}; }
  const char* rounds_key() const override { return "judge_rounds_ms"; }
  void round(WorkloadRun& run, int round, py::list& inputs, PhaseTimes& t) override {
    const RecordedCall& c = record_->rounds.at(static_cast<size_t>(round));
    const std::string what = fmt::format("correctness round {}", c.round + 1);
    const py::list refs = t.time("reference_ms", [&] {
      return s_.reference_outputs(run.w, inputs, "the reference failed: ");
    });
    // (check_ms's parts beside it: the record read, the inputs' digests, the comparison.)
    t.time("check_ms", [&] {
      py::dict got = t.time("check_read_ms", [&] { return load(c, what); });
      const py::tuple seen = t.time("check_inputs_ms", [&] {
        return judge_inputs(run.w, inputs, got, got["inputs_before"], what);
      });
      const auto unreproduced = seen[0].cast<std::vector<std::string>>();
      if (!unreproduced.empty())
        throw Finish{Status::RuntimeError,
                     fmt::format("{}: the solution's worker was given other values of input '{}' "
                                 "than the reference worker generates for that round (changed "
                                 "before the call, or not reproducible here)",
                                 what, unreproduced.front())};
      const auto changed = seen[1].cast<std::vector<std::string>>();
      if (!changed.empty())
        throw WorkerSession::Impl::inputs_changed(
            changed, fmt::format("in correctness round {}", c.round + 1));
      t.time("check_compare_ms", [&] { s_.compare_outputs(run, c.round, got["outputs"], refs); });
    });
  }

 private:
  // The sampled timed calls of the Recorder's record.
  class RecordSamples final : public SampledSource {
   public:
    RecordSamples(Judging& j, WorkloadRun& run, const py::list& input_sets)
        : j_(j), run_(run), call_values_(run.w.attr("call_values")(input_sets)) {}
    size_t size() const override { return j_.record_->samples.size(); }
    std::string name(size_t i) const override { return call_name(c(i).call, c(i).pool_call); }
    py::list pristine(size_t i) override {
      const uint64_t seed = value_seed(j_.s_.plan.judge.value_secret,
                                       WorkerSession::Impl::uuid_of(run_.spec), ValueKind::Call,
                                       c(i).pool_call);
      try {
        return call_values_.attr("pristine")(c(i).pool_call, seed).cast<py::list>();
      } catch (py::error_already_set& e) {
        throw Finish{Status::RuntimeError,
                     "generating a timed call's inputs failed: " + python_error_text(e)};
      }
    }
    std::pair<py::object, std::string> observed(size_t i, const py::list& pristine,
                                                bool inputs) override {
      const std::string what = name(i);
      py::dict got = j_.load(c(i), what);
      std::string changed;
      if (inputs) {
        const py::tuple seen = j_.judge_inputs(run_.w, pristine, got, py::none(), what);
        const auto names = seen[1].cast<std::vector<std::string>>();
        if (!names.empty()) changed = names.front();
      }
      return {got["outputs"], changed};
    }
    py::object values() override { return call_values_; }

   private:
    const RecordedCall& c(size_t i) const { return j_.record_->samples[i]; }
    Judging& j_;
    WorkloadRun& run_;
    py::object call_values_;
  };

  void judge(WorkloadRun& run, const CallRecord& r) {
    record_ = &r;
    dir_ = r.dir;
    s_.run_rounds(run);
    run.o.correctness = run.acc;
    py::list input_sets, ref_sets;
    int sets = -1;
    const auto make_sets = [&] {
      Stopwatch ssw;
      sets = s_.timing_sets(run.spec, run.w, input_sets, ref_sets);
      run.o.phases_ms["timing_sets_ms"] = ssw.ms();
    };
    std::exception_ptr sets_failed;
    if (s_.rest_owed == run.index) {
      // The rounds came ahead: the timing sets (the same whatever the rest says)
      // are made while the solution is still timed, then the rest (r is whole after
      // it). Their failure counts only where the rest says the timing ran.
      try {
        make_sets();
      } catch (...) {
        sets_failed = std::current_exception();
      }
      Stopwatch wsw;
      const bool kept = s_.take_rest(run.index);
      run.o.phases_ms["record_rest_wait_ms"] = wsw.ms();
      if (!kept) throw Finish{Status::RuntimeError, "the record was withdrawn"};  // dropped
    }
    if (r.failed_stage == "round") return judge_failed_round(run, r);
    if (r.failed_stage == "after" || (r.failed_stage.empty() && !r.timed)) return;
    if (sets_failed) std::rethrow_exception(sets_failed);
    if (sets < 0) make_sets();
    if (r.failed_stage == "timing") return;
    s_.progress(run.index, WorkloadPhase::Judging);
    RecordSamples samples(*this, run, input_sets);
    s_.verify_sampled_calls(run, samples, sets);
    if (!s_.plan.time_reference) return;
    if (s_.judging_ahead) {
      s_.reference_owed.insert(run.index);  // timed after "go" (time_owed_reference)
      return;
    }
    s_.time_reference(run.index, run.w, input_sets, ref_sets, run.o);
  }

  // The reference ran before the solution's call in the round that failed: one
  // that cannot run here, or fails, decides before the solution's own failure.
  // Inputs that cannot be generated failed the solution's worker the same way (its
  // message stands), unless that means the workload cannot run here (a skip).
  void judge_failed_round(WorkloadRun& run, const CallRecord& r) {
    if (r.failed_round < 0 || r.failed_round >= s_.plan.rounds) return;
    const WorkerSession::Impl::GpuStep step(s_);
    py::list inputs;
    try {
      inputs = s_.make_inputs(run.w, run.spec, r.failed_round);
    } catch (const Finish& f) {
      if (f.skip) throw;
      return;
    }
    s_.reference_outputs(run.w, inputs, "the reference failed: ");
  }

  // The whole job without a record: T_ref on the timing sets. A reference that
  // cannot run here is a skip or INVALID_REFERENCE, as in the solution's worker
  // (which reports the same for its own correctness rounds).
  void reference_only(WorkloadRun& run) {
    py::list input_sets, ref_sets;
    s_.timing_sets(run.spec, run.w, input_sets, ref_sets);
    if (s_.judging_ahead) {
      s_.reference_owed.insert(run.index);
      return;
    }
    s_.time_reference(run.index, run.w, input_sets, ref_sets, run.o);
    if (!run.o.reference_timing && !s_.reference_known.count(run.index)) {
      run.o.status = Status::RuntimeError;
      if (run.o.log.empty()) run.o.log = "the reference was not timed";
    }
  }

  // A recorded call, read as data: its SHA-256 must be the reported one.
  py::dict load(const RecordedCall& c, const std::string& what) {
    py::dict got;
    try {
      got = s_.record_mod.attr("read_call")((dir_ / c.file).string(), c.sha256, s_.plan.device.str())
                .cast<py::dict>();
    } catch (py::error_already_set& e) {
      const std::string msg = py::str(e.value()).cast<std::string>();
      if (e.matches(s_.record_mod.attr("RecordChanged")))
        throw Finish{Status::RewardHack,
                     fmt::format("the record of {} is not what the solution's worker wrote ({}): "
                                 "it was changed after the call",
                                 what, msg)};
      if (e.matches(s_.record_mod.attr("RecordError"))) throw unreadable_record(what, msg);
      throw;
    }
    const auto devices = got["devices"].cast<std::vector<std::string>>();
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i] != s_.plan.device.str())
        throw Finish{Status::RuntimeError,
                     fmt::format("{}: output {} is on {}; the evaluation runs on {}", what, i,
                                 devices[i], s_.plan.device.str())};
    return got;
  }

  // Workload.judge_inputs on a loaded record: (inputs not the ones generated here,
  // inputs the call changed); a malformed digest list is an unreadable record.
  py::tuple judge_inputs(py::object& w, const py::list& inputs, py::dict& got,
                         const py::object& before, const std::string& what) {
    try {
      return w.attr("judge_inputs")(inputs, got["inputs_after"], before).cast<py::tuple>();
    } catch (py::error_already_set& e) {
      if (!e.matches(s_.record_mod.attr("RecordError"))) throw;
      throw unreadable_record(what, py::str(e.value()).cast<std::string>());
    }
  }

  const CallRecord* record_ = nullptr;  // the workload's, while it is judged
  fs::path dir_;
};

}  // namespace

std::unique_ptr<RoleVerdict> make_role_verdict(WorkerSession::Impl& s) {
  switch (s.plan.role) {
    case WorkerRole::Solution:
      return std::make_unique<InProcess>(s);
    case WorkerRole::Recorder:
      return std::make_unique<Recording>(s);
    case WorkerRole::Judge:
      return std::make_unique<Judging>(s);
    case WorkerRole::Baseline:
      return std::make_unique<Baseline>(s);
  }
  throw std::runtime_error("a worker plan of an unknown role");
}

}  // namespace solbench::harness::detail
