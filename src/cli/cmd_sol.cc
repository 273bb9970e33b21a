// `solbench sol PROBLEM_DIR...`: speed-of-light bounds per workload (tables or
// JSON), over one problem folder or a folder of problems.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/problem.h"
#include "sol/analysis.h"
#include "sol/hardware.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct SolOptions {
  std::vector<std::string> dirs;
  std::string arch;
  std::string workload;
  std::string dump_ops;
  bool json_output = false;
  bool no_cache = false;
};

double num(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].contains(b)) return 0;
  return j[a][b].get<double>();
}

double sum_obj(const json& j) {
  double s = 0;
  for (auto& [k, v] : j.items()) s += v.get<double>();
  return s;
}

std::string shape_text(const json& shapes) {
  std::string s;
  for (auto& [k, v] : shapes.items()) {
    if (v.is_null()) continue;
    std::string dims;
    for (auto& d : v) dims += (dims.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    s += (s.empty() ? "" : " ") + k + "[" + dims + "]";
  }
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void print_problem(const std::string& name, const json& results) {
  std::printf("\n%s\n", name.c_str());
  std::printf("  %-8s %-60s %9s %9s %8s %10s %11s %-7s %s\n", "workload", "shapes", "TC TFLOP",
              "CC TFLOP", "SFU Gop", "MB moved", "T_SOL us", "bound", "mode");
  for (auto& r : results) {
    std::string uuid = r.value("uuid", "").substr(0, 8);
    std::string status = r.value("status", "");
    if (status != "ok") {
      std::printf("  %-8s %-60s %s: %s\n", uuid.c_str(), shape_text(r.value("shapes", json::object())).c_str(),
                  status.c_str(), r.value("reason", "").substr(0, 160).c_str());
      continue;
    }
    std::string mode = r.value("mode", "");
    if (!r["uncosted"].empty()) mode += " UNCOSTED:" + std::to_string(r["uncosted"].size());
    std::printf("  %-8s %-60s %9.4f %9.4f %8.3f %10.3f %11.3f %-7s %s%s\n", uuid.c_str(),
                shape_text(r["shapes"]).c_str(), sum_obj(r["work"]["tensor_tflop"]),
                sum_obj(r["work"]["cuda_tflop"]), r["work"]["sfu_gop"].get<double>(),
                num(r, "bytes", "min_mb"), num(r, "time_us", "sol"),
                r.value("bottleneck", "").c_str(), mode.c_str(), r.value("cached", false) ? " (cached)" : "");
  }
}

int run_sol(const SolOptions& o) {
  sol::HardwareModel hw = sol::select_hardware(o.arch);
  std::vector<fs::path> dirs;
  for (auto& d : o.dirs) {
    if (!fs::exists(d)) throw InputError(d, 0, "", "no such file or folder");
    auto found = find_problem_dirs(d);
    if (found.empty()) throw InputError(d, 0, "", "no definition.json at or below this folder");
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  sol::AnalysisOptions aopt;
  aopt.use_cache = !o.no_cache;
  aopt.keep_graph = !o.dump_ops.empty();
  json out = {{"hardware", hw.name}, {"problems", json::array()}};
  json dump = json::object();
  size_t n_ok = 0, n_untraceable = 0, n_error = 0, n_uncosted = 0, n_cached = 0;
  std::map<std::string, int64_t> uncosted_ops;
  auto t0 = std::chrono::steady_clock::now();
  if (!o.json_output)
    std::printf("hardware: %s (%s)\n", hw.display_name.c_str(), hw.name.c_str());
  for (auto& dir : dirs) {
    Diagnostics diags;
    Problem p = load_problem(problem_paths(dir), diags);
    json results = json::array();
    for (size_t i = 0; i < p.workloads.size(); ++i) {
      if (!o.workload.empty() && p.workloads[i].uuid != o.workload) continue;
      json r = sol::analyse_workload(p, i, hw, aopt);
      if (r.contains("graph")) {
        dump[p.definition.name][r["uuid"].get<std::string>()] = r["graph"];
        r.erase("graph");
      }
      std::string st = r.value("status", "");
      if (st == "ok") {
        ++n_ok;
        if (!r["uncosted"].empty()) ++n_uncosted;
        for (auto& [k, v] : r["uncosted"].items()) uncosted_ops[k] += v.get<int64_t>();
      } else if (st == "untraceable") {
        ++n_untraceable;
      } else {
        ++n_error;
      }
      if (r.value("cached", false)) ++n_cached;
      results.push_back(std::move(r));
    }
    if (results.empty()) continue;
    if (!o.json_output) print_problem(p.definition.name + "  (" + dir.string() + ")", results);
    out["problems"].push_back({{"name", p.definition.name}, {"dir", dir.string()},
                               {"diagnostics", diags.str()}, {"workloads", results}});
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out["summary"] = {{"problems", out["problems"].size()}, {"bounded", n_ok},
                    {"untraceable", n_untraceable}, {"errors", n_error},
                    {"with_uncosted_ops", n_uncosted}, {"uncosted_ops", uncosted_ops},
                    {"cached", n_cached}, {"seconds", secs}};
  if (!o.dump_ops.empty()) {
    std::ofstream f(o.dump_ops);
    f << dump.dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write --dump-ops file " + o.dump_ops);
  }
  if (o.json_output) {
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    std::printf("\nsummary: %zu workloads bounded, %zu untraceable here, %zu errors, %zu with uncosted "
                "operators, %zu from cache, %.2f s\n",
                n_ok, n_untraceable, n_error, n_uncosted, n_cached, secs);
    if (!uncosted_ops.empty()) {
      std::printf("uncosted operators:");
      for (auto& [k, v] : uncosted_ops) std::printf(" %s(x%lld)", k.c_str(), static_cast<long long>(v));
      std::printf("\n");
    }
  }
  return n_error > 0 ? 1 : 0;
}

}  // namespace

void add_sol_command(CLI::App& app) {
  auto o = std::make_shared<SolOptions>();
  auto* cmd = app.add_subcommand("sol", "Speed-of-light bounds (roofline over the traced reference)");
  cmd->add_option("problems", o->dirs, "Problem folders, or folders of problems")->required();
  cmd->add_option("--arch", o->arch, "Hardware model (see `solbench hw list`); default: the local GPU");
  cmd->add_option("--workload", o->workload, "Only this workload uuid");
  cmd->add_option("--dump-ops", o->dump_ops, "Write the operator graphs as JSON to FILE");
  cmd->add_flag("--json", o->json_output, "Print JSON");
  cmd->add_flag("--no-cache", o->no_cache, "Ignore and do not write the result cache");
  cmd->callback([o] { exit_code() = run_sol(*o); });
}

}  // namespace solbench::cli
