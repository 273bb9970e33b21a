// workload.jsonl: one workload per line; parsing, checks against the
// definition, and writing.
#include "core/workload.h"

#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/definition.h"
#include "core/solution.h"

namespace solbench {

namespace {

using detail::describe_json;
using detail::FieldReader;
using detail::join_path;

std::optional<InputKind> parse_input_kind(std::string_view s) {
  if (s == "random") return InputKind::Random;
  if (s == "scalar") return InputKind::Scalar;
  if (s == "safetensors") return InputKind::Safetensors;
  if (s == "custom") return InputKind::Custom;
  return std::nullopt;
}

InputSource parse_source(const json& v, const std::string& path, const FieldReader& r) {
  InputSource src;
  if (!r.expect_object(v, path)) return src;
  auto type = r.string(v, path, "type", true);
  if (!type) return src;
  auto kind = parse_input_kind(*type);
  if (!kind) {
    r.error(join_path(path, "type"),
            fmt::format("unknown input source type \"{}\" (expected \"random\", \"scalar\", "
                        "\"safetensors\" or \"custom\")",
                        *type));
    return src;
  }
  src.kind = *kind;
  switch (src.kind) {
    case InputKind::Scalar:
      if (const json* value = r.field(v, path, "value", true)) {
        if (value->is_number() || value->is_boolean()) {
          src.value = *value;
        } else {
          r.error(join_path(path, "value"),
                  "expected a number or true/false, found " + describe_json(*value));
        }
      }
      break;
    case InputKind::Safetensors:
      if (auto p = r.string(v, path, "path", true)) {
        if (auto why = unsafe_source_path_reason(*p)) {
          r.error(join_path(path, "path"),
                  fmt::format("unsafe path \"{}\": {} (expected a relative path inside the data set)",
                              *p, *why));
        }
        src.path = *p;
      }
      if (auto k = r.string(v, path, "tensor_key", true)) {
        if (k->empty()) r.error(join_path(path, "tensor_key"), "expected a non-empty tensor key");
        src.tensor_key = *k;
      }
      break;
    case InputKind::Random:
    case InputKind::Custom:
      break;
  }
  return src;
}

std::optional<Tolerance> parse_tolerance(const json& j, const FieldReader& r) {
  const json* v = r.field(j, "", "tolerance", false);
  if (!v || v->is_null()) return std::nullopt;
  if (!r.expect_object(*v, "tolerance")) return std::nullopt;
  Tolerance t;
  auto non_negative = [&](const char* key, double& out) {
    if (auto x = r.number(*v, "tolerance", key, false)) {
      if (*x < 0)
        r.error(join_path("tolerance", key), fmt::format("{} is negative (expected >= 0)", *x));
      out = *x;
    }
  };
  non_negative("max_atol", t.max_atol);
  non_negative("max_rtol", t.max_rtol);
  // The public set also spells it "required_match_ratio" (L2 subset); both are read.
  const char* ratio_key = v->contains("required_matched_ratio") ? "required_matched_ratio"
                          : v->contains("required_match_ratio") ? "required_match_ratio"
                                                                 : nullptr;
  if (ratio_key) {
    if (auto x = r.number(*v, "tolerance", ratio_key, false)) {
      if (*x < 0 || *x > 1)
        r.error(join_path("tolerance", ratio_key),
                fmt::format("{} is outside [0, 1] (expected a fraction of elements)", *x));
      t.required_matched_ratio = *x;
    }
  }
  if (const json* cap = r.field(*v, "tolerance", "max_error_cap", false); cap && !cap->is_null()) {
    if (auto x = r.number(*v, "tolerance", "max_error_cap", false)) {
      if (*x < 0)
        r.error("tolerance.max_error_cap", fmt::format("{} is negative (expected >= 0 or null)", *x));
      t.max_error_cap = *x;
    }
  }
  if (auto b = r.boolean(*v, "tolerance", "allow_negative_inf", false)) t.allow_negative_inf = *b;
  return t;
}

// Does a scalar source's value fit the input's dtype (bool, integer or float)?
void check_scalar_value(const TensorSpec& spec, const json& value, const std::string& path,
                        const FieldReader& r) {
  const DTypeInfo& info = dtype_info(spec.dtype);
  if (spec.dtype == DType::Bool) {
    if (!value.is_boolean())
      r.error(path, fmt::format("expected true or false for bool input \"{}\", found {}", spec.name,
                                describe_json(value)));
    return;
  }
  if (info.is_integer) {
    if (!value.is_number_integer()) {
      r.error(path, fmt::format("expected an integer for {} input \"{}\", found {}", info.name,
                                spec.name, describe_json(value)));
      return;
    }
    // Range of the dtype (int64 and uint8 included).
    int bits = info.storage_bits;
    bool is_unsigned = spec.dtype == DType::UInt8;
    if (value.is_number_unsigned()) {
      uint64_t u = value.get<uint64_t>();
      uint64_t max = is_unsigned ? (uint64_t(1) << bits) - 1 : (uint64_t(1) << (bits - 1)) - 1;
      if (u > max) r.error(path, fmt::format("{} does not fit {} (max {})", u, info.name, max));
    } else {
      int64_t x = value.get<int64_t>();
      int64_t min = is_unsigned ? 0 : (bits == 64 ? std::numeric_limits<int64_t>::min()
                                                  : -(int64_t(1) << (bits - 1)));
      int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max()
                               : (is_unsigned ? (int64_t(1) << bits) - 1
                                              : (int64_t(1) << (bits - 1)) - 1);
      if (x < min || x > max)
        r.error(path, fmt::format("{} does not fit {} (range [{}, {}])", x, info.name, min, max));
    }
    return;
  }
  if (!value.is_number())
    r.error(path, fmt::format("expected a number for {} input \"{}\", found {}", info.name,
                              spec.name, describe_json(value)));
}

// Input checks that need the definition (axes and sizes are resolve's part).
void check_inputs(const Definition& def, const Workload& w, const FieldReader& r) {
  for (const auto& spec : def.inputs) {
    std::string path = join_path("inputs", spec.name);
    const InputSource* src = w.input(spec.name);
    if (!src) {
      r.error(path, fmt::format("missing source for input \"{}\" (every definition input needs one)",
                                spec.name));
      continue;
    }
    switch (src->kind) {
      case InputKind::Scalar:
        if (!spec.is_scalar()) {
          r.error(join_path(path, "type"),
                  fmt::format("a scalar source is only for scalar inputs (shape null); \"{}\" is a "
                              "tensor (expected \"random\", \"safetensors\" or \"custom\")",
                              spec.name));
        } else if (!src->value.is_null()) {
          check_scalar_value(spec, src->value, join_path(path, "value"), r);
        }
        break;
      case InputKind::Random:
      case InputKind::Safetensors:
        if (spec.is_scalar())
          r.error(join_path(path, "type"),
                  fmt::format("\"{}\" is a scalar input (shape null): expected a \"scalar\" or "
                              "\"custom\" source, found \"{}\"",
                              spec.name, input_kind_name(src->kind)));
        break;
      case InputKind::Custom:
        if (!def.custom_inputs_entrypoint)
          r.error(join_path(path, "type"),
                  "a \"custom\" source needs the definition's custom_inputs_entrypoint, which is null");
        break;
    }
  }
  // Sources for names the definition has no input for are a warning, not an
  // error: SOL-ExecBench's own tool ignores them, and so does solbench (the
  // problem loader drops them; `validate --strict` makes them errors).
  for (const auto& [name, src] : w.inputs) {
    if (def.find_input(name)) continue;
    std::string what = def.find_output(name) ? fmt::format("\"{}\" is an output, not an input", name)
                                             : fmt::format("unknown input \"{}\"", name);
    std::string known;
    for (const auto& spec : def.inputs) known += (known.empty() ? "" : ", ") + spec.name;
    r.diags().warn(r.file(), r.line(), join_path("inputs", name),
                   fmt::format("{} (expected one of: {}) in workload \"{}\": ignored, since the "
                               "definition has no such input",
                               what, known, w.uuid));
  }
}

}  // namespace

std::string_view input_kind_name(InputKind k) {
  switch (k) {
    case InputKind::Random: return "random";
    case InputKind::Scalar: return "scalar";
    case InputKind::Safetensors: return "safetensors";
    case InputKind::Custom: return "custom";
  }
  return "?";
}

std::filesystem::path blob_path(const std::filesystem::path& dataset_root, const InputSource& src) {
  return dataset_root / src.path;
}

std::optional<int64_t> Workload::axis(std::string_view name) const {
  for (const auto& [n, v] : axes)
    if (n == name) return v;
  return std::nullopt;
}

const InputSource* Workload::input(std::string_view name) const {
  for (const auto& [n, s] : inputs)
    if (n == name) return &s;
  return nullptr;
}

Workload parse_workload(const json& j, const std::string& file, int line, Diagnostics& diags) {
  FieldReader r(file, line, diags);
  Workload w;
  w.line = line;
  if (!r.expect_object(j, "")) return w;
  if (auto uuid = r.string(j, "", "uuid", true)) {
    if (uuid->empty()) r.error("uuid", "expected a non-empty string");
    w.uuid = *uuid;
  }
  if (const json* axes = r.field(j, "", "axes", true); axes && r.expect_object(*axes, "axes")) {
    for (auto it = axes->begin(); it != axes->end(); ++it) {
      std::string path = join_path("axes", it.key());
      if (auto v = r.as_integer(it.value(), path)) {
        if (*v < 0) r.error(path, fmt::format("axis value {} is negative (expected >= 0)", *v));
        w.axes.emplace_back(it.key(), *v);
      }
    }
  }
  if (const json* inputs = r.field(j, "", "inputs", true);
      inputs && r.expect_object(*inputs, "inputs")) {
    for (auto it = inputs->begin(); it != inputs->end(); ++it)
      w.inputs.emplace_back(it.key(), parse_source(it.value(), join_path("inputs", it.key()), r));
  }
  w.tolerance = parse_tolerance(j, r);
  w.extra = detail::unknown_keys(j, {"uuid", "axes", "inputs", "tolerance"});
  return w;
}

std::optional<ResolvedWorkload> check_and_resolve_workload(const Definition& def, const Workload& w,
                                                           const std::string& file,
                                                           Diagnostics& diags) {
  size_t before = diags.size();
  check_inputs(def, w, FieldReader(file, w.line, diags));
  auto resolved = resolve_workload(def, w, file, diags);
  if (diags.size() != before) return std::nullopt;
  return resolved;
}

void check_workload(const Definition& def, const Workload& w, const std::string& file,
                    Diagnostics& diags) {
  check_and_resolve_workload(def, w, file, diags);
}

std::vector<std::string> drop_unknown_inputs(const Definition& def, Workload& w) {
  std::vector<std::string> dropped;
  std::erase_if(w.inputs, [&](const std::pair<std::string, InputSource>& in) {
    if (def.find_input(in.first)) return false;
    dropped.push_back(in.first);
    return true;
  });
  return dropped;
}

std::vector<Workload> load_workloads(const std::filesystem::path& path, Diagnostics& diags) {
  std::vector<Workload> out;
  const std::string file = path.string();
  std::map<std::string, int> first_line;  // uuid -> line
  for_each_jsonl_record(path, diags, [&](const json& j, int line) {
    const size_t before = diags.size();
    Workload w = parse_workload(j, file, line, diags);
    if (diags.size() != before) return;
    auto [it, fresh] = first_line.emplace(w.uuid, line);
    if (!fresh) {
      diags.add(file, line, "uuid",
                fmt::format("duplicate uuid \"{}\" (first used on line {})", w.uuid, it->second));
      return;
    }
    out.push_back(std::move(w));
  });
  return out;
}

json to_json(const Workload& w) {
  json j = json::object();
  j["uuid"] = w.uuid;
  json axes = json::object();
  for (const auto& [n, v] : w.axes) axes[n] = v;
  j["axes"] = std::move(axes);
  json inputs = json::object();
  for (const auto& [n, s] : w.inputs) {
    json js = json::object();
    js["type"] = input_kind_name(s.kind);
    if (s.kind == InputKind::Scalar) js["value"] = s.value;
    if (s.kind == InputKind::Safetensors) {
      js["path"] = s.path;
      js["tensor_key"] = s.tensor_key;
    }
    inputs[n] = std::move(js);
  }
  j["inputs"] = std::move(inputs);
  if (w.tolerance) {
    const Tolerance& t = *w.tolerance;
    json jt = json::object();
    jt["max_atol"] = t.max_atol;
    jt["max_rtol"] = t.max_rtol;
    jt["required_matched_ratio"] = t.required_matched_ratio;
    jt["max_error_cap"] = t.max_error_cap ? json(*t.max_error_cap) : json(nullptr);
    jt["allow_negative_inf"] = t.allow_negative_inf;
    j["tolerance"] = std::move(jt);
  }
  for (auto it = w.extra.begin(); it != w.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

std::string to_jsonl(const std::vector<Workload>& ws) {
  std::string out;
  for (const auto& w : ws) {
    out += to_json(w).dump();
    out += '\n';
  }
  return out;
}

std::string axes_text(const std::vector<std::pair<std::string, int64_t>>& axes) {
  std::string s;
  for (const auto& [n, v] : axes) s += fmt::format("{}{}={}", s.empty() ? "" : " ", n, v);
  return s;
}

}  // namespace solbench
