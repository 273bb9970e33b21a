// definition.json: parsing, validation and writing. Also the small field
// reader the other format parsers share (declared in definition.h, detail).
#include "core/definition.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/expr.h"

namespace solbench {
namespace detail {

namespace {

bool is_identifier_like(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
  });
}

std::string article_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    default: return describe_json(j);
  }
}

}  // namespace

std::string describe_json(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      if (s.size() > 40) return json(s.substr(0, 37) + "...").dump();
      return j.dump();
    }
    case json::value_t::discarded: return "nothing";
    default: return j.dump();  // numbers and booleans as written
  }
}

std::string join_path(std::string_view base, std::string_view key) {
  std::string k = is_identifier_like(key) ? std::string(key) : "[" + json(std::string(key)).dump() + "]";
  if (base.empty()) return k[0] == '[' ? k : k;
  if (k[0] == '[') return std::string(base) + k;
  return std::string(base) + "." + k;
}

std::string index_path(std::string_view base, size_t index) {
  return fmt::format("{}[{}]", base, index);
}

bool FieldReader::expect_object(const json& v, const std::string& path) const {
  if (v.is_object()) return true;
  error(path, "expected an object, found " + article_kind(v));
  return false;
}

const json* FieldReader::field(const json& obj, const std::string& obj_path, std::string_view key,
                               bool required) const {
  if (obj.is_object()) {
    auto it = obj.find(std::string(key));
    if (it != obj.end()) return &*it;
  }
  if (required) error(join_path(obj_path, key), "missing required field");
  return nullptr;
}

