#include "eval/evaluate.h"

#include <algorithm>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "core/problem.h"
#include "core/settings.h"
#include "core/solution.h"
#include "core/text.h"
#include "eval/baselines.h"
#include "eval/profile_verdict.h"
#include "eval/recorder.h"
#include "eval/scoring.h"
#include "harness/eval_plan.h"
#include "harness/evaluate.h"
#include "harness/interrupt.h"
#include "harness/timing/device_lock.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/timer.h"
#include "harness/worker/worker_policy.h"
#include "harness/worker/zygote.h"
#include "score/environment.h"
#include "score/selection.h"
#include "score/tracer_process.h"
#include "sol/hardware.h"

namespace solbench::eval {

namespace {


using harness::WorkloadOutcome;

// The nvcc target for --cuda-arch on `device`: built for the GPU that runs it,
// as SOL-ExecBench does (nvcc's default, sm_75 in CUDA 13, would JIT-compile PTX at
// load and refuse Hopper-only instructions). NVML names the compute capability
// without initialising CUDA in this process (device.h identify_device).
std::string resolve_cuda_arch(const std::string& choice, const Device& device,
                              const std::optional<gpu::DeviceIdentity>& identity,
                              Observer& observer) {
  if (choice == "default") return "";
  if (choice != "auto") return choice;
  if (!device.is_cuda()) return "";
  try {
    const gpu::DeviceIdentity d = identity ? *identity : gpu::identify_device(device.ordinal());
    return gpu::sm_arch_name(d.cc_major, d.cc_minor).substr(3);  // "sm_90a" -> "90a"
  } catch (const std::exception& e) {
    observer.notice(fmt::format("--cuda-arch auto: {}; building for nvcc's default", e.what()));
    return "";
  }
}

class Evaluation {
 public:
  Evaluation(const Request& request, Observer& observer) : req_(request), ob_(observer) {}
  ~Evaluation();
  Report run();

 private:
  void mark(const char* stage) { rep_.timeline[stage] = harness::monotonic_ns(); }
  void load();
  void check_usage_and_start();
  void choose_hardware();
  void arch_ready();
  // Applies T_SOL once the bounds thread is done (waits for it with `wait`);
  // false when it is not done yet.
  bool bounds_ready(bool wait);
  void choose_baseline(size_t k);
  void finalize_when_bounded(size_t k);
  void open_store();
  void build();
  void skip(size_t k, const std::string& reason);
  void skip_all(const std::string& reason);
  void fail_build();
  void run_workers();
  void on_event(const harness::RunnerEvent& e);
  void judge(size_t k, const WorkloadOutcome& out, const json& env);
  std::optional<score::BaselineResult> cached_baseline(size_t k);
  score::MeasureOptions measure_options() const;
  void start_baselines_ahead();
  void decide_go();
  void apply_baseline(size_t k, const score::BaselineResult& r, const store::BaselineKey* key);
  void measure_baselines();
  void finalize(size_t k);
  void finish();

