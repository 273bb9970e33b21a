#include "sol/op_graph.h"

#include "core/diagnostics.h"

namespace solbench::sol {

double dtype_bytes(const std::string& d) {
  if (d == "float64" || d == "int64" || d == "complex64" || d == "uint64") return 8;
  if (d == "float32" || d == "int32" || d == "uint32") return 4;
  if (d == "float16" || d == "bfloat16" || d == "int16" || d == "uint16") return 2;
  if (d == "complex32") return 4;
  if (d == "int8" || d == "uint8" || d == "bool" || d.rfind("float8", 0) == 0) return 1;
  if (d == "float4_e2m1fn_x2") return 1;  // two values per byte; the shape counts bytes
  if (d == "float4_e2m1") return 0.5;
  if (d == "complex128") return 16;
  return 0;
}

double TensorRef::numel() const {
  double n = 1;
  for (auto s : shape) n *= double(s);
  return n;
}

double TensorRef::bytes() const { return numel() * dtype_bytes(dtype); }

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& path, const std::string& msg) {
  throw InputError(origin, 0, path, msg);
}

TensorRef parse_ref(const json& j, const std::string& origin, const std::string& path) {
  if (!j.is_object() || !j.contains("shape") || !j["shape"].is_array() || !j.contains("dtype") ||
      !j["dtype"].is_string())
    fail(origin, path, "expected a tensor {\"id\", \"shape\": [..], \"dtype\": \"..\"}");
  TensorRef t;
  t.id = j.value("id", int64_t(-1));
  t.base = j.value("base", int64_t(-1));
  t.dtype = j["dtype"].get<std::string>();
  t.name = j.value("name", std::string());
  if (j.contains("distinct_numel")) {
    if (!j["distinct_numel"].is_number() || j["distinct_numel"].get<double>() < 0)
      fail(origin, path + ".distinct_numel", "expected a non-negative number");
    t.distinct_numel = j["distinct_numel"].get<double>();
  }
  for (size_t i = 0; i < j["shape"].size(); ++i) {
    const json& d = j["shape"][i];
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      fail(origin, path + ".shape[" + std::to_string(i) + "]", "expected a non-negative integer");
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}

bool is_tensor_json(const json& v) {
  return v.is_object() && v.contains("shape") && v.contains("dtype");
}

void collect(const json& v, std::vector<TensorRef>& out) {
  if (is_tensor_json(v)) {
    out.push_back(parse_ref(v, "", ""));
  } else if (v.is_array()) {
    for (auto& x : v) collect(x, out);
  }
}

json ref_json(const TensorRef& t) {
  json j = {{"id", t.id}, {"shape", t.shape}, {"dtype", t.dtype}};
  if (t.base >= 0) j["base"] = t.base;
  if (!t.name.empty()) j["name"] = t.name;
  if (t.distinct_numel >= 0) j["distinct_numel"] = t.distinct_numel;
  return j;
}

}  // namespace

std::vector<TensorRef> OpNode::tensor_args() const {
  std::vector<TensorRef> out;
  for (auto& [k, v] : args.items()) collect(v, out);
  return out;
}

TensorRef OpNode::tensor(const std::string& name) const {
  if (args.contains(name) && is_tensor_json(args[name])) return parse_ref(args[name], "", name);
  return {};
}

