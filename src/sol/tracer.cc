#include "sol/tracer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bridge/python.h"
#include "core/safetensors.h"
#include "sol/cache.h"

namespace solbench::sol {

json trace_request(const Definition& def, const Workload& w, const ResolvedWorkload& r,
                   const std::string& mode, const std::filesystem::path& dataset_root) {
  const json axes = axes_and_scalars(w, r);
  json inputs = json::array();
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const ResolvedTensor& t = r.inputs[i];
    const InputSource* src = w.input(t.name);
    json in = {{"name", t.name}, {"dtype", std::string(dtype_name(t.dtype))},
               {"source", src ? std::string(input_kind_name(src->kind)) : "random"}};
    in["shape"] = t.scalar ? json(nullptr) : json(t.shape);
    if (src && src->kind == InputKind::Scalar) {
      in["value"] = src->value;
    }
    if (src && src->kind == InputKind::Safetensors && !dataset_root.empty() && !dtype_info(t.dtype).is_float) {
      // Index values steer what the reference reads (sol.md, "Index values"):
      // the tracer reads an integer or bool blob when it is present. The
      // tensor's content hash makes the request (the graph's cache key) follow it.
      const std::filesystem::path blob = blob_path(dataset_root, *src);
      std::error_code ec;
      if (std::filesystem::is_regular_file(blob, ec)) {
        try {
          SafetensorsFile f = SafetensorsFile::open(blob);
          if (const SafetensorsFile::Tensor* st = f.find(src->tensor_key)) {
            in["path"] = std::filesystem::absolute(blob, ec).string();
            in["tensor_key"] = src->tensor_key;
            in["blob_hash"] = content_hash(
                {std::string(reinterpret_cast<const char*>(st->data.data()), st->data.size())});
          }
        } catch (const std::exception&) {
          // A malformed blob: validation reports it; the tracer uses stand-ins.
        }
      }
    }
    inputs.push_back(in);
  }
  json outputs = json::array();
  for (auto& t : r.outputs)
    outputs.push_back({{"name", t.name}, {"dtype", std::string(dtype_name(t.dtype))},
                       {"shape", t.scalar ? json(nullptr) : json(t.shape)}});
  // The tracer reads the axes only to build custom inputs and index stand-ins
  // for safetensors inputs; elsewhere the request leaves them out, so that it is
  // the workload's shape signature and workloads that differ only in axes that
  // change no shape share one trace (see analyse_workload()).
  bool needs_axes = def.custom_inputs_entrypoint.has_value();
  for (auto& in : inputs) needs_axes = needs_axes || in["source"] == "safetensors";
  json req = {{"reference", def.reference}, {"inputs", inputs}, {"outputs", outputs},
              {"axes_and_scalars", needs_axes ? axes : json::object()}, {"mode", mode}, {"seed", 200}};
  if (def.custom_inputs_entrypoint) req["custom_inputs_entrypoint"] = *def.custom_inputs_entrypoint;
  return req;
}

OpGraph trace_reference(const json& request) {
  OpGraph g;
  if (!bridge::python_available()) {
    g.status = "untraceable";
    g.reason = "solbench was built without embedded Python";
    return g;
  }
  std::string answer;
  try {
    answer = bridge::call_json("tracer", "trace", request.dump());
  } catch (const std::exception& e) {
    g.status = "error";
    g.reason = std::string("tracer failed: ") + e.what();
    return g;
  }
  return parse_op_graph(json::parse(answer), "solbench_py.tracer answer");
}

void warm_up_tracer() {
  if (!bridge::python_available()) return;
  try {
    bridge::call_json("tracer", "ready", "{}");
  } catch (const std::exception&) {
  }
}

std::string tracer_version() {
  // The tracer's values come from its own module and the workers' input and
  // reference-loading code it shares: a change to any of them clears the cache.
  static const std::string v = [] {
    auto text = [](const char* file) {
      std::ifstream in(bridge::python_package_dir() / "solbench_py" / file);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    return content_hash({text("tracer.py"), text("inputs.py"), text("loading.py")});
  }();
  return v;
}

}  // namespace solbench::sol
