#include "cli/tolerance_probe.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "bridge/python.h"
#include "cli/commands.h"
#include "core/settings.h"
#include "harness/eval_plan.h"
#include "harness/framing.h"
#include "harness/process.h"
#include "harness/service_child.h"

namespace solbench::cli {

namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.0f} MiB", double(bytes) / (1 << 20)); }

// The weak outputs of a checked answer, as warning texts.
std::vector<std::string> weak_outputs(const json& answer) {
  std::vector<std::string> out;
  if (!answer.contains("outputs")) return out;
  const json tol = answer.value("tolerance", json::object());
  const size_t n_outputs = answer["outputs"].size();
  size_t n_weak = 0;
  for (const auto& o : answer["outputs"]) n_weak += o.value("passes", json::array()).empty() ? 0 : 1;
  // With several outputs, a solution passes only if every one does.
  const std::string of_all =
      n_outputs > 1 ? fmt::format(" [{} of the workload's {} outputs pass so]", n_weak, n_outputs)
                    : "";
  for (const auto& o : answer["outputs"]) {
    const json& passes = o.value("passes", json::array());
    if (passes.empty()) continue;
    std::string also;
    for (size_t i = 1; i < passes.size(); ++i)
      also += (also.empty() ? "; also as " : ", as ") + passes[i].value("cheat", "");
    out.push_back(fmt::format("weak tolerance: output '{}' passes the correctness check as {}: "
                              "{:.4g}% of elements within atol {:g}, rtol {:g} ({:g}% required){}",
                              o.value("name", ""), passes[0].value("cheat", ""),
                              100 * passes[0].value("matched_ratio", 0.0),
                              tol.value("max_atol", 0.0), tol.value("max_rtol", 0.0),
                              100 * tol.value("required_matched_ratio", 0.0), also) +
                  of_all);
  }
  return out;
}

}  // namespace

struct ToleranceProber::Impl {
  explicit Impl(ProbeOptions o)
      : opts(std::move(o)),
        child({"__probe-tolerance", "probe process", "", "--probe-timeout"}, opts.timeout_s) {}
  ProbeOptions opts;
  harness::ServiceChild child;

  // The answer to one request, or {"status": "not_checked", "reason": ...}.
  json ask(const json& request) {
    std::string why;
    if (std::optional<json> answer = child.ask(request, why)) return *answer;
    return {{"status", "not_checked"}, {"reason", why}};
  }
};

ToleranceProber::ToleranceProber(ProbeOptions opts)
    : impl_(std::make_unique<Impl>(std::move(opts))) {}

ToleranceProber::~ToleranceProber() = default;

std::vector<WorkloadProbe> ToleranceProber::probe(const Problem& p, Diagnostics& diags) {
  std::vector<WorkloadProbe> out;
  const Definition& def = p.definition;
  const std::string file = p.paths.workloads.string();
  auto bytes_of = [&](size_t i) { return p.resolved[i]->input_bytes + p.resolved[i]->output_bytes; };
  std::vector<size_t> fitting;  // resolved, within max_bytes, by size
  for (size_t i = 0; i < p.workloads.size() && i < p.resolved.size(); ++i)
    if (p.resolved[i] && bytes_of(i) <= impl_->opts.max_bytes) fitting.push_back(i);
  std::stable_sort(fitting.begin(), fitting.end(),
                   [&](size_t a, size_t b) { return bytes_of(a) < bytes_of(b); });
  std::set<size_t> chosen(fitting.begin(), fitting.end());
  const size_t n = impl_->opts.per_problem;
  if (n > 0 && fitting.size() > n) {
    chosen.clear();
    for (size_t k = 0; k < n; ++k)
      chosen.insert(fitting[n == 1 ? 0 : k * (fitting.size() - 1) / (n - 1)]);
  }
  for (size_t i = 0; i < p.workloads.size() && i < p.resolved.size(); ++i) {
    if (!p.resolved[i]) continue;  // invalid lines are errors already
    WorkloadProbe w;
    w.uuid = p.workloads[i].uuid;
    w.line = p.workloads[i].line;
    if (bytes_of(i) > impl_->opts.max_bytes) {
      w.status = "skipped";
      w.reason = fmt::format("above --probe-max-mib: inputs and outputs take {}, the limit is {}",
                             mib(bytes_of(i)), mib(impl_->opts.max_bytes));
      out.push_back(std::move(w));
      continue;
    }
    if (!chosen.count(i)) {
      w.status = "skipped";
      w.reason = fmt::format("not chosen: --probe-workloads {} of {} per problem", n,
                             fitting.size());
      out.push_back(std::move(w));
      continue;
    }
    json request = {{"reference", def.reference},
                    {"workload", harness::workload_spec(p, i)},
                    {"device", impl_->opts.device},
                    {"seed", 200}};  // fixed: the rules matter here, not the values
                                    // (an evaluation draws its own, harness/values.h)
    if (def.custom_inputs_entrypoint) request["custom_inputs_entrypoint"] = *def.custom_inputs_entrypoint;
    w.answer = impl_->ask(request);
    w.status = w.answer.value("status", "not_checked");
    w.reason = w.answer.value("reason", "");
    if (w.status == "checked") {
      w.weak = weak_outputs(w.answer);
      for (const auto& text : w.weak) diags.warn(file, w.line, "tolerance", text);
    }
    out.push_back(std::move(w));
  }
  return out;
}

