// `solbench validate`: checks problem folders (or a data set of them), a
// solution, and prints a summary of every problem or every error found.
// Warnings (input that is ignored, such as a workload source for an input the
// definition lacks) are printed but do not fail validation, unless --strict.
// --probe-tolerance also runs every workload's reference and warns where an output
// that computes nothing would pass its tolerance (cli/tolerance_probe.h).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/tolerance_probe.h"
#include "core/device.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/text.h"
#include "core/solution.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct ValidateOptions {
  std::vector<std::string> dirs;
  std::string definition;
  std::string workload;
  std::string solution;
  bool json_output = false;
  bool strict = false;  // warnings count as errors
  // Off by default: validation otherwise reads files only; the probe imports torch and
  // runs every reference (seconds to minutes per problem).
  bool probe_tolerance = false;
  std::string probe_device = "cpu";  // parsed into probe.device with --probe-tolerance
  ProbeOptions probe;
  double probe_max_mib = 2048;
};

struct ProblemResult {
  std::string label;  // the problem folder as found
  Problem problem;
  Diagnostics diags;
  std::optional<std::vector<WorkloadProbe>> probes;  // --probe-tolerance
};

struct SolutionResult {
  std::string path;
  Solution solution;
  Diagnostics diags;
};

std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = double(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string_view axis_kind(AxisKind k) {
  switch (k) {
    case AxisKind::Const: return "const";
    case AxisKind::Var: return "var";
    case AxisKind::Expr: return "expr";
  }
  return "?";
}

std::string axis_summary(const Axis& a) {
  switch (a.kind) {
    case AxisKind::Const: return fmt::format("{}=const/{}", a.name, a.value);
    case AxisKind::Var: return fmt::format("{}=var", a.name);
    case AxisKind::Expr: return fmt::format("{}=expr/\"{}\"", a.name, a.expression);
  }
  return a.name;
}

json diagnostic_json(const Diagnostic& d, std::string_view severity) {
  json j = json::object();
  j["file"] = d.file;
  j["line"] = d.line;
  j["path"] = d.path;
  j["message"] = d.message;
  j["severity"] = severity;
  return j;
}

json diagnostics_json(const std::vector<Diagnostic>& ds, std::string_view severity) {
  json a = json::array();
  for (const auto& d : ds) a.push_back(diagnostic_json(d, severity));
  return a;
}
json errors_json(const Diagnostics& ds) { return diagnostics_json(ds.items(), "error"); }
json warnings_json(const Diagnostics& ds) { return diagnostics_json(ds.warnings(), "warning"); }

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// --strict: every warning becomes an error with the same text, and a workload
// line that had one is no longer valid.
void make_strict(ProblemResult& r) {
  const std::string file = r.problem.paths.workloads.string();
  for (size_t i = 0; i < r.problem.workloads.size() && i < r.problem.resolved.size(); ++i)
    for (const auto& d : r.diags.warnings())
      if (d.file == file && d.line == r.problem.workloads[i].line) r.problem.resolved[i].reset();
  r.diags.promote_warnings();
}

// The problems to validate: one folder with --definition-file/--workload-file
// overrides, or every problem folder at or below each PROBLEM_DIR.
std::vector<ProblemPaths> collect_targets(const ValidateOptions& o, Diagnostics& global) {
  std::vector<ProblemPaths> out;
  if (!o.definition.empty() || !o.workload.empty()) {
    fs::path base = !o.dirs.empty()           ? fs::path(o.dirs[0])
                    : !o.definition.empty()   ? fs::path(o.definition).parent_path()
                                              : fs::path(o.workload).parent_path();
    if (base.empty()) base = ".";
    ProblemPaths p = problem_paths(base);
    if (!o.definition.empty()) p.definition = o.definition;
    if (!o.workload.empty()) p.workloads = o.workload;
    out.push_back(std::move(p));
    return out;
  }
  for (const auto& d : o.dirs) {
    std::error_code ec;
    if (!fs::exists(d, ec)) {
      global.add(d, 0, "", "no such file or folder");
      continue;
    }
    auto dirs = find_problem_dirs(d);
    if (dirs.empty()) global.add(d, 0, "", "no problem folders (with a definition.json) found here");
    for (const auto& dir : dirs) out.push_back(problem_paths(dir));
  }
  return out;
}

void print_problem_text(const ProblemResult& r) {
  const Problem& p = r.problem;
  const Definition& d = p.definition;
  const size_t n_warnings = r.diags.warnings().size();
  std::string status;
  if (!r.diags.empty())
    status = fmt::format("  INVALID ({}{})", plural(r.diags.size(), "error"),
                         n_warnings ? ", " + plural(n_warnings, "warning") : "");
  else if (n_warnings)
    status = fmt::format("  ({})", plural(n_warnings, "warning"));
  fmt::print("{}: {}{}{}\n", r.label, d.name.empty() ? "(unnamed)" : d.name,
             d.op_type.empty() ? "" : " [" + d.op_type + "]", status);
  if (!d.axes.empty()) {
    std::string axes;
    for (const auto& a : d.axes) axes += (axes.empty() ? "" : " ") + axis_summary(a);
    fmt::print("  axes: {}\n", axes);
  }
  fmt::print("  workloads: {}\n", p.workloads.size());
  for (size_t i = 0; i < p.workloads.size(); ++i) {
    const Workload& w = p.workloads[i];
    const std::string axes = axes_text(w.axes);
    const auto& res = i < p.resolved.size() ? p.resolved[i] : std::nullopt;
    if (res) {
      fmt::print("    {:<8}  {}  in {}  out {}\n", short_uuid(w.uuid), axes,
                 human_bytes(res->input_bytes), human_bytes(res->output_bytes));
    } else {
      fmt::print("    {:<8}  {}  (invalid)\n", short_uuid(w.uuid), axes);
    }
  }
  // The weak workloads are warnings (printed with the others, file and line).
  if (r.probes) fmt::print("  {}\n", probes_summary(*r.probes));
}

json problem_json(const ProblemResult& r) {
  const Problem& p = r.problem;
  const Definition& d = p.definition;
  json j = json::object();
  j["dir"] = r.label;
  j["definition"] = p.paths.definition.string();
  j["workload_file"] = p.paths.workloads.string();
  j["name"] = d.name;
  j["op_type"] = d.op_type;
  j["valid"] = r.diags.empty();
  json axes = json::array();
  for (const auto& a : d.axes) {
    json ja = json::object();
    ja["name"] = a.name;
    ja["kind"] = axis_kind(a.kind);
    if (a.kind == AxisKind::Const) ja["value"] = a.value;
    if (a.kind == AxisKind::Expr) ja["expression"] = a.expression;
    axes.push_back(std::move(ja));
  }
  j["axes"] = std::move(axes);
  j["workload_count"] = p.workloads.size();
  json ws = json::array();
  for (size_t i = 0; i < p.workloads.size(); ++i) {
    const Workload& w = p.workloads[i];
    const auto& res = i < p.resolved.size() ? p.resolved[i] : std::nullopt;
    json jw = json::object();
    jw["uuid"] = w.uuid;
    jw["line"] = w.line;
    jw["valid"] = res.has_value();
    json wa = json::object();
    for (const auto& [n, v] : w.axes) wa[n] = v;
    jw["axes"] = std::move(wa);
    if (res) {
      jw["input_bytes"] = res->input_bytes;
      jw["output_bytes"] = res->output_bytes;
    }
    ws.push_back(std::move(jw));
  }
  j["workloads"] = std::move(ws);
  j["errors"] = errors_json(r.diags);
  j["warnings"] = warnings_json(r.diags);
  return j;
}

// Runs the probe over every valid problem, one line of progress per problem on
// stderr (a data set takes minutes).
void probe_tolerances(const ValidateOptions& o, std::vector<ProblemResult>& results) {
  ProbeOptions po = o.probe;
  po.max_bytes = static_cast<uint64_t>(o.probe_max_mib * double(1 << 20));
  ToleranceProber prober(po);
  for (auto& r : results) {
    if (r.problem.definition.reference.empty()) continue;  // an invalid definition
    r.probes = prober.probe(r.problem, r.diags);
    if (o.json_output || results.size() > 1)
      fmt::print(stderr, "{}: {}\n", r.label, probes_summary(*r.probes));
  }
}

void run_validate(ValidateOptions o) {
  if (o.dirs.empty() && o.definition.empty() && o.workload.empty() && o.solution.empty())
    throw CLI::ValidationError("validate",
                               "nothing to validate: give a problem folder, --definition-file, "
                               "--workload-file or --solution");
  if ((!o.definition.empty() || !o.workload.empty()) && o.dirs.size() > 1)
    throw CLI::ValidationError("validate",
                               "--definition-file/--workload-file apply to one problem; give at "
                               "most one problem folder");

  if (o.probe_tolerance) {
    const auto device = Device::try_parse(o.probe_device);
    if (!device)
      throw CLI::ValidationError("--probe-device",
                                 "expected cpu, cuda or cuda:N, got \"" + o.probe_device + "\"");
    o.probe.device = *device;
  }

  Diagnostics global;  // problems not tied to one problem folder
  std::vector<ProblemResult> results;
  for (auto& paths : collect_targets(o, global)) {
    ProblemResult r;
    r.label = paths.definition.parent_path().string();
    if (r.label.empty()) r.label = ".";
    r.problem = load_problem(paths, r.diags);
    results.push_back(std::move(r));
  }
  if (o.probe_tolerance) probe_tolerances(o, results);
  if (o.strict)
    for (auto& r : results) make_strict(r);

  std::optional<SolutionResult> sol;
  if (!o.solution.empty()) {
    sol.emplace();
    sol->path = o.solution;
    sol->solution = load_solution(o.solution, sol->diags);
    // With problems given, the solution must be for one of them.
    const std::string& want = sol->solution.definition;
    bool found = results.empty() || want.empty();
    for (const auto& r : results) found = found || r.problem.definition.name == want;
    if (!found) {
      std::string names;
      for (const auto& r : results)
        names += (names.empty() ? "\"" : ", \"") + r.problem.definition.name + "\"";
      sol->diags.add(o.solution, 0, "definition",
                     fmt::format("solution is for \"{}\", which is not among the problems "
                                 "validated ({})",
                                 want, results.size() > 8 ? fmt::format("{} problems", results.size())
                                                          : names));
    }
  }

  if (o.strict) {
    global.promote_warnings();
    if (sol) sol->diags.promote_warnings();
  }

  Diagnostics all;
  all.append(global);
  size_t invalid = 0, workloads = 0, weak = 0, probed = 0;
  for (const auto& r : results) {
    if (r.probes)
      for (const auto& w : *r.probes) {
        probed += w.status == "checked" ? 1 : 0;
        weak += w.weak.empty() ? 0 : 1;
      }
    all.append(r.diags);
    invalid += r.diags.empty() ? 0 : 1;
    workloads += r.problem.workloads.size();
  }
  if (sol) all.append(sol->diags);

  if (o.json_output) {
    json doc = json::object();
    doc["valid"] = all.empty();
    doc["strict"] = o.strict;
    json problems = json::array();
    for (const auto& r : results) {
      problems.push_back(problem_json(r));
      if (r.probes) problems.back()["tolerance_probe"] = probes_json(*r.probes, o.probe);
    }
    doc["problems"] = std::move(problems);
    if (sol) {
      json js = json::object();
      js["path"] = sol->path;
      js["name"] = sol->solution.name;
      js["definition"] = sol->solution.definition;
      js["valid"] = sol->diags.empty();
      js["errors"] = errors_json(sol->diags);
      js["warnings"] = warnings_json(sol->diags);
      doc["solution"] = std::move(js);
    }
    doc["errors"] = errors_json(all);
    doc["warnings"] = warnings_json(all);
    json summary = json::object();
    summary["problems"] = results.size();
    summary["invalid_problems"] = invalid;
    summary["workloads"] = workloads;
    summary["errors"] = all.size();
    summary["warnings"] = all.warnings().size();
    if (o.probe_tolerance) {
      summary["probed_workloads"] = probed;
      summary["weak_workloads"] = weak;
    }
    doc["summary"] = std::move(summary);
    fmt::print("{}\n", doc.dump(2));
  } else {
    for (const auto& r : results) print_problem_text(r);
    if (sol) {
      const Solution& s = sol->solution;
      std::string langs;
      for (auto l : s.spec.languages) langs += (langs.empty() ? "" : ",") + std::string(language_name(l));
      fmt::print("solution {}: {} for {} [{}] entry {}{}\n", sol->path, s.name, s.definition, langs,
                 s.spec.entry_point, sol->diags.empty() ? "" : "  INVALID");
    }
    for (const auto& d : all.items()) fmt::print(stderr, "{}\n", d.str());
    for (const auto& d : all.warnings()) fmt::print(stderr, "warning: {}\n", d.str());
    std::string what = fmt::format("{} problem{}, {} workload{}{}", results.size(),
                                   results.size() == 1 ? "" : "s", workloads,
                                   workloads == 1 ? "" : "s", sol ? ", 1 solution" : "");
    if (o.probe_tolerance)
      what += fmt::format(" ({} probed, {} with a weak tolerance)", probed, weak);
    const size_t n_warnings = all.warnings().size();
    if (all.empty()) {
      fmt::print("validated {}: all valid{}\n", what,
                 n_warnings ? fmt::format(", {} (ignored; --strict makes them errors)",
                                          plural(n_warnings, "warning"))
                            : "");
    } else {
      std::fflush(stdout);
      fmt::print(stderr, "validated {}: {} ({} invalid problem{}{}){}\n", what,
                 plural(all.size(), "error"), invalid, invalid == 1 ? "" : "s",
                 sol && !sol->diags.empty() ? ", invalid solution" : "",
                 n_warnings ? ", " + plural(n_warnings, "warning") : "");
    }
  }
  exit_code() = all.empty() ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check problem folders (definition.json + workload.jsonl), data sets of them, and solutions");
  cmd->add_option("problems", opts->dirs,
                  "problem folders, or folders searched recursively for problem folders");
  cmd->add_option("--definition-file", opts->definition, "definition.json to use (one problem)");
  cmd->add_option("--workload-file", opts->workload, "workload.jsonl to use (one problem)");
  cmd->add_option("--solution", opts->solution, "solution.json to check");
  cmd->add_flag("--json", opts->json_output, "print one JSON document instead of text");
  cmd->add_flag("--strict", opts->strict,
                "treat warnings as errors (e.g. a workload source for an input the definition "
                "lacks, which is otherwise ignored)");
  cmd->add_flag("--probe-tolerance", opts->probe_tolerance,
                "also run every workload's reference and warn where an output that computes "
                "nothing (all zeros, a constant, a copy of an input) would pass its tolerance");
  cmd->add_option("--probe-device", opts->probe_device,
                  "where the references run for --probe-tolerance: cpu (CUDA devices the "
                  "reference names are mapped to it) or cuda:N")
      ->default_val("cpu");
  cmd->add_option("--probe-timeout", opts->probe.timeout_s,
                  "seconds per workload for --probe-tolerance (0: no limit)")
      ->default_val(120)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--probe-max-mib", opts->probe_max_mib,
                  "skip workloads whose inputs and outputs take more (MiB)")
      ->default_val(2048)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--probe-workloads", opts->probe.per_problem,
                  "probe at most N workloads per problem, spread over their sizes (0: all)")
      ->default_val(0);
  cmd->callback([opts] { run_validate(*opts); });
  add_probe_child_command(app);
}

}  // namespace solbench::cli