  const Request& req_;
  Observer& ob_;
  Report rep_;
  Problem problem_;
  Solution solution_;
  std::vector<size_t> sel_;  // workload indices, by position
  json timer_options_ = json::object();
  std::future<void> toolchains_;
  // What the bounds thread finds (choose_hardware): T_SOL by position.
  struct Bounds {
    std::vector<score::SolBound> bounds;  // empty without a model
    int64_t done_ns = 0;
    json tracer = nullptr;  // how the tracer process started; null: none (cache hits)
  };
  std::future<Bounds> bounds_;
  std::future<score::ArchChoice> arch_found_;  // the model, before the bounds
  std::vector<size_t> awaiting_bounds_;        // judged before T_SOL was known
  Device device_;
  std::string device_text_;       // as asked, or the GPU that cuda:any claimed
  harness::GpuClaim gpu_claim_;   // cuda:any: held for the evaluation's length
  std::optional<gpu::DeviceIdentity> gpu_;  // the cuda device, found before anything runs
  std::string driver_, def_hash_;
  std::optional<json> predicted_;
  std::map<std::string, AheadBaseline> ahead_rows_;  // Request::baselines_ahead, by uuid
  std::unique_ptr<StoreRecorder> rec_;
  harness::PreparedSolution prep_;
  std::vector<bool> finalized_, judged_;
  std::vector<size_t> pending_;  // positions whose T_b the baseline worker measures
  std::vector<size_t> planned_;  // positions the workers get (plan position -> sel_ position)
  // Per position: why it cannot run here (a safetensors blob missing), found before
  // anything starts; "" for the others. Neither a worker nor T_SOL looks at those.
  std::vector<std::string> missing_;
  json solution_env_ = json::object();  // the solution worker's environment
  json last_env_ = json::object();
  // T_b measured ahead (start_baselines_ahead): its workers start when the
  // solution's first worker is ready and compile beside the evaluation; `go_`
  // lets them run their workloads once the solution's workers are done (false:
  // none is needed). What they measure is collected on their threads and applied
  // here after.
  struct Ahead {
    std::vector<size_t> positions;  // sel_ positions, in the order measured
    std::mutex mu;
    std::vector<std::optional<score::BaselineResult>> results;  // by index in positions
    std::vector<std::optional<store::BaselineKey>> keys;
    std::vector<std::string> warnings;
    json workers = json::array();
    std::string failure;  // the workers could not run at all
  };
  std::unique_ptr<Ahead> ahead_;
  std::promise<bool> go_;
  bool go_decided_ = false;
  std::future<void> ahead_done_;
};

// The workers measuring T_b ahead end only once told: "cancel" where the
// evaluation ended before deciding (an error, an interruption).
Evaluation::~Evaluation() {
  if (!go_decided_) go_.set_value(false);
  if (ahead_done_.valid()) ahead_done_.wait();
}

Report Evaluation::run() {
  mark("start");
  load();
  check_usage_and_start();
  choose_hardware();
  open_store();
  build();
  if (req_.build_only && prep_.ok) {
    skip_all("--build-only: built, not evaluated");
  } else if (prep_.ok) {
    if (device_.is_cpu()) bounds_ready(/*wait=*/true);  // never a trace beside a timed CPU loop
    run_workers();
    measure_baselines();
  } else {
    fail_build();
  }
  finish();
  return std::move(rep_);
}

// Everything is checked before anything is built or run.
void Evaluation::load() {
  Diagnostics diags;
  problem_ = load_problem(problem_paths(req_.problem_dir), diags);
  if (!req_.reference) solution_ = load_solution(req_.solution, diags);
  const auto refuse_if_any = [](const Diagnostics& d, bool usage) {
    if (d.empty()) return;
    std::vector<std::string> lines;
    for (const auto& item : d.items()) lines.push_back(item.str());
    throw RequestError(usage, lines);
  };
  refuse_if_any(diags, /*usage=*/false);  // an input that does not load
  sel_ = score::select_workloads(problem_, req_.workloads, diags);
  refuse_if_any(diags, /*usage=*/true);  // a workload asked for that is not there
  // A solution for another problem is a usage error: nothing is built, run or stored.
  if (!req_.reference && solution_.definition != problem_.definition.name)
    throw RequestError(true, {fmt::format(
        "{}: solution {} is for definition \"{}\", not \"{}\" ({})", req_.solution,
        solution_.name, solution_.definition, problem_.definition.name, req_.problem_dir)});
  // e.g. workload inputs the definition lacks: ignored, as the public tool does.
  for (const auto& d : diags.warnings()) ob_.notice(d.str());
  if (sel_.empty())
    throw RequestError(false, {req_.problem_dir + ": no workloads to evaluate"});
  rep_.definition = problem_.definition.name;
  rep_.solution = req_.reference ? reference_solution_name(problem_.definition.name)
                                 : solution_.name;
  rep_.device = req_.device;
  rep_.traces_file = req_.traces_file;
  rep_.baselines_skipped = req_.settings.no_baseline;
  for (size_t i : sel_) {
    WorkloadReport w;
    w.index = i;
    w.uuid = problem_.workloads[i].uuid;
    for (const auto& [n, v] : problem_.workloads[i].axes) w.axes[n] = v;
    rep_.workloads.push_back(std::move(w));
  }
  finalized_.assign(sel_.size(), false);
  judged_.assign(sel_.size(), false);
  for (size_t i : sel_) missing_.push_back(missing_blob(problem_, i));
  ob_.selected(sel_.size());
}

void Evaluation::check_usage_and_start() {
  device_text_ = req_.device;
  if (req_.device == kAnyGpu) {
    // The GPU with the fewest evaluations in flight (device_lock.h GpuClaim);
    // a build alone needs none (it targets the first GPU's architecture).
    if (req_.build_only) {
      device_text_ = Device::cuda(0).str();
    } else {
      try {
        gpu_claim_ = harness::GpuClaim::least_busy_gpu();
      } catch (const std::exception& e) {
        throw RequestError(true, {fmt::format("--device {}", e.what())});
      }
      device_text_ = Device::cuda(gpu_claim_.ordinal()).str();
    }
    rep_.device = device_text_;
  }
  device_ = parse_device(device_text_, req_.settings.timer);
  // An unknown --arch is refused before anything runs (the name alone decides).
  if (!req_.settings.arch.empty()) {
    try {
      (void)sol::select_hardware(req_.settings.arch);
    } catch (const std::exception& e) {
      throw RequestError(true, {e.what()});
    }
  }
  mark("inputs_loaded");
  if (req_.build_only) return;  // nothing runs: no device, zygote or sandbox needed
  // A cuda device that is not here is refused before anything is built or run
  // (else every workload would be skipped and the evaluation "pass").
  if (device_.is_cuda()) {
    try {
      gpu_ = gpu::identify_device(device_.ordinal());
    } catch (const std::exception& e) {
      const gpu::DeviceCount here = gpu::device_count();
      const std::string why =
          here.count == 0 ? here.reason
                          : here.count <= device_.ordinal()
                                ? fmt::format("this machine has {} CUDA device(s)", here.count)
                                : std::string(e.what());
      throw RequestError(true, {fmt::format("--device {}: no such CUDA device here ({}); "
                                            "--build-only builds without one",
                                            device_text_, why)});
    }
  }
  // Workers fork from a process that imports torch while the build and T_SOL run.
  harness::start_process_zygote();
  // The workers' sandbox plans need the toolchain probes (compiler drivers and the
  // interpreter, run as child processes: 0.1 s on the H100 machine); they run
  // while T_SOL and the build are looked up (find_toolchains memoises them).
  if (!req_.no_sandbox)
    toolchains_ = std::async(std::launch::async, [] { (void)harness::find_toolchains(); });
  mark("zygote_asked");
  if (req_.settings.timer != "auto") timer_options_["timer"] = req_.settings.timer;
}

// T_SOL (cached per workload and model; tracing runs only the reference) is
// found on a thread of its own from the start: the hardware model (the detected
// GPU's asks NVML, 20-50 ms), then each workload's bound, its trace (on a cache
// miss) in a tracer process (score/tracer_process.h: torch is imported there,
// never in this process), so that it runs beside the build and the workers.
// Nothing before the scores needs it: results that arrive before it wait for
// their T_b decision (bounds_ready) while the workers go on. On the CPU the
// workers wait for it before they start (after the build): a trace beside a
// timed CPU loop would take its cores.
void Evaluation::choose_hardware() {
  if (req_.build_only) return;  // no bound without an evaluation
  auto chosen = std::make_shared<std::promise<score::ArchChoice>>();
  arch_found_ = chosen->get_future();
  bounds_ = std::async(std::launch::async, [this, chosen, arch = req_.settings.arch, device = device_] {
    Bounds b;
    const score::ArchChoice model = score::choose_arch(arch, device);
    chosen->set_value(model);
    if (model.model) {
      score::TracerProcess tracer(score::kTraceTimeoutS);
      sol::AnalysisOptions ao;
      ao.trace = tracer.fn();
      ao.memo = std::make_shared<sol::GraphMemo>();  // one trace per shape signature
      const sol::HardwareModel* measured = model.measured ? &*model.measured : nullptr;
      for (size_t k = 0; k < sel_.size(); ++k) {
        if (!missing_[k].empty()) {  // skipped: nothing to bound, no trace started for it
          score::SolBound none;
          none.reason = "not bounded: " + missing_[k];
          b.bounds.push_back(std::move(none));
          continue;
        }
        b.bounds.push_back(score::sol_bound(problem_, sel_[k], *model.model, ao, measured));
      }
      b.tracer = tracer.launch();
    }
    b.done_ns = harness::monotonic_ns();
    return b;
  });
}

// The hardware model (milliseconds after the start; needed when the first worker
// names its device).
void Evaluation::arch_ready() {
  if (arch_found_.valid()) rep_.arch = arch_found_.get();  // an unknown name was refused before
}

bool Evaluation::bounds_ready(bool wait) {
  if (!bounds_.valid()) return true;
  if (!wait && bounds_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  arch_ready();
  const Bounds b = bounds_.get();
  const score::ArchChoice& arch = rep_.arch;
  for (size_t k = 0; k < sel_.size(); ++k) {
    ScoreState& st = rep_.workloads[k].score;
    if (arch.model) st.bound = b.bounds[k];
    else st.bound.reason = "no T_SOL: " + arch.reason;
  }
  rep_.timeline["t_sol"] = b.done_ns;
  rep_.tracer = b.tracer;
  if (arch.model && score::is_b200(*arch.model)) {
    try {
      const auto pub = score::published_b200(problem_, req_.problem_dir, &rep_.published_note);
      for (size_t k = 0; k < sel_.size(); ++k)
        if (sel_[k] < pub.size()) rep_.workloads[k].score.published = pub[sel_[k]];
    } catch (const std::exception& e) {
      rep_.published_note = e.what();
    }
  }
  // The results that arrived before T_SOL: final now.
  const std::vector<size_t> waiting = std::move(awaiting_bounds_);
  awaiting_bounds_.clear();
  for (size_t k : waiting) finalize(k);
  return true;
}

void Evaluation::open_store() {
  driver_ = score::driver_version(device_);
  const store::SolutionRecord record = req_.reference
                                           ? reference_solution_record(problem_.definition)
                                           : store::SolutionRecord::from(solution_);
  rec_ = std::make_unique<StoreRecorder>(req_, record, [this]() {
    if (!predicted_) predicted_ = score::predicted_worker_env(device_, timer_options_);
    return *predicted_;
  });
  def_hash_ = store::definition_hash(problem_.definition);
  if (!req_.baselines_ahead.empty())
    ahead_rows_ = read_ahead_baselines(req_.baselines_ahead, def_hash_,
                                       [this](const std::string& w) { rec_->warn(w); });
  mark("store_ready");
}

// The build (or a cache hit), outside any worker: compilers are trusted, the
// code is not run.
void Evaluation::build() {
  if (req_.reference) {
    prep_ = harness::reference_as_solution();
  } else {
    harness::PrepareOptions po;
    po.device = device_;
    po.compile_timeout = req_.settings.compile_timeout();
    po.keep_staging = req_.keep_staging;
    po.cuda_arch = resolve_cuda_arch(req_.cuda_arch, device_, gpu_, ob_);
    ob_.status("building " + rep_.solution);
    prep_ = harness::prepare_solution(solution_, problem_.definition, po);
  }
  mark("built");
  rep_.build.ok = prep_.ok;
  if (prep_.build) {
    rep_.build.record = prep_.build->to_json();
    rep_.build.record.erase("log");
    for (const auto& v : prep_.build->import_violations)
      ob_.build_warning("the solution imports " + v.str());
  }
  if (!prep_.ok) {
    rep_.build.first_error = prep_.first_error;
    rep_.build.log = prep_.log;
  }
}

// One build, one report: the first trace carries the whole message (the build
// log, first error first); the others point to it, unless the reason is a
// single short line, which every trace repeats.
void Evaluation::fail_build() {
  ob_.clear_status();
  const size_t nl = prep_.log.find('\n');
  const bool one_line =
      (nl == std::string::npos || nl + 1 == prep_.log.size()) && prep_.log.size() <= 300;
  const std::string pointer = fmt::format(
      "{}: the solution was not built; the build log is in the trace of workload {} (the first "
      "of this evaluation)",
      status_name(prep_.failure), rep_.workloads.front().uuid);
  for (size_t k = 0; k < sel_.size(); ++k) {
    WorkloadOutcome out;
    out.index = static_cast<int>(sel_[k]);
    out.uuid = rep_.workloads[k].uuid;
    out.status = prep_.failure;
    out.log = k == 0 || one_line ? prep_.log : pointer;
    if (prep_.skip) {
      out.skipped = true;
      out.skip_reason = prep_.log;
      out.log.clear();
    }
    judge(k, out, json{{"device", device_text_}, {"driver", driver_}});
  }
}

// The workload at position k is not evaluated, and says why; nothing of it is traced
// or stored.
void Evaluation::skip(size_t k, const std::string& reason) {
  WorkloadOutcome out;
  out.index = static_cast<int>(sel_[k]);
  out.uuid = rep_.workloads[k].uuid;
  out.skipped = true;
  out.skip_reason = reason;
  judge(k, out, json::object());
}

// --build-only: every row says why it was not evaluated.
void Evaluation::skip_all(const std::string& reason) {
  for (size_t k = 0; k < sel_.size(); ++k) skip(k, reason);
}

void Evaluation::run_workers() {
  harness::HarnessRequest hr;
  hr.name = rep_.solution;
  hr.entry = prep_.entry;
  hr.definition = to_json(problem_.definition);
  // A workload whose safetensors blob is not here is skipped now, with the
  // worker's words for it: no worker starts for it (a data set's copy without its
  // blobs used to cost a worker's start per evaluation).
  for (size_t k = 0; k < sel_.size(); ++k) {
    if (!missing_[k].empty()) {
      skip(k, missing_[k]);
      continue;
    }
    planned_.push_back(k);
    hr.workloads.push_back(harness::workload_spec(problem_, sel_[k]));
  }
  if (planned_.empty()) {  // nothing for a worker
    mark("workers_done");
    return;
  }
  hr.device = device_;
  hr.rounds = req_.settings.rounds;
  hr.seed = req_.settings.seed;
  hr.timed = !req_.settings.no_timing;
  hr.timing.target_rse = req_.settings.target_rse;
  hr.timing.budget_ms = req_.settings.time_budget_ms;
  hr.timer_options = timer_options_;
  hr.profile = req_.settings.profile;
  hr.workload_timeout = req_.settings.workload_timeout();
  hr.keep_scratch = req_.keep_staging;
  hr.no_sandbox = req_.no_sandbox;
  if (!req_.reference) hr.cache_key = to_json(solution_).dump();
  last_env_ = {{"device", device_text_}};
  if (!driver_.empty()) last_env_["driver"] = driver_;
  hr.on_event = [this](const harness::RunnerEvent& e) { on_event(e); };
  // T_ref from the store where this environment measured it (docs/store.md): the
  // Judge then times no reference, and nothing waits for the Recorder's exit.
  if (rec_->db() && settings().reference_cache)
    hr.known_reference = [this](const json& env, const std::string& uuid) {
      return stored_reference_time(rec_->db(),
                                   score::baseline_key(def_hash_, uuid, env, driver_),
                                   [this](const std::string& w) { rec_->warn(w); });
    };
  mark("plan_ready");
  const harness::RunnerResult rr = harness::evaluate(hr);
  mark("workers_done");
  ob_.clear_status();
  // The environment as traces record it (make_trace): `run` derives the store's
  // environment from it to resume (a probe's), so it carries the driver too.
  rep_.environment = rr.env;
  if (!driver_.empty() && rep_.environment.is_object()) rep_.environment["driver"] = driver_;
  rep_.sandbox = rr.sandbox;
  rep_.workers = rr.workers;
  rep_.reference_workers = rr.reference_workers;
  // Outcomes the event stream did not deliver (failures decided by the runner
  // after a crash or timeout are delivered too, but be safe).
  for (size_t j = 0; j < rr.outcomes.size() && j < planned_.size(); ++j)
    if (!judged_[planned_[j]]) judge(planned_[j], rr.outcomes[j], last_env_);
}

// The runner reports plan positions: planned_ maps them to positions in sel_.
void Evaluation::on_event(const harness::RunnerEvent& e) {
  if (e.kind == harness::EventKind::WorkerStart) {
    ob_.status(e.message == "reference" ? "starting the reference worker" : "starting a worker");
  } else if (e.kind == harness::EventKind::Begin || e.kind == harness::EventKind::Progress) {
    const Workload& w = problem_.workloads[sel_[planned_.at(static_cast<size_t>(e.workload))]];
    std::string what = e.kind == harness::EventKind::Begin ? "starting" : std::string(harness::phase_name(e.phase));
    if (e.round >= 0) what += fmt::format(" round {}/{}", e.round + 1, std::max(1, req_.settings.rounds));
    ob_.status(fmt::format("{} {}: {}", short_uuid(w.uuid), axes_text(w.axes), what));
  } else if (e.kind == harness::EventKind::Result && e.outcome) {
    const size_t k = planned_.at(static_cast<size_t>(e.workload));
    if (judged_[k]) return;
    judge(k, *e.outcome, last_env_);
    ob_.outcome(k, rep_.workloads[k]);
  } else if (e.kind == harness::EventKind::Ready) {
    if (e.env) {
      last_env_ = *e.env;
      last_env_["device"] = device_text_;
      if (!driver_.empty()) last_env_["driver"] = driver_;
      solution_env_ = last_env_;
      arch_ready();
      score::confirm_device(rep_.arch, device_, last_env_);  // the worker names its device
      start_baselines_ahead();
    }
    ob_.status("worker ready");
  }
}

// From the store, or from what `run` measured ahead and the store does not keep,
// where it was measured in this evaluation's environment.
std::optional<score::BaselineResult> Evaluation::cached_baseline(size_t k) {
  if (solution_env_.value("hardware", "").empty()) return std::nullopt;
  const store::BaselineKey key =
      score::baseline_key(def_hash_, rep_.workloads[k].uuid, solution_env_, driver_);
  if (auto hit = stored_baseline(rec_->db(), key, [this](const std::string& w) { rec_->warn(w); }))
    return hit;
  if (auto it = ahead_rows_.find(key.workload_uuid); it != ahead_rows_.end() && it->second.key == key)
    return it->second.result;
  return std::nullopt;
}

// One outcome into a trace; its T_b from the store, or measured later (pending_).
void Evaluation::judge(size_t k, const WorkloadOutcome& out, const json& env) {
  judged_[k] = true;
  WorkloadReport& w = rep_.workloads[k];
  w.outcome = out;
  w.skipped = out.skipped;
  w.skip_reason = out.skip_reason;
  if (out.skipped) return;
  // A T_ref measured where no solution code ran (the Judge; with --reference, the
  // reference's own worker), kept for the next evaluation in this environment. One
  // timed in a solution's process (SOLBENCH_REFERENCE_WORKER=0) is the solution's to
  // slow down or speed up, and never kept.
  const bool clean =
      req_.reference || out.extra.value("reference_timed_in", "") == "reference worker";
  if (clean && out.status == Status::Passed && out.reference_timing &&
      !out.extra.value("reference_timing_cached", false) &&
      !solution_env_.value("hardware", "").empty())
    record_reference_time(rec_->db(),
                          score::baseline_key(def_hash_, w.uuid, solution_env_, driver_),
                          *out.reference_timing, [this](const std::string& m) { rec_->warn(m); });
  Trace t = harness::make_trace(problem_, sel_[k], rep_.solution, out, env);
  if (prep_.build)
    t.evaluation.extra["solbench_build"] = {{"cache_hit", prep_.build->cache_hit},
                                            {"seconds", prep_.build->seconds}};
  w.trace = std::move(t);
  choose_baseline(k);
}

// A judged workload's T_b: from the store, measured later (pending_), or none and
// why. Decided on the hardware model alone, not T_SOL, which may still be tracing:
// a T_b is measured wherever there is a model to score against.
void Evaluation::choose_baseline(size_t k) {
  arch_ready();
  const WorkloadOutcome& out = rep_.workloads[k].outcome;
  ScoreState& st = rep_.workloads[k].score;
  const bool timed_pass =
      out.status == Status::Passed && out.timing && out.timing->stats.median_ms > 0;
  if (req_.settings.no_baseline) {
    st.t_b_reason = "not measured (--no-baseline)";
  } else if (auto hit = cached_baseline(k)) {
    st.baseline = std::move(hit);
    ++rep_.baselines_cached;
  } else if (!timed_pass) {
    st.t_b_reason = out.status != Status::Passed ? "not measured: the workload did not pass"
                                                 : "not measured: the workload was not timed";
  } else if (!rep_.arch.model) {
    st.t_b_reason = "not measured: there is no T_SOL, so no score would use it";
  } else {
    pending_.push_back(k);  // measured after the solution's worker, in a worker of its own
    return;
  }
  finalize_when_bounded(k);
}

// A result is final once T_SOL is known: one that arrives before it (a cold trace
// takes seconds) waits while the workers and the T_b worker go on.
void Evaluation::finalize_when_bounded(size_t k) {
  if (bounds_ready(/*wait=*/false)) finalize(k);
  else if (std::find(awaiting_bounds_.begin(), awaiting_bounds_.end(), k) == awaiting_bounds_.end())
    awaiting_bounds_.push_back(k);
}

score::MeasureOptions Evaluation::measure_options() const {
  score::MeasureOptions mo;
  mo.device = device_;
  mo.timer_options = timer_options_;
  mo.timing.target_rse = req_.settings.target_rse;
  mo.timing.budget_ms = req_.settings.time_budget_ms;  // the solutions' stopping rule
  mo.rounds = 1;
  mo.seed = req_.settings.seed;
  mo.workload_timeout = req_.settings.workload_timeout();
  mo.keep_scratch = req_.keep_staging;
  mo.no_sandbox = req_.no_sandbox;
  mo.gpu_memory_bytes = score::device_memory_bytes(rep_.arch);
  return mo;
}

// On a GPU, T_b's workers start as soon as the solution's first worker is ready
// (its environment keys the stored baselines): they wait for the zygote's
// torch.compile imports and compile each workload's shapes (seconds of CPU)
// while the solution is evaluated, their kernels under the GPU's timing lock, and
// run their workloads (inputs, rounds, timed loops, all under the lock) only after
// "go", once the solution's workers are done, so that nothing of theirs runs
// beside the solution's correctness rounds or the judge's. Every workload not in
// the store is measured, since which will pass is not known yet; one that did not
// pass keeps its T_b in the store only. On the CPU (a timed CPU loop shares its
// cores with nothing) and with SOLBENCH_BASELINE_AHEAD=0 they start after.
// Where no passed workload needs them, "cancel" ends them at once.
void Evaluation::start_baselines_ahead() {
  if (ahead_ || req_.settings.no_baseline || req_.settings.no_timing || !rep_.arch.model ||
      !settings().baseline_ahead.value_or(device_.is_cuda()))
    return;
  auto a = std::make_unique<Ahead>();
  std::vector<size_t> indices;
  for (size_t k : planned_)
    if (!cached_baseline(k)) {
      a->positions.push_back(k);
      indices.push_back(sel_[k]);
    }
  if (a->positions.empty()) return;
  a->results.resize(a->positions.size());
  a->keys.resize(a->positions.size());
  score::MeasureOptions mo = measure_options();
  mo.go = go_.get_future().share();
  Ahead* raw = a.get();
  ahead_ = std::move(a);
  mark("baseline_asked");
  ahead_done_ = std::async(std::launch::async, [this, raw, indices = std::move(indices),
                                                mo = std::move(mo)]() mutable {
    const auto on_each = [raw](size_t pos, const score::BaselineResult& r,
                               const store::BaselineKey* key) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->results[pos] = r;
      if (key) raw->keys[pos] = *key;
    };
    const auto warn = [raw](const std::string& w) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->warnings.push_back(w);
    };
    try {
      score::MeasureRun run =
          measure_and_record(problem_, indices, std::move(mo), rec_->db(), def_hash_, on_each, warn);
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->workers = std::move(run.workers);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->failure = std::string("the baseline worker could not run: ") + e.what();
    }
  });
}

// The solution's workers are done: T_b's workers measured ahead run their
// workloads now if any passed workload needs a T_b they measure, else they end.
void Evaluation::decide_go() {
  if (go_decided_) return;
  go_decided_ = true;
  bool needed = false;
  if (ahead_)
    for (size_t k : pending_)
      needed = needed || std::find(ahead_->positions.begin(), ahead_->positions.end(), k) !=
                             ahead_->positions.end();
  go_.set_value(needed);
}

// A measured T_b (or why there is none) into workload k's score; `key`: where it
// was stored (null: not measured).
void Evaluation::apply_baseline(size_t k, const score::BaselineResult& r,
                                const store::BaselineKey* key) {
  ScoreState& st = rep_.workloads[k].score;
  if (!key) {
    st.t_b_reason = r.reason;
  } else if (const store::BaselineKey mine =
                 score::baseline_key(def_hash_, r.uuid, solution_env_, driver_);
             *key == mine) {
    st.baseline = r;
  } else {
    st.t_b_reason = fmt::format(
        "the baseline worker's environment ({}, torch {}, timer {}) is not the "
        "solution's ({}, torch {}, timer {})",
        key->gpu_model, key->torch, key->timer, mine.gpu_model, mine.torch, mine.timer);
  }
  finalize_when_bounded(k);
}

// T_b: the reference under torch.compile, in a worker that never saw the
// solution, for the timed PASSED workloads the store has no baseline for: those
// measured ahead, then the others.
void Evaluation::measure_baselines() {
  decide_go();
  std::vector<size_t> rest;
  if (ahead_) {
    if (!pending_.empty()) ob_.status("baseline: measuring T_b");
    ahead_done_.wait();
    rep_.baseline_workers = ahead_->workers;
    for (const auto& w : ahead_->warnings) rec_->warn(w);
    for (size_t k : pending_) {
      const auto at = std::find(ahead_->positions.begin(), ahead_->positions.end(), k);
      if (at == ahead_->positions.end()) {
        rest.push_back(k);
        continue;
      }
      const size_t pos = static_cast<size_t>(at - ahead_->positions.begin());
      if (ahead_->results[pos]) {
        apply_baseline(k, *ahead_->results[pos], ahead_->keys[pos] ? &*ahead_->keys[pos] : nullptr);
      } else {
        rep_.workloads[k].score.t_b_reason =
            ahead_->failure.empty() ? "the baseline worker reported nothing" : ahead_->failure;
        finalize_when_bounded(k);
      }
    }
  } else {
    rest = pending_;
  }
  if (rest.empty()) return;
  std::vector<size_t> indices;
  for (size_t k : rest) indices.push_back(sel_[k]);
  score::MeasureOptions mo = measure_options();
  mo.on_event = [&](const harness::RunnerEvent& e) {
    if (e.kind == harness::EventKind::WorkerStart) ob_.status("baseline: starting a worker");
    else if ((e.kind == harness::EventKind::Begin || e.kind == harness::EventKind::Progress) && e.workload >= 0)
      ob_.status(fmt::format("baseline {}: {}", short_uuid(problem_.workloads[indices[e.workload]].uuid),
                             e.kind == harness::EventKind::Begin ? "starting" : std::string(harness::phase_name(e.phase))));
  };
  auto on_each = [&](size_t pos, const score::BaselineResult& r, const store::BaselineKey* key) {
    apply_baseline(rest[pos], r, key);
  };
  std::string failure = "the baseline worker reported nothing";
  try {
    for (auto& w : measure_and_record(problem_, indices, mo, rec_->db(), def_hash_, on_each,
                                      [this](const std::string& w) { rec_->warn(w); })
                       .workers)
      rep_.baseline_workers.push_back(std::move(w));
  } catch (const std::exception& e) {
    // The solution's results are final already: they are written without T_b.
    failure = std::string("the baseline worker could not run: ") + e.what();
  }
  ob_.clear_status();
  for (size_t k : pending_)
    if (!finalized_[k]) {
      ScoreState& st = rep_.workloads[k].score;
      if (st.t_b_reason.empty()) st.t_b_reason = failure;
      finalize_when_bounded(k);
    }
}

// A trace is written (traces file) and recorded (store) once its numbers are
// final: at once, or when the baseline worker has measured its T_b.
void Evaluation::finalize(size_t k) {
  WorkloadReport& w = rep_.workloads[k];
  if (finalized_[k] || !w.trace) return;
  finalized_[k] = true;
  score_trace(*w.trace, w.score, rep_.arch, !req_.settings.no_timing);
  if (req_.settings.profile) add_profile_verdict(*w.trace, w.score, rep_.arch);
  // An interrupted evaluation writes and records nothing more: what its killed
  // workers "did" is no result (harness/interrupt.h).
  if (harness::interrupted()) return;
  if (!req_.traces_file.empty()) append_traces(req_.traces_file, {*w.trace});
  ++rep_.traces_written;
  rec_->record(*w.trace, w.score);
}

void Evaluation::finish() {
  ob_.clear_status();
  bounds_ready(/*wait=*/true);
  mark("baseline_done");
  for (size_t k = 0; k < sel_.size(); ++k) finalize(k);  // none left; be safe
  rec_->finish();
  mark("recorded");
  rep_.warnings = rec_->warnings();
  if (!rep_.published_note.empty()) rep_.warnings.push_back(rep_.published_note);
  std::vector<score::ScoredWorkload> scored;
  for (const auto& w : rep_.workloads)
    if (!w.skipped && w.trace)
      scored.push_back({w.trace->evaluation.status == Status::Passed, w.score.s.score,
                        w.score.s.sol_violation});
  rep_.problem_score = score::problem_score(scored);
  for (size_t k : pending_) {
    const ScoreState& st = rep_.workloads[k].score;
    if (st.baseline && !st.baseline->cached) ++rep_.baselines_measured;
  }
  // The workloads whose T_b is eager, not the reference under torch.compile: a
  // warning in every output (docs/score.md), never silent.
  for (const auto& w : rep_.workloads) {
    const auto& b = w.score.baseline;
    if (b && b->t_b_ms && b->method == "eager") rep_.eager.push_back({b->uuid, *b->t_b_ms, b->reason});
  }
  rep_.db = rec_->to_json();
  rep_.db_line = rec_->summary_line();
}

}  // namespace

RequestError::RequestError(bool usage_error, std::vector<std::string> lines)
    : std::runtime_error(lines.empty() ? "invalid request" : lines.front()),
      usage(usage_error),
      messages(std::move(lines)) {}

Report evaluate(const Request& request, Observer& observer) {
  if (!request.build_only) return Evaluation(request, observer).run();
  Request build_only = request;  // evaluates nothing, so records and traces nothing
  build_only.no_db = true;
  build_only.traces_file.clear();
  return Evaluation(build_only, observer).run();
}

std::string reference_solution_name(const std::string& definition_name) {
  return definition_name + "/reference";
}

store::SolutionRecord reference_solution_record(const Definition& definition) {
  return {reference_solution_name(definition.name), definition.name,
          {{"solbench_reference_of", to_json(definition)}}};
}

}  // namespace solbench::eval
