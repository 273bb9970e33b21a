// Resolution of a workload against its definition: axis values, constraints,
// shapes and byte sizes, all in exact, overflow-checked integer arithmetic.
#include "core/resolve.h"

#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/definition.h"
#include "core/expr.h"
#include "core/workload.h"

namespace solbench {

namespace {

using detail::index_path;
using detail::join_path;

constexpr uint64_t kMaxElements = uint64_t(std::numeric_limits<int64_t>::max());

std::string_view kind_name(AxisKind k) {
  switch (k) {
    case AxisKind::Const: return "const";
    case AxisKind::Var: return "var";
    case AxisKind::Expr: return "expr";
  }
  return "?";
}

// Evaluates the axes of one workload. Each failure is reported once, where it
// starts; axes depending on a failed axis fail silently.
class AxisResolver {
 public:
  AxisResolver(const Definition& def, const Workload& w, const std::string& file, Diagnostics& diags)
      : def_(def), w_(w), file_(file), diags_(diags) {}

  void run() {
    for (const auto& [name, value] : w_.axes) {
      const Axis* a = def_.find_axis(name);
      std::string path = join_path("axes", name);
      // The public set also gives scalar inputs (shape null) a value here, for
      // the custom inputs function's axes_and_scalars dict.
      const TensorSpec* scalar = def_.find_input(name);
      if (!a && scalar && scalar->is_scalar()) continue;
      if (!a) {
        error(path, fmt::format("unknown axis \"{}\" (expected a var axis of the definition: {}; or "
                                "the name of a scalar input)",
                                name, var_axis_list()));
      } else if (a->kind != AxisKind::Var) {
        error(path, fmt::format("axis \"{}\" is {} in the definition (workloads set only var axes: {})",
                                name, kind_name(a->kind), var_axis_list()));
      }
    }
    for (const auto& a : def_.axes) value_of(a.name);
  }

  std::optional<int64_t> value_of(const std::string& name) {
    if (auto it = state_.find(name); it != state_.end()) {
      if (it->second.done) return it->second.value;
      // Reached again while being evaluated: a cycle (normally caught by
      // parse_definition already).
      error(join_path("axes", name), fmt::format("axis \"{}\" depends on itself", name));
      return std::nullopt;
    }
    state_[name] = State{};  // in progress
    std::optional<int64_t> v = compute(name);
    state_[name] = State{true, v};
    return v;
  }

 private:
  struct State {
    bool done = false;
    std::optional<int64_t> value;
  };

  void error(const std::string& path, std::string message) {
    diags_.add(file_, w_.line, path, std::move(message));
  }

  std::string var_axis_list() const {
    std::string s;
    for (const auto& a : def_.axes)
      if (a.kind == AxisKind::Var) s += (s.empty() ? "" : ", ") + a.name;
    return s.empty() ? "none" : s;
  }

  std::optional<int64_t> compute(const std::string& name) {
    const Axis* a = def_.find_axis(name);
    std::string path = join_path("axes", name);
    if (!a) return std::nullopt;  // unknown names are reported where they are used
    switch (a->kind) {
      case AxisKind::Const:
        return a->value;
      case AxisKind::Var: {
        auto v = w_.axis(name);
        if (!v) {
          error(path, fmt::format("missing value for var axis \"{}\"", name));
          return std::nullopt;
        }
        if (*v < 0) return std::nullopt;  // reported by parse_workload
        return v;
      }
      case AxisKind::Expr: {
        Expr e;
        try {
          e = Expr::parse(a->expression);
        } catch (const ExprError&) {
          return std::nullopt;  // reported by parse_definition
        }
        for (const auto& dep : e.names()) {
          if (!def_.find_axis(dep)) return std::nullopt;  // reported by parse_definition
          if (!value_of(dep)) return std::nullopt;
        }
        try {
          int64_t v = e.eval([this](std::string_view n) -> std::optional<int64_t> {
            auto it = state_.find(std::string(n));
            if (it == state_.end() || !it->second.done) return std::nullopt;
            return it->second.value;
          });
          if (v < 0) {
            error(path, fmt::format("axis \"{}\" = {} evaluates to {} (expected >= 0){}", name,
                                    a->expression, v, bindings(e)));
            return std::nullopt;
          }
          return v;
        } catch (const ExprError& ex) {
          error(path, fmt::format("cannot evaluate axis \"{}\" = {}: {}{}", name, a->expression,
                                  ex.what(), bindings(e)));
          return std::nullopt;
        }
      }
    }
    return std::nullopt;
  }

 public:
  // " (with a=1, b=2)" for the axes an expression mentions.
  std::string bindings(const Expr& e) const {
    std::string s;
    for (const auto& n : e.names()) {
      auto it = state_.find(n);
      if (it == state_.end() || !it->second.value) continue;
      s += fmt::format("{}{}={}", s.empty() ? "" : ", ", n, *it->second.value);
    }
    return s.empty() ? "" : " (with " + s + ")";
  }

