// Results-store benchmark: what the store adds to each evaluated workload
// (target: under 1 ms). One workload costs a resume look-up (has_result) and
// one committed trace (record_trace); both are measured alone and together,
// on an empty store and on one already holding a data set's worth of traces.
//
// The store lives in a fresh folder under $SOLBENCH_BENCH_DIR, else the
// system's temporary folder (pick a disk like the one ~/.cache is on: on tmpfs
// the fsync of the FULL variant costs nothing).
#include <benchmark/benchmark.h>

#include <cstdlib>  // mkdtemp, getenv
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/trace.h"
#include "store/store.h"

namespace solbench::store {
namespace {

namespace fs = std::filesystem;

// A folder removed with its contents.
class BenchDir {
 public:
  BenchDir() {
    const char* base = std::getenv("SOLBENCH_BENCH_DIR");
    std::string tmpl =
        ((base && *base) ? fs::path(base) : fs::temp_directory_path()) / "solbench-bench-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create " + tmpl);
    path_ = tmpl;
  }
  ~BenchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;  // owns one folder
  BenchDir& operator=(const BenchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A trace shaped like one `solbench eval` writes on a GPU: workload, timing
// statistics of the solution and the reference, phases, checks (about 1.6 kB).
Trace realistic_trace(int64_t i) {
  Trace t;
  t.definition = "gqa_attention_prefill_causal_llama3_8b";
  t.solution = "flash_triton_v3";
  t.workload = {{"uuid", "bench-" + std::to_string(i)},
                {"axes", {{"batch_size", 4}, {"seq_len", 2048}}},
                {"inputs",
                 {{"q", {{"type", "random"}}},
                  {"k", {{"type", "random"}}},
                  {"v", {{"type", "random"}}},
                  {"sm_scale", {{"type", "scalar"}, {"value", 0.08838834764831845}}}}}};
  Evaluation& e = t.evaluation;
  e.status = Status::Passed;
  e.correctness = Correctness{3.1e-3, 7.8e-4, false, false};
  e.performance = Performance{0.41234, 1.73312, 1.73312 / 0.41234};
  e.environment.hardware = "NVIDIA H100 80GB HBM3";
  e.environment.libs = {{"torch", "2.4.0"}, {"python", "3.11.2"}};
  e.environment.extra = {{"solbench_device", "cuda:0"}};
  e.timestamp = iso8601_now();
  const json timing = {{"samples", 183},     {"median_ms", 0.41234}, {"mean_ms", 0.41301},
                       {"stddev_ms", 0.0021}, {"min_ms", 0.40987},   {"max_ms", 0.42011},
                       {"p10_ms", 0.41102},  {"p90_ms", 0.41533},   {"rse", 0.00071},
                       {"l2_flush", true},   {"stopped_by", "target_rse"},
                       {"warmup", 10},       {"wall_ms", 412.5}};
  e.extra = {{"solbench_timed", true},
             {"solbench_timing", timing},
             {"solbench_reference_timing", timing},
             {"solbench_timer", "cupti"},
             {"solbench_phases_ms",
              {{"inputs_ms", 3.2}, {"reference_ms", 12.7}, {"check_ms", 1.1}, {"timing_ms", 412.5}}},
             {"solbench_checks", {{"rounds", 10}, {"output_aliasing", "ok"}, {"stream", "ok"}}}};
  return t;
}

// A store with one environment, solution and run, optionally holding `preload`
// traces already.
struct Fixture {
  BenchDir dir;
  Store store;
  std::string env;
  TraceExtras extras;
  int64_t run = 0;
  int64_t next = 0;

  Fixture(int64_t preload, bool sync_full)
      : store(Store::open(dir.path() / "solbench.db", options(sync_full))) {
    EnvironmentInfo e{"NVIDIA H100 80GB HBM3", "550.54.15", "12.4", "2.4.0", "cupti", "bench"};
    env = store.put_environment(e);
    extras.environment_hash = env;
    extras.solution_hash = store.put_solution(
        SolutionRecord{"flash_triton_v3", "gqa", json{{"name", "flash_triton_v3"}, {"sources", "..."}}});
    extras.t_sol_ms = 0.21;
    extras.t_b_ms = 0.93;
    extras.sol_score = 0.72;
    run = store.begin_run(RunInfo{"solbench run bench", "bench/", env, ""});
    for (; next < preload; ++next) store.record_trace(run, realistic_trace(next), extras);
  }

  static Store::Options options(bool sync_full) {
    Store::Options o;
    o.sync_every_commit = sync_full;
    return o;
  }
};

// record_trace alone (one transaction, committed). Arg 0: traces already stored.
void BM_RecordTrace(benchmark::State& state) {
  Fixture f(state.range(0), /*sync_full=*/false);
  Trace t = realistic_trace(0);
  for (auto _ : state) {
    t.workload["uuid"] = "bench-" + std::to_string(f.next++);
    benchmark::DoNotOptimize(f.store.record_trace(f.run, t, f.extras));
  }
  state.counters["trace_bytes"] = static_cast<double>(to_json(realistic_trace(0)).dump().size());
}
BENCHMARK(BM_RecordTrace)->Arg(0)->Arg(20000)->Unit(benchmark::kMicrosecond);

// The same with synchronous=FULL (an fsync per trace; survives power loss).
void BM_RecordTraceSyncFull(benchmark::State& state) {
  Fixture f(0, /*sync_full=*/true);
  Trace t = realistic_trace(0);
  for (auto _ : state) {
    t.workload["uuid"] = "bench-" + std::to_string(f.next++);
    benchmark::DoNotOptimize(f.store.record_trace(f.run, t, f.extras));
  }
}
BENCHMARK(BM_RecordTraceSyncFull)->Unit(benchmark::kMicrosecond);

// The resume look-up alone, on a store holding Arg 0 traces (half hits).
void BM_HasResult(benchmark::State& state) {
  Fixture f(state.range(0), false);
  int64_t i = 0;
  for (auto _ : state) {
    const std::string uuid = "bench-" + std::to_string((i++ * 7919) % (2 * state.range(0) + 1));
    benchmark::DoNotOptimize(f.store.has_result(f.extras.solution_hash, uuid, f.env));
  }
}
BENCHMARK(BM_HasResult)->Arg(20000)->Unit(benchmark::kMicrosecond);

// What one evaluated workload costs the store: the resume look-up, then the
// trace recorded (including writing its JSON). This is the number to keep under 1 ms.
void BM_StorePerWorkload(benchmark::State& state) {
  Fixture f(state.range(0), false);
  Trace t = realistic_trace(0);
  for (auto _ : state) {
    t.workload["uuid"] = "bench-" + std::to_string(f.next++);
    if (!f.store.has_result(f.extras.solution_hash, t.workload["uuid"].get<std::string>(), f.env))
      f.store.record_trace(f.run, t, f.extras);
  }
}
BENCHMARK(BM_StorePerWorkload)->Arg(0)->Arg(20000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace solbench::store

BENCHMARK_MAIN();
