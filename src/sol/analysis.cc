#include "sol/analysis.h"

#include <chrono>

#include <fmt/format.h>

#include "sol/cache.h"
#include "sol/cost_model.h"
#include "sol/tracer.h"

namespace solbench::sol {

namespace {

json work_json(const Work& w) {
  json tc = json::object(), cc = json::object();
  for (size_t c = 0; c < kClasses; ++c) {
    if (w.tensor_flops[c] > 0) tc[math_class_name(MathClass(c))] = w.tensor_flops[c] / 1e12;
    if (w.cuda_flops[c] > 0) cc[math_class_name(MathClass(c))] = w.cuda_flops[c] / 1e12;
  }
  return {{"tensor_tflop", tc}, {"cuda_tflop", cc}, {"sfu_gop", w.sfu_ops / 1e9},
          {"int_gop", w.int_ops / 1e9}, {"unfused_mb", w.bytes / 1e6}};
}

}  // namespace

json analyse_graph(const OpGraph& g, const ResolvedWorkload& r, const HardwareModel& hw) {
  json res = {{"status", g.status}, {"mode", g.mode}, {"mode_reason", g.mode_reason},
              {"notes", g.notes}, {"torch", g.torch_version}, {"hardware", hw.name}};
  json shapes = json::object();
  for (auto& t : r.inputs) shapes[t.name] = t.scalar ? json(nullptr) : json(t.shape);
  res["shapes"] = shapes;
  if (g.status != "ok") {
    res["reason"] = g.reason;
    return res;
  }
  GraphCost gc = cost_graph(g);
  // A partial trace (a time budget ran out) is the first part of the reference: what
  // it has not read yet, and the outputs it had not returned, count nothing.
  const bool partial = g.partial_budget_s > 0;
  double in_bytes = 0, min_in = 0;
  for (auto& t : r.inputs) {
    in_bytes += double(t.bytes);
    auto it = gc.input_touched_bytes.find(t.name);
    // An input the graph never names (returned unchanged, or read in Python)
    // keeps its full size.
    if (it != gc.input_touched_bytes.end()) min_in += std::min<double>(it->second, double(t.bytes));
    else if (!partial) min_in += double(t.bytes);
  }
  double min_out = 0;
  for (auto& t : r.outputs) {
    auto it = gc.output_written_bytes.find(t.name);
    if (it != gc.output_written_bytes.end()) min_out += std::min<double>(it->second, double(t.bytes));
    else if (!partial) min_out += double(t.bytes);
  }
  Bound b = roofline(gc.total, in_bytes, min_in, double(r.output_bytes), hw, min_out);
  res["work"] = work_json(b.work);
  res["bytes"] = {{"boundary_mb", b.boundary_bytes / 1e6}, {"min_mb", b.min_bytes / 1e6},
                    {"dram_mb", b.dram_bytes / 1e6}, {"l2_deferred_mb", b.l2_deferred_bytes / 1e6},
                  {"min_in_mb", min_in / 1e6}, {"min_out_mb", min_out / 1e6},
                  {"unfused_mb", b.unfused_bytes / 1e6}};
  res["time_us"] = {{"tensor", b.t_tensor * 1e6}, {"cuda", b.t_cuda * 1e6}, {"sfu", b.t_sfu * 1e6},
                    {"dram", b.t_dram * 1e6},     {"sol", b.t_sol * 1e6},   {"unfused", b.t_unfused * 1e6}};
  res["bottleneck"] = b.bottleneck;
  res["intensity_flop_per_byte"] = b.intensity;
  res["uncosted"] = gc.uncosted;
  json ops = json::array();
  for (auto& oc : gc.ops) {
    if (oc.costed && oc.family == "view") continue;  // zero cost; listed in the graph dump
    const Work& w = oc.work;
    json o = {{"op", oc.op}, {"count", oc.count}, {"costed", oc.costed}};
    if (oc.costed) {
      o["family"] = oc.family;
      o["tflop"] = (w.tensor_total() + w.cuda_total()) / 1e12;
      o["sfu_gop"] = w.sfu_ops / 1e9;
      o["mb"] = w.bytes / 1e6;
    }
    if (!oc.note.empty()) o["note"] = oc.note;
    ops.push_back(o);
  }
  res["ops"] = ops;
  res["raw_op_count"] = g.raw_op_count;
  if (partial) {
    res["partial"] = {{"budget_s", g.partial_budget_s}, {"ops", g.raw_op_count}};
    res["notes"].push_back(fmt::format(
        "partial trace: the {:g} s budget ran out after {} operators; T_SOL bounds the part "
        "traced (a lower bound of the whole's); --trace-budget traces further",
        g.partial_budget_s, g.raw_op_count));
  }
  return res;
}

OpGraph GraphMemo::get(const std::string& key, const std::function<OpGraph()>& trace, bool* traced) {
  std::promise<OpGraph> mine;
  std::shared_future<OpGraph> theirs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graphs_.find(key);
    if (it != graphs_.end()) {
      theirs = it->second;
    } else {
      graphs_.emplace(key, mine.get_future().share());
      ++traces_;
    }
  }
  if (theirs.valid()) {
    *traced = false;
    return theirs.get();
  }
  *traced = true;
  OpGraph g;
  try {
    g = trace();
  } catch (const std::exception& e) {
    g.status = "error";
    g.reason = e.what();
  }
  mine.set_value(g);
  return g;
}