std::optional<std::string> FieldReader::string(const json& obj, const std::string& obj_path,
                                               std::string_view key, bool required) const {
  const json* v = field(obj, obj_path, key, required);
  if (!v || (v->is_null() && !required)) return std::nullopt;  // optional: null is absent
  if (!v->is_string()) {
    error(join_path(obj_path, key), "expected a string, found " + describe_json(*v));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<int64_t> FieldReader::as_integer(const json& v, const std::string& path) const {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
      error(path, "integer " + v.dump() + " is out of range (expected at most 2^63-1)");
      return std::nullopt;
    }
    return int64_t(v.get<uint64_t>());
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  error(path, "expected an integer, found " + describe_json(v));
  return std::nullopt;
}

std::optional<int64_t> FieldReader::integer(const json& obj, const std::string& obj_path,
                                            std::string_view key, bool required) const {
  const json* v = field(obj, obj_path, key, required);
  if (!v || (v->is_null() && !required)) return std::nullopt;  // optional: null is absent
  return as_integer(*v, join_path(obj_path, key));
}

std::optional<double> FieldReader::number(const json& obj, const std::string& obj_path,
                                          std::string_view key, bool required) const {
  const json* v = field(obj, obj_path, key, required);
  if (!v || (v->is_null() && !required)) return std::nullopt;  // optional: null is absent
  if (!v->is_number()) {
    error(join_path(obj_path, key), "expected a number, found " + describe_json(*v));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> FieldReader::boolean(const json& obj, const std::string& obj_path,
                                         std::string_view key, bool required) const {
  const json* v = field(obj, obj_path, key, required);
  if (!v || (v->is_null() && !required)) return std::nullopt;  // optional: null is absent
  if (!v->is_boolean()) {
    error(join_path(obj_path, key), "expected true or false, found " + describe_json(*v));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::vector<std::string>> FieldReader::strings(const json& obj,
                                                             const std::string& obj_path,
                                                             std::string_view key,
                                                             bool required) const {
  const json* v = field(obj, obj_path, key, required);
  if (!v || (v->is_null() && !required)) return std::nullopt;  // optional: null is absent
  std::string path = join_path(obj_path, key);
  if (!v->is_array()) {
    error(path, "expected an array of strings, found " + describe_json(*v));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string()) {
      error(index_path(path, i), "expected a string, found " + describe_json(e));
      ok = false;
      continue;
    }
    out.push_back(e.get<std::string>());
  }
  if (!ok) return std::nullopt;
  return out;
}

json unknown_keys(const json& obj, std::initializer_list<std::string_view> known) {
  json extra = json::object();
  if (!obj.is_object()) return extra;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) extra[it.key()] = it.value();
  }
  return extra;
}

bool defines_python_function(std::string_view source, std::string_view name) {
  size_t pos = 0;
  while (pos <= source.size()) {
    size_t end = source.find('\n', pos);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = source.substr(pos, end - pos);
    if (line.starts_with("async ")) line.remove_prefix(6);
    if (line.starts_with("def ")) {
      line.remove_prefix(4);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      if (line.starts_with(name)) {
        line.remove_prefix(name.size());
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        if (line.starts_with("(")) return true;
      }
    }
    pos = end + 1;
  }
  return false;
}

}  // namespace detail

namespace {

using detail::describe_json;
using detail::FieldReader;
using detail::index_path;
using detail::join_path;

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

bool is_reserved_word(std::string_view s) {
  return s == "and" || s == "or" || s == "not" || s == "True" || s == "False";
}

std::string_view axis_kind_name(AxisKind k) {
  switch (k) {
    case AxisKind::Const: return "const";
    case AxisKind::Var: return "var";
    case AxisKind::Expr: return "expr";
  }
  return "?";
}

// "12" -> 12; nullopt unless all digits (no sign, no spaces).
std::optional<int64_t> parse_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string expr_error_message(const ExprError& e, std::string_view text) {
  // Most ExprError messages already name their offset.
  const std::string what = e.what();
  if (what.find(" at offset ") != std::string::npos) return fmt::format("{} in \"{}\"", what, text);
  return fmt::format("{} at offset {} in \"{}\"", what, e.position(), text);
}

void parse_axes(const json& j, const FieldReader& r, Definition& d,
                std::map<std::string, Expr>& exprs) {
  const json* axes = r.field(j, "", "axes", true);
  if (!axes || !r.expect_object(*axes, "axes")) return;
  for (auto it = axes->begin(); it != axes->end(); ++it) {
    std::string path = join_path("axes", it.key());
    Axis a;
    a.name = it.key();
    if (!is_identifier(a.name) || is_reserved_word(a.name)) {
      r.error(path, fmt::format("axis name \"{}\" is not an identifier (expected letters, digits, "
                                "underscores, not starting with a digit)",
                                a.name));
    }
    const json& v = it.value();
    if (!r.expect_object(v, path)) {
      d.axes.push_back(a);
      continue;
    }
    if (auto desc = r.string(v, path, "description", false)) a.description = *desc;
    auto type = r.string(v, path, "type", true);
    if (type == "const") {
      a.kind = AxisKind::Const;
      if (auto value = r.integer(v, path, "value", true)) {
        if (*value < 0)
          r.error(join_path(path, "value"), fmt::format("axis size {} is negative (expected >= 0)", *value));
        a.value = *value;
      }
    } else if (type == "var") {
      a.kind = AxisKind::Var;
      if (v.contains("value"))
        r.error(join_path(path, "value"),
                "a var axis takes its size from each workload (expected no \"value\"; use "
                "\"type\": \"const\" for a fixed size)");
    } else if (type == "expr") {
      a.kind = AxisKind::Expr;
      if (auto text = r.string(v, path, "expression", true)) {
        a.expression = *text;
        try {
          exprs.emplace(a.name, Expr::parse(*text));
        } catch (const ExprError& e) {
          r.error(join_path(path, "expression"), expr_error_message(e, *text));
        }
      }
    } else if (type) {
      r.error(join_path(path, "type"),
              fmt::format("unknown axis type \"{}\" (expected \"const\", \"var\" or \"expr\")", *type));
    }
    d.axes.push_back(std::move(a));
  }
}

// Expression axes may reference only known axes and must not depend on themselves.
void check_expr_axes(const Definition& d, const std::map<std::string, Expr>& exprs,
                     const FieldReader& r) {
  std::map<std::string, std::vector<std::string>> deps;
  for (const auto& [name, e] : exprs) {
    std::string path = join_path(join_path("axes", name), "expression");
    for (const auto& ref : e.names()) {
      if (!d.find_axis(ref)) {
        r.error(path, fmt::format("unknown axis \"{}\" in \"{}\"", ref, e.text()));
      } else {
        deps[name].push_back(ref);
      }
    }
  }
  // Depth-first search; report each cycle once, at its first axis in file order.
  enum class Mark { None, Active, Done };
  std::map<std::string, Mark> mark;
  std::vector<std::string> stack;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    mark[name] = Mark::Active;
    stack.push_back(name);
    for (const auto& next : deps[name]) {
      if (mark[next] == Mark::Active) {
        auto start = std::find(stack.begin(), stack.end(), next);
        std::string cycle;
        for (auto s = start; s != stack.end(); ++s) cycle += *s + " -> ";
        cycle += next;
        r.error(join_path(join_path("axes", next), "expression"),
                fmt::format("axis expressions form a cycle: {}", cycle));
      } else if (mark[next] == Mark::None) {
        visit(next);
      }
    }
    stack.pop_back();
    mark[name] = Mark::Done;
  };
  for (const auto& a : d.axes) {
    if (a.kind == AxisKind::Expr && mark[a.name] == Mark::None) visit(a.name);
  }
}

std::vector<TensorSpec> parse_tensors(const json& j, std::string_view section, const FieldReader& r,
                                      const Definition& d) {
  std::vector<TensorSpec> out;
  const json* obj = r.field(j, "", section, true);
  if (!obj || !r.expect_object(*obj, std::string(section))) return out;
  for (auto it = obj->begin(); it != obj->end(); ++it) {
    std::string path = join_path(section, it.key());
    TensorSpec t;
    t.name = it.key();
    if (t.name.empty()) r.error(path, "tensor name is empty");
    const json& v = it.value();
    if (!r.expect_object(v, path)) {
      out.push_back(std::move(t));
      continue;
    }
    if (const json* shape = r.field(v, path, "shape", true)) {
      std::string spath = join_path(path, "shape");
      if (shape->is_array()) {
        std::vector<Dim> dims;
        for (size_t i = 0; i < shape->size(); ++i) {
          const json& e = (*shape)[i];
          std::string epath = index_path(spath, i);
          Dim dim;
          if (e.is_string()) {
            const auto& s = e.get_ref<const std::string&>();
            if (auto lit = parse_digits(s)) {
              dim.literal = *lit;
            } else if (s.size() > 1 && s[0] == '-' && parse_digits(s.substr(1))) {
              r.error(epath, fmt::format("dimension {} is negative (expected >= 0)", s));
            } else if (d.find_axis(s)) {
              dim.axis = s;
            } else {
              r.error(epath, fmt::format("unknown axis \"{}\" (expected an axis of the definition "
                                         "or an integer literal)",
                                         s));
              dim.axis = s;
            }
          } else if (e.is_number_integer()) {
            auto lit = r.as_integer(e, epath);
            if (lit && *lit < 0) {
              r.error(epath, fmt::format("dimension {} is negative (expected >= 0)", *lit));
            } else if (lit) {
              dim.literal = *lit;
            }
          } else {
            r.error(epath, "expected an axis name or an integer literal, found " + describe_json(e));
          }
          dims.push_back(std::move(dim));
        }
        t.shape = std::move(dims);
      } else if (!shape->is_null()) {
        r.error(spath, "expected an array of axis names or null (a scalar), found " +
                           describe_json(*shape));
        t.shape = std::vector<Dim>{};
      }
    }
    const bool has_shape_field = v.contains("shape");
    if (section == "outputs" && has_shape_field && t.is_scalar())
      r.error(join_path(path, "shape"),
              "an output cannot be a scalar: outputs are pre-allocated and written in place "
              "(expected an array; [] for a 0-d tensor)");
    if (auto dt = r.string(v, path, "dtype", true)) {
      if (auto parsed = parse_dtype(*dt)) {
        t.dtype = *parsed;
        if (dtype_info(t.dtype).values_per_element == 2 && has_shape_field &&
            (t.is_scalar() || t.shape->empty()))
          r.error(join_path(path, "shape"),
                  fmt::format("{} packs two values per byte along the last dimension (expected a "
                              "shape with at least one dimension)",
                              *dt));
      } else {
        std::string known;
        for (const auto& info : all_dtypes()) known += (known.empty() ? "" : ", ") + std::string(info.name);
        r.error(join_path(path, "dtype"), fmt::format("unknown dtype \"{}\" (expected one of {})", *dt, known));
      }
    }
    if (auto desc = r.string(v, path, "description", false)) t.description = *desc;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

const Axis* Definition::find_axis(std::string_view n) const {
  for (const auto& a : axes)
    if (a.name == n) return &a;
  return nullptr;
}
const TensorSpec* Definition::find_input(std::string_view n) const {
  for (const auto& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}
const TensorSpec* Definition::find_output(std::string_view n) const {
  for (const auto& t : outputs)
    if (t.name == n) return &t;
  return nullptr;
}

Definition parse_definition(const json& j, const std::string& file, Diagnostics& diags) {
  FieldReader r(file, 0, diags);
  Definition d;
  if (!r.expect_object(j, "")) return d;

  if (auto name = r.string(j, "", "name", true)) {
    if (name->empty()) r.error("name", "expected a non-empty name");
    d.name = *name;
  }
  if (auto s = r.string(j, "", "op_type", false)) d.op_type = *s;
  if (auto s = r.string(j, "", "description", false)) d.description = *s;
  if (auto s = r.string(j, "", "hf_id", false)) d.hf_id = *s;

  std::map<std::string, Expr> exprs;
  parse_axes(j, r, d, exprs);
  check_expr_axes(d, exprs, r);

  d.inputs = parse_tensors(j, "inputs", r, d);
  d.outputs = parse_tensors(j, "outputs", r, d);
  if (j.contains("outputs") && j["outputs"].is_object() && d.outputs.empty())
    r.error("outputs", "expected at least one output");
  for (const auto& o : d.outputs) {
    if (d.find_input(o.name))
      r.error(join_path("outputs", o.name),
              fmt::format("duplicate tensor name \"{}\" (also an input; names must be unique "
                          "across inputs and outputs)",
                          o.name));
  }

  if (auto ref = r.string(j, "", "reference", true)) {
    d.reference = *ref;
    if (ref->find_first_not_of(" \t\r\n") == std::string::npos) {
      r.error("reference", "expected Python source defining run(...), found an empty string");
    } else if (!detail::defines_python_function(*ref, "run")) {
      r.error("reference", "expected a top-level `def run(` in the reference source");
    }
  }

  if (const json* cie = r.field(j, "", "custom_inputs_entrypoint", false); cie && !cie->is_null()) {
    if (!cie->is_string()) {
      r.error("custom_inputs_entrypoint", "expected a function name or null, found " + describe_json(*cie));
    } else {
      std::string fn = cie->get<std::string>();
      if (!is_identifier(fn)) {
        r.error("custom_inputs_entrypoint",
                fmt::format("\"{}\" is not a Python function name", fn));
      } else if (!d.reference.empty() && !detail::defines_python_function(d.reference, fn)) {
        r.error("custom_inputs_entrypoint",
                fmt::format("function \"{}\" is not defined in reference (expected a top-level "
                            "`def {}(`)",
                            fn, fn));
      }
      d.custom_inputs_entrypoint = std::move(fn);
    }
  }

  if (auto cs = r.strings(j, "", "constraints", false)) {
    d.constraints = *cs;
    for (size_t i = 0; i < cs->size(); ++i) {
      std::string path = index_path("constraints", i);
      const std::string& text = (*cs)[i];
      try {
        Expr e = Expr::parse(text);
        for (const auto& n : e.names())
          if (!d.find_axis(n)) r.error(path, fmt::format("unknown axis \"{}\" in \"{}\"", n, text));
      } catch (const ExprError& e) {
        r.error(path, expr_error_message(e, text));
      }
    }
  }

  d.extra = detail::unknown_keys(j, {"name", "op_type", "description", "axes", "inputs", "outputs",
                                     "reference", "constraints", "custom_inputs_entrypoint", "hf_id"});
  return d;
}

Definition load_definition(const std::filesystem::path& path, Diagnostics& diags) {
  try {
    return parse_definition(load_json_file(path), path.string(), diags);
  } catch (const InputError& e) {
    diags.append(e.diagnostics());
    return {};
  }
}

json to_json(const Definition& d) {
  json j = json::object();
  j["name"] = d.name;
  if (!d.op_type.empty()) j["op_type"] = d.op_type;
  if (!d.description.empty()) j["description"] = d.description;
  json axes = json::object();
  for (const auto& a : d.axes) {
    json ja = json::object();
    ja["type"] = axis_kind_name(a.kind);
    if (a.kind == AxisKind::Const) ja["value"] = a.value;
    if (a.kind == AxisKind::Expr) ja["expression"] = a.expression;
    if (!a.description.empty()) ja["description"] = a.description;
    axes[a.name] = std::move(ja);
  }
  j["axes"] = std::move(axes);
  auto tensors = [](const std::vector<TensorSpec>& ts) {
    json out = json::object();
    for (const auto& t : ts) {
      json jt = json::object();
      if (t.shape) {
        json shape = json::array();
        for (const auto& dim : *t.shape)
          shape.push_back(dim.is_literal() ? std::to_string(dim.literal) : dim.axis);
        jt["shape"] = std::move(shape);
      } else {
        jt["shape"] = nullptr;
      }
      jt["dtype"] = dtype_name(t.dtype);
      if (!t.description.empty()) jt["description"] = t.description;
      out[t.name] = std::move(jt);
    }
    return out;
  };
  j["inputs"] = tensors(d.inputs);
  j["outputs"] = tensors(d.outputs);
  j["reference"] = d.reference;
  if (!d.constraints.empty()) j["constraints"] = d.constraints;
  j["custom_inputs_entrypoint"] =
      d.custom_inputs_entrypoint ? json(*d.custom_inputs_entrypoint) : json(nullptr);
  if (!d.hf_id.empty()) j["hf_id"] = d.hf_id;
  for (auto it = d.extra.begin(); it != d.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

}  // namespace solbench
