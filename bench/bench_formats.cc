// Formats benchmark: how long solbench takes to read, validate and resolve a
// 48-workload problem (issue #2 target: under 2 ms for the whole load).
//
// The problem is the bundled GQA prefill attention problem (expr axis,
// constraint, four tensors) with its workloads replicated under fresh uuids
// to 48 lines, written once to a temporary folder. Stages are measured alone
// (in memory) and together (load_problem from disk, which also resolves).
#include <benchmark/benchmark.h>

#include <cstdlib>  // mkdtemp
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/definition.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/resolve.h"
#include "core/workload.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

constexpr int kWorkloads = 48;
const fs::path kSource =
    fs::path(SOLBENCH_SOURCE_DIR) / "problems/006_gqa_attention_prefill_causal_llama3_8b";

// The 48-workload problem on disk and in memory. Built on first use; the
// folder is removed at exit.
class BenchProblem {
 public:
  static const BenchProblem& get() {
    static BenchProblem p;
    return p;
  }
  BenchProblem(const BenchProblem&) = delete;  // owns a temporary folder
  BenchProblem& operator=(const BenchProblem&) = delete;
  ~BenchProblem() {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  const fs::path& problem_dir() const { return problem_; }
  const std::string& definition_text() const { return definition_text_; }
  const std::vector<std::string>& workload_lines() const { return lines_; }
  const Definition& definition() const { return definition_; }
  const std::vector<Workload>& workloads() const { return workloads_; }
  // Non-empty when setup failed; benchmarks report it instead of running.
  const std::string& error() const { return error_; }

 private:
  BenchProblem() {
    try {
      build();
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }

  void build() {
    std::string tmpl = (fs::temp_directory_path() / "solbench-bench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    root_ = fs::path(tmpl);
    // <root>/<category>/<problem>, the layout problem_paths expects.
    problem_ = root_ / "bench" / "gqa_48";

    Diagnostics diags;
    std::vector<Workload> base = load_workloads(kSource / "workload.jsonl", diags);
    if (!diags.empty() || base.empty())
      throw std::runtime_error("cannot read the source workloads:\n" + diags.str());
    for (int i = 0; i < kWorkloads; ++i) {
      Workload w = base[static_cast<size_t>(i) % base.size()];
      w.uuid = fmt::format("00000000-0000-4000-8000-{:012d}", i);
      workloads_.push_back(std::move(w));
    }
    definition_text_ = read_text_file(kSource / "definition.json");
    write_text_file(problem_ / "definition.json", definition_text_);
    write_text_file(problem_ / "reference.py", read_text_file(kSource / "reference.py"));
    write_text_file(problem_ / "workload.jsonl", to_jsonl(workloads_));
    for (const auto& w : workloads_) lines_.push_back(to_json(w).dump());

    definition_ = parse_definition(parse_json_text(definition_text_, "definition.json"),
                                   "definition.json", diags);
    Problem p = load_problem(problem_paths(problem_), diags);
    if (!diags.empty()) throw std::runtime_error("the benchmark problem is invalid:\n" + diags.str());
    if (p.workloads.size() != kWorkloads) throw std::runtime_error("expected 48 workloads");
  }

  fs::path root_;     // temporary folder, removed at exit
  fs::path problem_;  // root_/bench/gqa_48
  std::string definition_text_;
  std::vector<std::string> lines_;
  Definition definition_;
  std::vector<Workload> workloads_;
  std::string error_;
};

// Skips the benchmark with the setup error, if any.
bool ready(benchmark::State& state) {
  const auto& p = BenchProblem::get();
  if (p.error().empty()) return true;
  state.SkipWithError(p.error().c_str());
  return false;
}

// JSON text -> validated Definition (in memory).
void BM_ParseDefinition(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& p = BenchProblem::get();
  for (auto _ : state) {
    Diagnostics diags;
    Definition d = parse_definition(parse_json_text(p.definition_text(), "definition.json"),
                                    "definition.json", diags);
    benchmark::DoNotOptimize(d);
    if (!diags.empty()) state.SkipWithError("definition did not validate");
  }
}
BENCHMARK(BM_ParseDefinition)->Unit(benchmark::kMicrosecond);

// 48 JSONL lines -> Workloads, each checked against the definition (inputs,
// axes, constraints, shapes): the validation `solbench validate` does.
void BM_ParseValidateWorkloads(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& p = BenchProblem::get();
  for (auto _ : state) {
    Diagnostics diags;
    int line = 0;
    for (const auto& text : p.workload_lines()) {
      ++line;
      Workload w = parse_workload(parse_json_text(text, "workload.jsonl", line), "workload.jsonl",
                                  line, diags);
      check_workload(p.definition(), w, "workload.jsonl", diags);
      benchmark::DoNotOptimize(w);
    }
    if (!diags.empty()) state.SkipWithError("a workload did not validate");
  }
  state.SetItemsProcessed(state.iterations() * kWorkloads);
}
BENCHMARK(BM_ParseValidateWorkloads)->Unit(benchmark::kMicrosecond);

// Already-parsed workloads -> concrete shapes, byte sizes, DPS order.
void BM_ResolveWorkloads(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& p = BenchProblem::get();
  for (auto _ : state) {
    Diagnostics diags;
    uint64_t bytes = 0;
    for (const auto& w : p.workloads()) {
      std::optional<ResolvedWorkload> r = resolve_workload(p.definition(), w, "workload.jsonl", diags);
      if (r) bytes += r->input_bytes + r->output_bytes;
    }
    benchmark::DoNotOptimize(bytes);
    if (!diags.empty()) state.SkipWithError("a workload did not resolve");
  }
  state.SetItemsProcessed(state.iterations() * kWorkloads);
}
BENCHMARK(BM_ResolveWorkloads)->Unit(benchmark::kMicrosecond);

// The whole job from disk: read and validate definition.json, compare
// reference.py, read, validate and resolve all 48 workloads.
void BM_LoadProblemFromDisk(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& p = BenchProblem::get();
  const ProblemPaths paths = problem_paths(p.problem_dir());
  for (auto _ : state) {
    Diagnostics diags;
    Problem problem = load_problem(paths, diags);
    benchmark::DoNotOptimize(problem);
    if (!diags.empty() || problem.resolved.size() != kWorkloads || !problem.resolved.back())
      state.SkipWithError("the problem did not load and resolve cleanly");
  }
  state.SetItemsProcessed(state.iterations() * kWorkloads);
}
BENCHMARK(BM_LoadProblemFromDisk)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace solbench

BENCHMARK_MAIN();
