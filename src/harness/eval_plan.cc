#include "harness/eval_plan.h"

#include <cctype>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace solbench::harness {

namespace fs = std::filesystem;

namespace {

// A target_hardware list that lets a solution run on the CPU: empty (no claim), or
// naming "cpu" or "local" (the machine it runs on), in any case.
bool targets_the_cpu(const std::vector<std::string>& targets) {
  if (targets.empty()) return true;
  for (std::string t : targets) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t == "cpu" || t == "local") return true;
  }
  return false;
}

// Why this solution cannot run on `device`, or "" when it can. Python-family
// solutions run anywhere torch does; C++ host code only on the CPU; CUDA C++ only
// on a GPU.
std::string device_mismatch(const Solution& s, const Device& device) {
  const bool cuda = device.is_cuda();
  if (s.spec.family() == LanguageFamily::Cpp) {
    if (s.spec.has_language(Language::Cpp) && cuda)
      return "language cpp is host code; evaluate it with --device cpu";
    if (!s.spec.has_language(Language::Cpp) && !cuda)
      return fmt::format("language {} needs a GPU; evaluate it with --device cuda:N",
                         language_name(s.spec.languages.front()));
  } else if (!cuda && !s.spec.has_language(Language::Pytorch)) {
    return fmt::format("language {} needs a GPU", language_name(s.spec.languages.front()));
  } else if (!cuda && !targets_the_cpu(s.spec.target_hardware)) {
    // A PyTorch solution written for a GPU (torch.cuda calls, Triton imports) is not
    // wrong on a CPU run: it was never meant for one.
    std::string list;
    for (const auto& t : s.spec.target_hardware) list += (list.empty() ? "" : ", ") + t;
    return fmt::format("spec.target_hardware [{}] does not include the CPU; evaluate it with "
                       "--device cuda:N",
                       list);
  }
  return "";
}

json tolerance_json(const Tolerance& t) {
  return {{"max_atol", t.max_atol},
          {"max_rtol", t.max_rtol},
          {"required_matched_ratio", t.required_matched_ratio},
          {"max_error_cap", t.max_error_cap ? json(*t.max_error_cap) : json(nullptr)},
          {"allow_negative_inf", t.allow_negative_inf}};
}

json source_json(const InputSource& s) {
  json j = {{"type", input_kind_name(s.kind)}};
  if (s.kind == InputKind::Scalar) j["value"] = s.value;
  if (s.kind == InputKind::Safetensors) {
    j["path"] = s.path;
    j["tensor_key"] = s.tensor_key;
  }
  return j;
}

json timing_extra(const TimingResult& t) {
  json j = t.stats.to_json();
  j["converged"] = t.converged;
  j["stop_reason"] = t.stop_reason;
  j["warmup_calls"] = t.warmup_calls;
  return j;
}

// `log` with the line `first` (its first occurrence) moved to the top: the
// compiler's first error leads, the commands and the rest follow in order.
std::string first_error_first(const std::string& log, const std::string& first) {
  if (first.empty()) return log;
  std::string rest = log;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t e = rest.find('\n', pos);
    if (e == std::string::npos) e = rest.size();
    std::string line = rest.substr(pos, e - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line == first) {
      rest.erase(pos, std::min(e + 1, rest.size()) - pos);
      break;
    }
    pos = e + 1;
  }
  return rest.empty() ? first + "\n" : first + "\n" + rest;
}

}  // namespace

PreparedSolution reference_as_solution() {
  PreparedSolution p;
  p.ok = true;
  p.entry = EntryPoint::reference();
  return p;
}

PreparedSolution prepare_solution(const Solution& s, const Definition& def,
                                  const PrepareOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  PreparedSolution p;
  auto done = [&]() -> PreparedSolution {
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!p.ok) {
      p.first_error = first_error_line(p.log);
      p.log = first_error_first(p.log, p.first_error);
    }
    return p;
  };
  p.failure = Status::RuntimeError;
  if (s.definition != def.name) {
    p.log = fmt::format("solution {} is for definition \"{}\", not \"{}\"", s.name,
                        s.definition, def.name);
    return done();
  }
  if (s.spec.languages.empty()) {
    p.failure = Status::CompileError;
    p.log = "solution.spec.languages is empty";
    return done();
  }
  if (std::string why = device_mismatch(s, opts.device); !why.empty()) {
    p.log = "solution " + s.name + " cannot run on " + opts.device.str() + ": " + why;
    p.skip = true;
    return done();
  }
  p.entry.dps = s.spec.destination_passing_style;
  for (Language l : s.spec.languages) p.entry.languages.emplace_back(language_name(l));

  if (s.spec.family() == LanguageFamily::Python) {
    if (!s.find_source(s.spec.entry_file)) {
      p.log = "spec.entry_point: file " + s.spec.entry_file + " is not among the sources";
      return done();
    }
    p.entry.kind = EntryKind::Python;
    p.entry.entry_file = s.spec.entry_file;
    p.entry.symbol = s.spec.entry_function;
    for (const auto& src : s.sources) p.entry.sources.push_back({{"path", src.path}, {"content", src.content}});
    p.ok = true;
    return done();
  }

  BuildOptions bo;
  bo.timeout = opts.compile_timeout;
  bo.keep_staging = opts.keep_staging;
  bo.cuda_arch = opts.cuda_arch;
  BuildResult br = build_solution(s, bo);
  p.log = br.log;
  const BuildStatus st = br.status;
  p.build = std::move(br);
  switch (st) {
    case BuildStatus::Ok:
      break;
    case BuildStatus::Timeout:
      p.failure = Status::Timeout;
      p.log = fmt::format("compilation did not finish within {:g} s\n", opts.compile_timeout.count()) +
              p.log;
      return done();
    case BuildStatus::Unsupported:
      p.failure = Status::CompileError;
      return done();
    case BuildStatus::CompileError:
    case BuildStatus::Rejected:
      p.failure = Status::CompileError;
      return done();
  }
  const BuildResult& b = *p.build;
  if (s.spec.binding == Binding::Native) {
    p.entry.kind = EntryKind::Native;
    if (!s.spec.destination_passing_style) {
      p.failure = Status::CompileError;
      p.log = "spec.destination_passing_style: the native binding is always destination-passing";
      return done();
    }
  } else {
    p.entry.kind = EntryKind::TorchExtension;
    p.entry.module_name = b.module_name;
  }
  p.entry.library = b.so_path.string();
  p.entry.symbol = b.entry_symbol.empty() ? s.spec.entry_function : b.entry_symbol;
  p.log.clear();  // the compiler's chatter belongs to failed builds only
  p.ok = true;
  return done();
}