OpGraph parse_op_graph(const json& j, const std::string& origin) {
  if (!j.is_object()) fail(origin, "", "expected an operator graph object");
  OpGraph g;
  g.status = j.value("status", std::string("ok"));
  if (g.status != "ok" && g.status != "untraceable" && g.status != "error")
    fail(origin, "status", "expected ok, untraceable or error; found \"" + g.status + "\"");
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  g.reason = str("reason");
  g.mode = str("mode");
  g.mode_reason = str("mode_reason");
  g.torch_version = str("torch");
  g.raw_op_count = j.value("raw_op_count", int64_t(0));
  if (j.contains("seconds") && j["seconds"].is_number()) g.seconds = j["seconds"].get<double>();
  if (j.contains("partial") && j["partial"].is_object()) {
    const json& p = j["partial"];
    if (!p.contains("budget_s") || !p["budget_s"].is_number() || p["budget_s"].get<double>() <= 0)
      fail(origin, "partial.budget_s", "expected the time budget in seconds (a positive number)");
    g.partial_budget_s = p["budget_s"].get<double>();
  }
  if (j.contains("notes") && j["notes"].is_array())
    for (auto& n : j["notes"]) g.notes.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  if (g.status != "ok") return g;
  for (const char* key : {"inputs", "outputs"}) {
    if (!j.contains(key) || !j[key].is_array()) fail(origin, key, "expected an array of tensors");
    auto& dst = std::string(key) == "inputs" ? g.inputs : g.outputs;
    for (size_t i = 0; i < j[key].size(); ++i)
      dst.push_back(parse_ref(j[key][i], origin, std::string(key) + "[" + std::to_string(i) + "]"));
  }
  if (!j.contains("ops") || !j["ops"].is_array()) fail(origin, "ops", "expected an array of operators");
  for (size_t i = 0; i < j["ops"].size(); ++i) {
    const json& o = j["ops"][i];
    std::string path = "ops[" + std::to_string(i) + "]";
    if (!o.is_object() || !o.contains("op") || !o["op"].is_string())
      fail(origin, path + ".op", "expected the operator name as a string");
    OpNode n;
    n.op = o["op"].get<std::string>();
    if (n.op.rfind("aten::", 0) == 0) n.op = n.op.substr(6);
    n.overload = o.value("overload", std::string("default"));
    n.count = o.value("count", int64_t(1));
    if (n.count < 1) fail(origin, path + ".count", "expected a positive integer");
    if (o.contains("args")) {
      if (!o["args"].is_object()) fail(origin, path + ".args", "expected an object");
      n.args = o["args"];
      // Validate nested tensors now so later lookups cannot fail silently.
      for (auto& [k, v] : n.args.items())
        if (is_tensor_json(v)) parse_ref(v, origin, path + ".args." + k);
    }
    if (o.contains("outputs")) {
      if (!o["outputs"].is_array()) fail(origin, path + ".outputs", "expected an array of tensors");
      for (size_t k = 0; k < o["outputs"].size(); ++k)
        n.outputs.push_back(parse_ref(o["outputs"][k], origin, path + ".outputs[" + std::to_string(k) + "]"));
    }
    if (o.contains("selects") && o["selects"].is_object()) {
      const json& sel = o["selects"];
      if (!sel.contains("dim") || !sel["dim"].is_number_integer() || !sel.contains("ndims") ||
          !sel["ndims"].is_number_integer() || sel["dim"].get<int64_t>() < 0 || sel["ndims"].get<int64_t>() < 1)
        fail(origin, path + ".selects", "expected {\"dim\": >= 0, \"ndims\": >= 1}");
      n.select_dim = sel["dim"].get<int64_t>();
      n.select_ndims = sel["ndims"].get<int64_t>();
    }
    g.ops.push_back(std::move(n));
  }
  if (j.contains("selections")) {
    if (!j["selections"].is_array()) fail(origin, "selections", "expected an array");
    for (size_t i = 0; i < j["selections"].size(); ++i) {
      const json& s = j["selections"][i];
      std::string path = "selections[" + std::to_string(i) + "]";
      auto integer = [&](const char* k) {
        if (!s.contains(k) || !s[k].is_number_integer() || s[k].get<int64_t>() < 0)
          fail(origin, path + "." + k, "expected a non-negative integer");
        return s[k].get<int64_t>();
      };
      Selection sel;
      sel.id = integer("id");
      sel.dim = integer("dim");
      sel.ndims = integer("ndims");
      sel.selected = double(integer("selected"));
      if (!s.contains("shape") || !s["shape"].is_array()) fail(origin, path + ".shape", "expected an array");
      for (auto& d : s["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) fail(origin, path + ".shape", "expected sizes");
        sel.shape.push_back(d.get<int64_t>());
      }
      if (size_t(sel.dim + sel.ndims) > sel.shape.size())
        fail(origin, path + ".ndims", "dims beyond the source's rank");
      if (s.contains("ranges")) {
        if (!s["ranges"].is_array()) fail(origin, path + ".ranges", "expected [start, end) pairs");
        sel.has_ranges = true;
        for (auto& r : s["ranges"]) {
          if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer() ||
              r[0].get<int64_t>() < 0 || r[1].get<int64_t>() < r[0].get<int64_t>())
            fail(origin, path + ".ranges", "expected [start, end) pairs with 0 <= start <= end");
          sel.ranges.emplace_back(r[0].get<int64_t>(), r[1].get<int64_t>());
        }
      }
      g.selections.push_back(std::move(sel));
    }
  }
  return g;
}

json to_json(const OpGraph& g) {
  json j = {{"status", g.status}, {"mode", g.mode}, {"mode_reason", g.mode_reason},
            {"torch", g.torch_version}, {"notes", g.notes}, {"raw_op_count", g.raw_op_count}};
  if (!g.reason.empty()) j["reason"] = g.reason;
  if (g.seconds >= 0) j["seconds"] = g.seconds;
  if (g.partial_budget_s > 0) j["partial"] = {{"budget_s", g.partial_budget_s}, {"ops", g.raw_op_count}};
  json ins = json::array(), outs = json::array(), ops = json::array();
  for (auto& t : g.inputs) ins.push_back(ref_json(t));
  for (auto& t : g.outputs) outs.push_back(ref_json(t));
  for (auto& n : g.ops) {
    json o = {{"op", "aten::" + n.op}, {"overload", n.overload}, {"count", n.count}, {"args", n.args}};
    json os = json::array();
    for (auto& t : n.outputs) os.push_back(ref_json(t));
    o["outputs"] = os;
    if (n.select_dim >= 0) o["selects"] = {{"dim", n.select_dim}, {"ndims", n.select_ndims}};
    ops.push_back(o);
  }
  json sels = json::array();
  for (auto& s : g.selections) {
    json r = {{"id", s.id}, {"shape", s.shape}, {"dim", s.dim}, {"ndims", s.ndims},
              {"selected", int64_t(s.selected)}};
    if (s.has_ranges) {
      json rs = json::array();
      for (auto& [a, b] : s.ranges) rs.push_back({a, b});
      r["ranges"] = rs;
    }
    sels.push_back(r);
  }
  if (!sels.empty()) j["selections"] = sels;
  j["inputs"] = ins;
  j["outputs"] = outs;
  j["ops"] = ops;
  return j;
}

}  // namespace solbench::sol