size_t GraphMemo::traces() const {
  std::lock_guard<std::mutex> lock(mu_);
  return traces_;
}

static bool definite(const OpGraph& g) {
  if (g.status != "error") return true;
  // An error the tracer answered (an exception in the reference, a meta, hybrid
  // and cpu trace that all fail) follows from the request; a time limit, a
  // crashed or unstartable tracer process, or memory may not recur.
  for (const char* transient : {"(--timeout)", "the tracer process", "cannot start the tracer",
                                "tracer failed:", "MemoryError", "out of memory", "std::bad_alloc"})
    if (g.reason.find(transient) != std::string::npos) return false;
  return true;
}

json analyse_workload(const Problem& p, size_t index, const HardwareModel& hw,
                      const AnalysisOptions& opt) {
  const Workload& w = p.workloads.at(index);
  json base = {{"uuid", w.uuid}, {"index", index}, {"axes", json::object()}};
  for (auto& [k, v] : w.axes) base["axes"][k] = v;
  if (index >= p.resolved.size() || !p.resolved[index]) {
    base["status"] = "invalid";
    base["reason"] = "the workload does not resolve against its definition (see solbench validate)";
    return base;
  }
  const ResolvedWorkload& r = *p.resolved[index];
  std::string def_text = to_json(p.definition).dump(), wl_text = to_json(w).dump();
  std::string tv = tracer_version();
  const json request = trace_request(p.definition, w, r, "auto", p.paths.dataset_root);
  std::string graph_key = content_hash({request.dump(), tv});
  // The request holds the index blobs' hashes, which the workload's text does not.
  std::string result_key = content_hash({def_text, wl_text, tv, hw.content, kCostModelVersion, graph_key});

  // The budget is not part of the keys: a complete graph holds whatever the budget;
  // a partial one is used only where the budget asked for is no larger than its own.
  json sent = request;
  if (opt.trace_budget_s > 0) sent["budget_s"] = opt.trace_budget_s;
  const auto enough = [&](const OpGraph& g) {
    return g.partial_budget_s <= 0 || (opt.trace_budget_s > 0 && opt.trace_budget_s <= g.partial_budget_s);
  };

  if (opt.use_cache && !opt.keep_graph) {
    if (auto hit = cache_get("result", result_key)) {
      json res = *hit;
      res["cached"] = true;
      return res;
    }
  }
  OpGraph g;
  bool graph_cached = false;
  double seconds = 0, wall = 0;
  if (opt.use_cache) {
    if (auto hit = cache_get("graph", graph_key)) {
      try {
        g = parse_op_graph(*hit, "cache");
        graph_cached = enough(g);
      } catch (const std::exception&) {
      }
    }
  }
  bool reused = false;
  if (!graph_cached) {
    auto t0 = std::chrono::steady_clock::now();
    auto run_trace = [&] { return opt.trace ? opt.trace(sent) : trace_reference(sent); };
    bool traced = true;
    g = opt.memo ? opt.memo->get(graph_key, run_trace, &traced) : run_trace();
    reused = !traced;
    if (traced) {
      // The tracer's own time excludes starting a tracer process (Python and
      // torch imports), which the wall time of the first trace of a slot holds.
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      seconds = g.seconds >= 0 ? std::min(g.seconds, wall) : wall;
    }
    // Errors may be transient (time limit, memory); only definite outcomes are
    // cached, so that a cached run repeats no failing trace that would fail again.
    if (traced && opt.use_cache && definite(g)) cache_put("graph", graph_key, to_json(g));
  }
  json res = analyse_graph(g, r, hw);
  for (auto& [k, v] : base.items()) res[k] = v;
  res["trace_seconds"] = seconds;
  if (wall > 0) res["trace_wall_seconds"] = wall;
  if (reused) res["graph_reused"] = true;
  // A partial graph's result is costed again from its graph (cheap), so that a larger
  // budget asked for later traces further.
  if (opt.use_cache && definite(g) && g.partial_budget_s <= 0) cache_put("result", result_key, res);
  res["cached"] = graph_cached;
  if (opt.keep_graph) res["graph"] = to_json(g);
  return res;
}

}  // namespace solbench::sol