json workload_spec(const Problem& problem, size_t i) {
  const Workload& w = problem.workloads.at(i);
  const ResolvedWorkload& r = problem.resolved.at(i).value();
  const Definition& def = problem.definition;
  const json axes = axes_and_scalars(w, r);
  json inputs = json::array();
  for (const auto& t : r.inputs) {
    const TensorSpec* spec = def.find_input(t.name);
    const InputSource* src = w.input(t.name);
    inputs.push_back({{"name", t.name},
                      {"dtype", dtype_name(t.dtype)},
                      {"shape", t.scalar ? json(nullptr) : json(t.shape)},
                      {"description", spec ? spec->description : ""},
                      {"source", src ? source_json(*src) : json{{"type", "random"}}}});
  }
  json outputs = json::array();
  for (const auto& t : r.outputs)
    outputs.push_back({{"name", t.name},
                       {"dtype", dtype_name(t.dtype)},
                       {"shape", t.scalar ? json(nullptr) : json(t.shape)}});
  return {{"index", i},
          {"uuid", w.uuid},
          {"axes", axes},
          {"inputs", inputs},
          {"outputs", outputs},
          {"tolerance", tolerance_json(w.effective_tolerance())},
          {"op_type", def.op_type},
          {"dataset_root", problem.paths.dataset_root.string()}};
}

Trace make_trace(const Problem& problem, size_t workload_index, const std::string& solution_name,
                 const WorkloadOutcome& o, const json& env) {
  Trace t;
  t.definition = problem.definition.name;
  t.solution = solution_name;
  t.workload = to_json(problem.workloads.at(workload_index));
  Evaluation& e = t.evaluation;
  e.status = o.status;
  e.log = o.log;
  if (o.status == Status::Passed || o.status == Status::IncorrectNumerical)
    e.correctness = o.correctness.value_or(Correctness{});
  if (o.status == Status::Passed) {
    // The public format requires performance for PASSED; untimed runs (--no-timing)
    // report zeros and say so under solbench_timed.
    Performance p;
    if (o.timing) p.latency_ms = o.timing->stats.median_ms;
    if (o.reference_timing) p.reference_latency_ms = o.reference_timing->stats.median_ms;
    p.speedup_factor = p.latency_ms > 0 ? p.reference_latency_ms / p.latency_ms : 0;
    e.performance = p;
  }
  e.environment.hardware = env.value("hardware", "");
  if (env.contains("torch")) e.environment.libs.push_back({"torch", env["torch"].get<std::string>()});
  if (env.contains("python")) e.environment.libs.push_back({"python", env["python"].get<std::string>()});
  e.environment.extra["solbench_device"] = env.value("device", "cpu");
  if (const std::string d = env.value("driver", std::string()); !d.empty())
    e.environment.extra["solbench_driver"] = d;
  e.timestamp = iso8601_now();
  // [ext] keys, named so that public readers ignore them.
  if (o.status == Status::Passed) e.extra["solbench_timed"] = o.timing.has_value();
  if (o.timing) e.extra["solbench_timing"] = timing_extra(*o.timing);
  if (o.reference_timing) {
    e.extra["solbench_reference_timing"] = timing_extra(*o.reference_timing);
    // From the results store: measured by an earlier evaluation in this environment.
    if (o.extra.value("reference_timing_cached", false))
      e.extra["solbench_reference_timing"]["cached"] = true;
  }
  if (env.contains("timer")) e.extra["solbench_timer"] = env["timer"];
  if (env.contains("code_seal")) e.extra["solbench_code_seal"] = env["code_seal"];
  if (!o.phases_ms.empty()) e.extra["solbench_phases_ms"] = o.phases_ms;
  if (!o.extra.empty()) e.extra["solbench_checks"] = o.extra;
  if (!o.profile.is_null()) {
    e.extra["solbench_profile"] = o.profile;
    // The reference's beside it, only with the T_ref it was made after (an outcome
    // whose T_ref was dropped drops it too).
    if (o.profile.is_object() && !o.reference_profile.is_null() && o.reference_timing)
      e.extra["solbench_profile"]["reference"] = o.reference_profile;
  }
  return t;
}

}  // namespace solbench::harness