json probes_json(const std::vector<WorkloadProbe>& probes, const ProbeOptions& opts) {
  json ws = json::array();
  size_t checked = 0, weak = 0, not_checked = 0, skipped = 0;
  for (const auto& w : probes) {
    json j = {{"uuid", w.uuid}, {"line", w.line}, {"status", w.status}};
    if (!w.reason.empty()) j["reason"] = w.reason;
    if (w.status == "checked") {
      ++checked;
      weak += w.weak.empty() ? 0 : 1;
      j["weak"] = !w.weak.empty();
      // Every output passes without computing anything: the whole workload can be faked.
      j["all_outputs_weak"] = !w.weak.empty() && w.weak.size() == w.answer["outputs"].size();
      j["warnings"] = w.weak;
      j["tolerance"] = w.answer.value("tolerance", json::object());
      j["outputs"] = w.answer.value("outputs", json::array());
      j["cuda_mapped_to_cpu"] = w.answer.value("device_mapped", false);
      j["cpu_upcast"] = w.answer.value("upcast", json::array());  // ops run in float32
      j["rounds"] = w.answer.value("rounds", 1);  // 2 when a cheat passed round 0
    } else if (w.status == "skipped") {
      ++skipped;
    } else {
      ++not_checked;
    }
    ws.push_back(std::move(j));
  }
  return {{"device", opts.device}, {"checked", checked},         {"weak", weak},
          {"not_checked", not_checked}, {"skipped", skipped}, {"workloads", std::move(ws)}};
}

std::string probes_summary(const std::vector<WorkloadProbe>& probes) {
  size_t checked = 0, weak = 0;
  std::map<std::string, size_t> reasons;  // "not checked: why" / "skipped: why" -> count
  for (const auto& w : probes) {
    if (w.status == "checked") {
      ++checked;
      weak += w.weak.empty() ? 0 : 1;
      continue;
    }
    // The reason's class (before the first ':'), so that one cause reads as one line.
    const std::string cls = w.reason.substr(0, w.reason.find(':'));
    ++reasons[(w.status == "skipped" ? "skipped (" : "not checked (") + cls + ")"];
  }
  std::string s = fmt::format("tolerance probe: {} checked ({} weak)", checked, weak);
  for (const auto& [why, n] : reasons) s += fmt::format(", {} {}", n, why);
  return s;
}

namespace {

// `solbench __probe-tolerance`: reads requests from the channel until EOF and
// answers each with tolerance_probe.probe's answer.
int run_probe_child() {
  const std::optional<int> fd = settings().internal.channel_fd;
  if (!fd) {
    std::fprintf(stderr,
                 "error: __probe-tolerance is started by `solbench validate --probe-tolerance` "
                 "(no SOLBENCH_CHANNEL_FD)\n");
    return 2;
  }
  try {
    bridge::call_json("tolerance_probe", "ready", "{}");
  } catch (const std::exception&) {
    // Reported per request: the probe itself says torch cannot be imported.
  }
  return harness::serve_frames(*fd, [](const json& request) -> json {
    try {
      return json::parse(bridge::call_json("tolerance_probe", "probe", request.dump()));
    } catch (const std::exception& e) {
      return {{"status", "not_checked"}, {"reason", std::string("probe failed: ") + e.what()}};
    }
  });
}

}  // namespace

void add_probe_child_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("__probe-tolerance",
                                 "tolerance probe process (internal; started by validate)");
  cmd->group("");  // hidden
  cmd->callback([] { exit_code() = run_probe_child(); });
}

}  // namespace solbench::cli