 private:
  const Definition& def_;
  const Workload& w_;
  const std::string& file_;
  Diagnostics& diags_;
  std::map<std::string, State> state_;
};

bool resolve_tensor(const TensorSpec& spec, const std::map<std::string, int64_t>& values, const std::string& path,
                    const std::string& file, int line, Diagnostics& diags, ResolvedTensor& out) {
  out.name = spec.name;
  out.dtype = spec.dtype;
  if (spec.is_scalar()) {
    out.scalar = true;
    return true;
  }
  uint64_t elements = 1;
  bool overflow = false;
  for (const auto& dim : *spec.shape) {
    int64_t v;
    if (dim.is_literal()) {
      v = dim.literal;
    } else {
      auto it = values.find(dim.axis);
      if (it == values.end()) return false;  // axis failed; reported already
      v = it->second;
    }
    out.shape.push_back(v);
    uint64_t next;
    if (__builtin_mul_overflow(elements, uint64_t(v), &next) || next > kMaxElements) overflow = true;
    elements = overflow ? 0 : next;
  }
  const uint64_t bits = uint64_t(dtype_info(spec.dtype).storage_bits);
  if (overflow || elements > std::numeric_limits<uint64_t>::max() / bits) {
    std::string dims;
    for (size_t i = 0; i < out.shape.size(); ++i) {
      const Dim& d = (*spec.shape)[i];
      dims += fmt::format("{}{}", i ? ", " : "",
                          d.is_literal() ? std::to_string(out.shape[i])
                                         : fmt::format("{}={}", d.axis, out.shape[i]));
    }
    diags.add(file, line, path,
              fmt::format("shape [{}] overflows: {}", dims,
                          overflow ? "the element count exceeds 2^63-1"
                                   : "its size in bits exceeds 2^64-1"));
    return false;
  }
  out.elements = elements;
  out.bytes = storage_bytes(spec.dtype, elements);
  return true;
}

}  // namespace

std::optional<int64_t> ResolvedWorkload::axis(std::string_view name) const {
  for (const auto& [n, v] : axes)
    if (n == name) return v;
  return std::nullopt;
}

std::vector<const ResolvedTensor*> ResolvedWorkload::dps_arguments() const {
  std::vector<const ResolvedTensor*> out;
  out.reserve(inputs.size() + outputs.size());
  for (const auto& t : inputs) out.push_back(&t);
  for (const auto& t : outputs) out.push_back(&t);
  return out;
}

json axes_and_scalars(const Workload& w, const ResolvedWorkload& r) {
  json out = json::object();
  for (const auto& [name, value] : r.axes) out[name] = value;
  for (const auto& [name, value] : w.axes)  // scalar inputs given under "axes"
    if (!out.contains(name)) out[name] = value;
  for (const auto& [name, src] : w.inputs)
    if (src.kind == InputKind::Scalar) out[name] = src.value;
  return out;
}

std::optional<ResolvedWorkload> resolve_workload(const Definition& def, const Workload& w,
                                                 const std::string& file, Diagnostics& diags) {
  const size_t before = diags.size();
  AxisResolver resolver(def, w, file, diags);
  resolver.run();

  ResolvedWorkload r;
  std::map<std::string, int64_t> values;
  for (const auto& a : def.axes) {
    if (auto v = resolver.value_of(a.name)) {
      r.axes.emplace_back(a.name, *v);
      values.emplace(a.name, *v);
    }
  }
  auto lookup = [&values](std::string_view n) -> std::optional<int64_t> {
    auto it = values.find(std::string(n));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };

  for (size_t i = 0; i < def.constraints.size(); ++i) {
    const std::string& text = def.constraints[i];
    Expr e;
    try {
      e = Expr::parse(text);
    } catch (const ExprError&) {
      continue;  // reported by parse_definition
    }
    bool known = true;
    for (const auto& n : e.names()) known = known && values.count(n);
    if (!known) continue;  // a missing or failed axis is reported already
    std::string path = index_path("constraints", i);
    try {
      if (!e.holds(lookup))
        diags.add(file, w.line, path,
                  fmt::format("constraint \"{}\" does not hold{}", text, resolver.bindings(e)));
    } catch (const ExprError& ex) {
      diags.add(file, w.line, path,
                fmt::format("cannot evaluate constraint \"{}\": {}{}", text, ex.what(),
                            resolver.bindings(e)));
    }
  }

  bool complete = r.axes.size() == def.axes.size();
  auto tensors = [&](const std::vector<TensorSpec>& specs, std::string_view section,
                     std::vector<ResolvedTensor>& out, uint64_t& total) {
    for (const auto& spec : specs) {
      ResolvedTensor t;
      if (!resolve_tensor(spec, values, join_path(join_path(section, spec.name), "shape"),
                          file, w.line, diags, t)) {
        complete = false;
        continue;
      }
      if (__builtin_add_overflow(total, t.bytes, &total)) {
        diags.add(file, w.line, std::string(section),
                  fmt::format("total {} size overflows 64 bits", section));
        total = 0;
      }
      out.push_back(std::move(t));
    }
  };
  tensors(def.inputs, "inputs", r.inputs, r.input_bytes);
  tensors(def.outputs, "outputs", r.outputs, r.output_bytes);

  if (diags.size() != before || !complete) return std::nullopt;
  return r;
}

}  // namespace solbench
