#include "sol/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <stdexcept>
#include <unordered_map>

namespace solbench::sol {

// --- Work ----------------------------------------------------------------------

Work& Work::operator+=(const Work& o) {
  for (size_t i = 0; i < kClasses; ++i) {
    tensor_flops[i] += o.tensor_flops[i];
    cuda_flops[i] += o.cuda_flops[i];
  }
  sfu_ops += o.sfu_ops;
  int_ops += o.int_ops;
  bytes += o.bytes;
  return *this;
}

Work Work::scaled(double k) const {
  Work w = *this;
  for (size_t i = 0; i < kClasses; ++i) {
    w.tensor_flops[i] *= k;
    w.cuda_flops[i] *= k;
  }
  w.sfu_ops *= k;
  w.int_ops *= k;
  w.bytes *= k;
  return w;
}

double Work::tensor_total() const {
  double s = 0;
  for (double x : tensor_flops) s += x;
  return s;
}

double Work::cuda_total() const {
  double s = 0;
  for (double x : cuda_flops) s += x;
  return s;
}

MathClass class_of_dtype(const std::string& d) {
  if (d == "float64") return MathClass::FP64;
  if (d == "float32") return MathClass::FP32;
  if (d == "float16") return MathClass::FP16;
  if (d == "bfloat16") return MathClass::BF16;
  if (d.rfind("float8", 0) == 0) return MathClass::FP8;
  if (d.rfind("float4", 0) == 0) return MathClass::FP4;
  if (d == "int8" || d == "uint8") return MathClass::INT8;
  return MathClass::Count;
}

namespace {

int class_bits(MathClass c) {
  switch (c) {
    case MathClass::FP64: return 64;
    case MathClass::TF32:
    case MathClass::FP32: return 32;
    case MathClass::FP16:
    case MathClass::BF16: return 16;
    case MathClass::FP8:
    case MathClass::INT8: return 8;
    case MathClass::FP4: return 4;
    default: return 1000;
  }
}

// Values one stored element holds: 2 for packed FP4 pairs, else 1.
double values_per_element(const std::string& dtype) { return dtype == "float4_e2m1fn_x2" ? 2 : 1; }

// What a rule sees: the node and the precision each tensor's values came from.
struct Ctx {
  // Narrowest dtype class a tensor's values were derived from through casts,
  // views and same-size elementwise ops: a reference that upcasts bf16 to
  // float32 before a matmul is bounded at the bf16 tensor-core rate, since a
  // kernel may multiply the bf16 values directly (a lower bound stays one).
  std::unordered_map<int64_t, MathClass> origin;

  MathClass origin_of(const TensorRef& t) const {
    auto it = origin.find(t.id);
    MathClass own = class_of_dtype(t.dtype);
    if (it == origin.end()) return own;
    return class_bits(it->second) < class_bits(own) ? it->second : own;
  }

  // Replication: along dim d a tensor's value depends only on i_d mod
  // period[d] (cat([x, x], d) has period x.shape[d]; an expanded size-1 dim,
  // period 1). Only tensors with some period below its size are listed. A
  // kernel computes each distinct value once (see propagate_periods).
  std::unordered_map<int64_t, std::vector<int64_t>> period;
  std::unordered_map<int64_t, int64_t> period_root;  // id -> its storage's base id

  std::vector<int64_t> periods(const TensorRef& t) const {
    auto it = period.find(t.id);
    if (it != period.end() && it->second.size() == t.shape.size()) return it->second;
    return t.shape;
  }
  // Distinct values over all values (1 for a tensor with no replication).
  double distinct_fraction(const TensorRef& t) const {
    auto it = period.find(t.id);
    if (it == period.end() || it->second.size() != t.shape.size()) return 1;
    double f = 1;
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] > 0) f *= double(std::min(t.shape[d], it->second[d])) / double(t.shape[d]);
    return f;
  }
};

struct RuleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using RuleFn = std::function<void(const OpNode&, const Ctx&, Work&, std::string&)>;
struct Rule {
  std::string family;
  RuleFn fn;
};

// --- helpers -------------------------------------------------------------------

TensorRef need(const OpNode& n, const std::string& name) {
  TensorRef t = n.tensor(name);
  if (t.id < 0 && t.shape.empty() && t.dtype.empty())
    throw RuleError("argument '" + name + "' is missing or not a tensor");
  return t;
}

TensorRef first_tensor(const OpNode& n) {
  auto ts = n.tensor_args();
  if (ts.empty()) throw RuleError("no tensor argument");
  return ts.front();
}

TensorRef out0(const OpNode& n) {
  if (n.outputs.empty()) throw RuleError("no output tensor recorded");
  return n.outputs.front();
}

double io_bytes(const OpNode& n) {
  double b = 0;
  for (auto& t : n.tensor_args()) b += t.bytes();
  for (auto& t : n.outputs) b += t.bytes();
  return b;
}

double out_bytes(const OpNode& n) {
  double b = 0;
  for (auto& t : n.outputs) b += t.bytes();
  return b;
}

// The real dtype of a complex one ("complex64" -> "float32"); empty otherwise.
std::string complex_part(const std::string& dtype) {
  if (dtype == "complex64") return "float32";
  if (dtype == "complex128") return "float64";
  if (dtype == "complex32") return "float16";
  return "";
}

// CUDA-core FLOPs in the class of `dtype`; integer and bool work is int_ops.
// Complex dtypes count two real operations per complex one (exact for adds,
// a lower bound for products: a complex multiply is 6 real FLOPs).
void add_flops(Work& w, const std::string& dtype, double flops) {
  if (std::string re = complex_part(dtype); !re.empty()) {
    add_flops(w, re, 2 * flops);
    return;
  }
  MathClass c = class_of_dtype(dtype);
  switch (c) {
    case MathClass::FP64:
    case MathClass::FP32:
    case MathClass::FP16:
    case MathClass::BF16: w.cuda_flops[size_t(c)] += flops; break;
    case MathClass::FP8:
    case MathClass::FP4: w.cuda_flops[size_t(MathClass::FP16)] += flops; break;  // packed half math
    default: w.int_ops += flops; break;
  }
}

// Special-function results; 16-bit dtypes have packed (x2) SFU instructions.
void add_sfu(Work& w, const std::string& dtype, double ops) {
  if (std::string re = complex_part(dtype); !re.empty()) {
    add_sfu(w, re, 2 * ops);
    return;
  }
  MathClass c = class_of_dtype(dtype);
  w.sfu_ops += (c == MathClass::FP16 || c == MathClass::BF16) ? ops / 2 : ops;
}

MathClass wider(MathClass a, MathClass b) { return class_bits(a) >= class_bits(b) ? a : b; }

// FP32 operands are bounded at the 16-bit tensor rate, not TF32: the default
// tolerances (1e-2) admit a kernel that multiplies in bf16/fp16, so the TF32
// rate would not be a lower bound (SOLAR makes the same choice).
MathClass tensor_core_class(MathClass c) {
  if (c == MathClass::FP32 || c == MathClass::Count) return MathClass::FP16;
  return c;
}

int64_t int_arg(const OpNode& n, const std::string& name, int64_t dflt) {
  if (!n.args.contains(name) || !n.args[name].is_number_integer()) return dflt;
  return n.args[name].get<int64_t>();
}

bool bool_arg(const OpNode& n, const std::string& name) {
  return n.args.contains(name) && n.args[name].is_boolean() && n.args[name].get<bool>();
}

void add_matmul(Work& w, const Ctx& c, const TensorRef& a, const TensorRef& b, double macs,
                std::string& note) {
  // The narrower operand sets the rate: a kernel may convert the other operand
  // (e.g. softmax probabilities to bf16 before PV), and the faster rate keeps
  // the bound a lower bound.
  MathClass ca = c.origin_of(a), cb = c.origin_of(b);
  if (ca == MathClass::Count) ca = cb;
  if (cb == MathClass::Count) cb = ca;
  MathClass cls = tensor_core_class(wider(ca, cb) == ca ? cb : ca);
  w.tensor_flops[size_t(cls)] += 2 * macs;
  note = std::string("tensor cores ") + math_class_name(cls);
}

// --- rule families -------------------------------------------------------------

// Elementwise with `flops` CUDA-core FLOPs and `sfu` special-function results
// per output element.
RuleFn elementwise(double flops, double sfu) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    TensorRef o = out0(n);
    add_flops(w, o.dtype, flops * o.numel());
    if (sfu > 0) add_sfu(w, o.dtype, sfu * o.numel());
    w.bytes += io_bytes(n);
  };
}

// Division: one multiply per element, one reciprocal per divisor element (a
// divisor broadcast along rows costs one reciprocal per row; scalars none).
void div_rule(const OpNode& n, const Ctx&, Work& w, std::string&) {
  TensorRef o = out0(n);
  add_flops(w, o.dtype, o.numel());
  TensorRef d = n.tensor("other");
  if (d.id >= 0 || !d.shape.empty()) add_sfu(w, o.dtype, std::min(d.numel(), o.numel()));
  w.bytes += io_bytes(n);
}

void pow_rule(const OpNode& n, const Ctx&, Work& w, std::string& note) {
  TensorRef o = out0(n);
  double e = NAN;
  if (n.args.contains("exponent") && n.args["exponent"].is_number()) e = n.args["exponent"].get<double>();
  double flops = 2, sfu = 2;  // exp2(y * log2(x))
  if (e == 0 || e == 1) flops = 0, sfu = 0;
  else if (e == 2 || e == -2) flops = 1, sfu = (e < 0);
  else if (e == 3) flops = 2, sfu = 0;
  else if (e == 0.5 || e == -0.5 || e == -1) flops = 0, sfu = 1;
  note = std::isnan(e) ? "tensor exponent" : "exponent " + std::to_string(e);
  add_flops(w, o.dtype, flops * o.numel());
  add_sfu(w, o.dtype, sfu * o.numel());
  w.bytes += io_bytes(n);
}

// Reductions: `per_in` FLOPs per input element, `per_out_sfu` per output.
RuleFn reduction(double per_in, double per_out, double per_out_sfu, double per_in_sfu = 0) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    TensorRef in = first_tensor(n);
    TensorRef o = n.outputs.empty() ? TensorRef{} : n.outputs.front();
    double outs = n.outputs.empty() ? 1 : o.numel();
    add_flops(w, in.dtype, per_in * in.numel() + per_out * outs);
    add_sfu(w, in.dtype, per_out_sfu * outs + per_in_sfu * in.numel());
    w.bytes += io_bytes(n);
  };
}

// Normalisations over rows: FLOPs per element, one rsqrt per row (or group).
RuleFn normalisation(double per_elem, std::function<double(const OpNode&, const TensorRef&)> rows) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    TensorRef in = first_tensor(n);
    add_flops(w, in.dtype, per_elem * in.numel());
    add_sfu(w, in.dtype, rows(n, in));
    w.bytes += io_bytes(n);
  };
}

double norm_rows_by_shape(const OpNode& n, const TensorRef& in) {
  double inner = 1;
  for (const char* key : {"normalized_shape", "normalized_shape_"}) {
    if (n.args.contains(key) && n.args[key].is_array())
      for (auto& d : n.args[key]) inner *= d.is_number() ? d.get<double>() : 1;
  }
  if (inner <= 1 && !in.shape.empty()) inner = double(in.shape.back());
  return inner > 0 ? in.numel() / inner : in.numel();
}

double softmax_rows(const OpNode& n, const TensorRef& in) {
  if (in.shape.empty()) return 1;
  int64_t dim = int_arg(n, "dim", -1);
  int64_t r = int64_t(in.shape.size());
  if (dim < 0) dim += r;
  if (dim < 0 || dim >= r) throw RuleError("dim out of range");
  return in.numel() / std::max<double>(1, double(in.shape[size_t(dim)]));
}

// softmax: max, subtract, exp, sum, scale (4 FLOPs + 1 exp per element) and one
// reciprocal (or log) per row.
void softmax_rule(const OpNode& n, const Ctx&, Work& w, std::string&) {
  TensorRef in = first_tensor(n);
  add_flops(w, in.dtype, 4 * in.numel());
  add_sfu(w, in.dtype, in.numel() + softmax_rows(n, in));
  w.bytes += io_bytes(n);
}

// Replicated matmul operands (Ctx::period). An operand whose contraction dim
// repeats with period p < K (a = [x, x] along K) lets a kernel fold the other
// operand's K rows first: [x, x] W^T = x (W1 + W2)^T, p of the K MACs per
// output. Rows of `a` (or columns of `b`) that repeat give equal output rows
// (columns), computed once. Returns the fraction of the written MACs a kernel
// needs. The fold's adds ((K - p) per folded column) are not counted: a kernel
// that does not fold needs none, and each term must bound every kernel.
double replicated_matmul_fraction(const OpNode& n, const Ctx& c, const TensorRef& a,
                                  const TensorRef& b, std::string& note) {
  static const std::set<std::string> forms = {"mm", "bmm", "matmul", "_int_mm", "addmm",
                                              "baddbmm", "addbmm", "linear"};
  if (!forms.count(n.op) || a.shape.size() < 2 || b.shape.size() < 2) return 1;
  const bool lin = n.op == "linear";  // weight [N, K]; else b is [..., K, N]
  const size_t ra = a.shape.size(), rb = b.shape.size();
  std::vector<int64_t> pa = c.periods(a), pb = c.periods(b);
  auto frac = [](int64_t size, int64_t p) { return size > 0 ? double(std::min(size, p)) / double(size) : 1.0; };
  double k = frac(a.shape[ra - 1], std::min(pa[ra - 1], lin ? pb[rb - 1] : pb[rb - 2]));
  double m = 1;
  if (lin)
    for (size_t d = 0; d + 1 < ra; ++d) m *= frac(a.shape[d], pa[d]);  // every leading dim is a row dim
  else
    m = frac(a.shape[ra - 2], pa[ra - 2]);
  double nn = lin ? frac(b.shape[0], pb[0]) : frac(b.shape[rb - 1], pb[rb - 1]);
  double f = k * m * nn;
  if (f < 1) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ", replicated operands: %.4g of the MACs (K %.4g, rows %.4g, cols %.4g)",
                  f, k, m, nn);
    note += buf;
  }
  return f;
}

void matmul_rule(const OpNode& n, const Ctx& c, Work& w, std::string& note) {
  const std::string& op = n.op;
  TensorRef o = out0(n);
  TensorRef a, b;
  double macs = 0;
  if (op == "mm" || op == "bmm" || op == "matmul" || op == "_int_mm") {
    a = need(n, "self");
    b = need(n, op == "matmul" ? "other" : "mat2");
    macs = o.numel() * double(a.shape.empty() ? 1 : a.shape.back());
    if (a.shape.size() == 1 && b.shape.size() == 1) macs = a.numel();
  } else if (op == "addmm" || op == "addmv") {
    a = need(n, op == "addmm" ? "mat1" : "mat");
    b = need(n, op == "addmm" ? "mat2" : "vec");
    macs = o.numel() * double(a.shape.back());
    add_flops(w, o.dtype, o.numel());  // bias
  } else if (op == "baddbmm" || op == "addbmm") {
    a = need(n, "batch1");
    b = need(n, "batch2");
    macs = a.numel() * double(b.shape.back());
    add_flops(w, o.dtype, o.numel());
  } else if (op == "mv" || op == "dot" || op == "vdot") {
    a = need(n, "self");
    b = need(n, op == "mv" ? "vec" : "tensor");
    macs = a.numel();
  } else if (op == "linear") {
    a = need(n, "input");
    b = need(n, "weight");
    macs = o.numel() * double(a.shape.back());
    if (n.tensor("bias").id >= 0) add_flops(w, o.dtype, o.numel());
  } else if (op == "_scaled_mm") {
    a = need(n, "self");
    b = need(n, "mat2");
    // Packed FP4 (float4_e2m1fn_x2) holds two values per element: K is twice
    // the stored last dim. With 1x16 block scales (NVFP4) the tensor cores
    // apply the scales inside the MMA (block-scaled MMA); the 2 FLOPs per
    // output below stand for the epilogue's per-tensor/row scales.
    macs = o.numel() * double(a.shape.back()) * values_per_element(a.dtype);
    add_flops(w, "float32", 2 * o.numel());  // scales
  } else {
    throw RuleError("no matmul form for " + op);
  }
  std::string rep;
  macs *= replicated_matmul_fraction(n, c, a, b, rep);
  add_matmul(w, c, a, b, macs, note);
  note += rep;
  w.bytes += io_bytes(n);
}

// einsum: multiply-accumulates = product of every index's size (2 operands);
// other operand counts are left uncosted rather than guessed.
void einsum_rule(const OpNode& n, const Ctx& c, Work& w, std::string& note) {
  if (!n.args.contains("equation") || !n.args["equation"].is_string()) throw RuleError("no equation");
  std::string eq = n.args["equation"].get<std::string>();
  auto ts = n.tensor_args();
  if (ts.size() != 2) throw RuleError("einsum with " + std::to_string(ts.size()) + " operands");
  std::string lhs = eq.substr(0, eq.find("->"));
  std::string spec[2] = {lhs.substr(0, lhs.find(',')), lhs.substr(lhs.find(',') + 1)};
  std::map<char, int64_t> size;
  for (int k = 0; k < 2; ++k) {
    std::string s;
    for (char ch : spec[k])
      if (std::isalpha(static_cast<unsigned char>(ch))) s += ch;
    if (s.find("...") != std::string::npos || s.size() != ts[k].shape.size())
      throw RuleError("einsum equation does not match operand rank");
    for (size_t i = 0; i < s.size(); ++i) size[s[i]] = std::max(size[s[i]], ts[k].shape[i]);
  }
  double macs = 1;
  for (auto& [ch, s] : size) macs *= double(s);
  add_matmul(w, c, ts[0], ts[1], macs, note);
  w.bytes += io_bytes(n);
}

void conv_rule(const OpNode& n, const Ctx& c, Work& w, std::string& note) {
  TensorRef in = need(n, "input");
  TensorRef wt = need(n, "weight");
  TensorRef o = out0(n);
  if (wt.shape.size() < 3) throw RuleError("weight rank below 3");
  double kernel = 1;
  for (size_t i = 2; i < wt.shape.size(); ++i) kernel *= double(wt.shape[i]);
  bool transposed = bool_arg(n, "transposed");
  // weight: [Cout, Cin/groups, k...]; transposed: [Cin, Cout/groups, k...]
  double macs = (transposed ? in.numel() : o.numel()) * double(wt.shape[1]) * kernel;
  add_matmul(w, c, in, wt, macs, note);
  if (n.tensor("bias").id >= 0) add_flops(w, o.dtype, o.numel());
  note += transposed ? ", transposed" : "";
  w.bytes += io_bytes(n);
}

// Attention: QK^T and PV on tensor cores over the kept (query, key) pairs;
// causal keeps sum_i min(i+1, S) of the L*S pairs (top-left aligned as torch);
// 4 FLOPs and one exp per score, one reciprocal per query row.
void attention_rule(const OpNode& n, const Ctx& c, Work& w, std::string& note) {
  TensorRef q = need(n, "query"), k = need(n, "key"), v = need(n, "value");
  bool bhld = n.op.find("flash_attention_forward") == std::string::npos &&
              n.op.find("efficient_attention_forward") == std::string::npos;
  if (q.shape.size() < 3 || k.shape.size() < 3) throw RuleError("query/key rank below 3");
  size_t r = q.shape.size();
  double L, S, D = double(q.shape.back()), Dv = double(v.shape.back()), heads_batch;
  if (bhld) {
    L = double(q.shape[r - 2]);
    S = double(k.shape[k.shape.size() - 2]);
    heads_batch = q.numel() / (L * D);
  } else {  // [B, L, H, D]
    L = double(q.shape[1]);
    S = double(k.shape[1]);
    heads_batch = q.numel() / (L * D);
  }
  bool causal = bool_arg(n, "is_causal");
  double pairs = L * S;
  if (causal) {
    double full = std::min(L, S);  // rows i < S keep i+1 keys; the rest keep S
    pairs = full * (full + 1) / 2 + (L - full) * S;
  }
  double scores = heads_batch * pairs;
  add_matmul(w, c, q, k, scores * (D + Dv), note);
  add_flops(w, "float32", 4 * scores);
  w.sfu_ops += scores + heads_batch * L;
  TensorRef mask = n.tensor("attn_mask");
  if (mask.id < 0) mask = n.tensor("attn_bias");
  if (mask.id >= 0) add_flops(w, "float32", scores);
  note += causal ? ", causal" : "";
  w.bytes += io_bytes(n);
}

// Gathers and scatters move what they touch: the index, the gathered values
// (read and written); `adds` FLOPs per moved element for accumulating forms.
RuleFn gather_like(double adds) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    double moved = 0, idx_bytes = 0, moved_bytes = 0;
    std::string dtype;
    // Index tensors: integer arguments other than the data (an integer
    // tensor gathered or scattered into is counted with the moved values).
    static const std::set<std::string> data_args = {"self", "input", "weight", "src", "source", "values"};
    for (auto& [k, v] : n.args.items()) {
      if (!(v.is_object() && v.contains("shape")) && !v.is_array()) continue;
      if (data_args.count(k)) continue;
      std::vector<TensorRef> ts;
      OpNode tmp;
      tmp.args = json::object({{k, v}});
      ts = tmp.tensor_args();
      for (auto& t : ts)
        if (class_of_dtype(t.dtype) == MathClass::Count && t.dtype != "bool") idx_bytes += t.bytes();
    }
    if (n.op.find("scatter") != std::string::npos || n.op.find("index_put") != std::string::npos ||
        n.op.find("index_add") != std::string::npos || n.op.find("index_copy") != std::string::npos ||
        n.op == "put" || n.op == "put_" || n.op.find("masked_scatter") != std::string::npos) {
      TensorRef src = n.tensor("src");
      if (src.id < 0) src = n.tensor("source");
      if (src.id < 0) src = n.tensor("values");
      TensorRef index = n.tensor("index");
      if (src.id < 0 && n.has("value") && index.id >= 0) {
        // scatter_(dim, index, value): a scalar written at every index
        // (one_hot on the CPU): the written elements only.
        TensorRef self = need(n, "self");
        moved = index.numel();
        moved_bytes = moved * dtype_bytes(self.dtype);
        dtype = self.dtype;
      } else {
        if (src.id < 0) throw RuleError("no source tensor");
        moved = src.numel();
        moved_bytes = 2 * src.bytes();
        dtype = src.dtype;
      }
    } else {
      TensorRef o = out0(n);
      moved = o.numel();
      moved_bytes = 2 * out_bytes(n);
      dtype = o.dtype;
    }
    w.int_ops += moved;  // address computation
    if (adds > 0) add_flops(w, dtype, adds * moved);
    w.bytes += idx_bytes + moved_bytes;
  };
}

// Selection and sorting: at least one compare per input element.
void select_rule(const OpNode& n, const Ctx&, Work& w, std::string&) {
  TensorRef in = first_tensor(n);
  add_flops(w, in.dtype, in.numel());
  w.bytes += io_bytes(n);
}

// Copies and layout changes: traffic only; a cast adds one conversion per element.
RuleFn copy_like(bool converts) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    if (converts) {
      TensorRef o = out0(n);
      auto ins = n.tensor_args();
      if (!ins.empty() && ins.front().dtype != o.dtype) add_flops(w, o.dtype, o.numel());
    }
    w.bytes += io_bytes(n);
  };
}

// Factories: write the output (empty* writes nothing).
void factory_rule(const OpNode& n, const Ctx&, Work& w, std::string&) { w.bytes += io_bytes(n); }
// zeros_like(x), x.new_full(...): write the output; x is not read.
void shape_only_factory_rule(const OpNode& n, const Ctx&, Work& w, std::string&) { w.bytes += out_bytes(n); }
void iota_rule(const OpNode& n, const Ctx&, Work& w, std::string&) {
  TensorRef o = out0(n);
  w.int_ops += o.numel();
  w.bytes += out_bytes(n);
}
void zero_rule(const OpNode&, const Ctx&, Work&, std::string&) {}

// A list argument of ints (kernel_size, output_size, dim); empty when absent.
std::vector<int64_t> int_list(const OpNode& n, const std::string& name) {
  std::vector<int64_t> v;
  if (!n.has(name)) return v;
  const json& a = n.args[name];
  if (a.is_number_integer()) return {a.get<int64_t>()};
  if (!a.is_array()) return v;
  for (auto& x : a) {
    if (!x.is_number_integer()) throw RuleError("argument '" + name + "' holds a non-integer");
    v.push_back(x.get<int64_t>());
  }
  return v;
}

// FFTs (_fft_r2c, _fft_c2r, _fft_c2c). A complex transform of N points costs
// the conventional 5 N log2 N real FLOPs (radix-2: N/2 log2 N butterflies of
// one complex multiply, 6 FLOPs, and two complex adds, 4); a transform with
// real input (r2c) or real output (c2r) costs half, 2.5 N log2 N. Over several
// dims N is the product of their lengths (5 N log2 N = sum over the dims of the
// 1-D transforms). Normalisation adds one multiply per output value; bytes are
// the input and the output once.
void fft_rule(const OpNode& n, const Ctx&, Work& w, std::string& note) {
  TensorRef in = need(n, "self");
  TensorRef o = out0(n);
  bool real_side = n.op == "_fft_r2c" || n.op == "_fft_c2r";
  // The tensor whose dims have the full transform length: the real input of
  // r2c, the real output of c2r (its input is one-sided), either for c2c.
  const TensorRef& full = n.op == "_fft_c2r" ? o : in;
  std::vector<int64_t> dims = int_list(n, "dim");
  if (dims.empty()) throw RuleError("no transform dims");
  double N = 1;
  const int64_t r = int64_t(full.shape.size());
  for (int64_t d : dims) {
    if (d < 0) d += r;
    if (d < 0 || d >= r) throw RuleError("transform dim out of range");
    N *= double(full.shape[size_t(d)]);
  }
  double transforms = N > 0 ? full.numel() / N : 0;
  double flops = N > 1 ? (real_side ? 2.5 : 5.0) * N * std::log2(N) * transforms : 0;
  // FLOPs in the real dtype of the computation.
  std::string real = n.op == "_fft_r2c" ? in.dtype : n.op == "_fft_c2r" ? o.dtype : complex_part(in.dtype);
  if (real.empty()) real = "float32";
  add_flops(w, real, flops);
  if (int_arg(n, "normalization", 0) != 0) add_flops(w, o.dtype, o.numel());
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f transforms of %.0f points", transforms, N);
  note = buf;
  w.bytes += io_bytes(n);
}

// Spatial dims of a pooling or resampling operator, from its name (…1d/2d/3d).
int spatial_dims(const std::string& op) {
  for (int d = 3; d >= 1; --d)
    if (op.find(std::to_string(d) + "d") != std::string::npos) return d;
  throw RuleError("cannot tell the spatial dims of " + op);
}

// Window elements of a pooling operator: the product of kernel_size over the
// spatial dims (a one-element kernel_size applies to every dim).
double window_elems(const OpNode& n) {
  std::vector<int64_t> k = int_list(n, "kernel_size");
  if (k.empty()) throw RuleError("no kernel_size");
  int dims = spatial_dims(n.op);
  double K = 1;
  for (int i = 0; i < dims; ++i) K *= double(k[std::min<size_t>(size_t(i), k.size() - 1)]);
  return K;
}

// Pooling with a fixed window (max_pool*, avg_pool*): one comparison (max) or
// add (avg) per window element per output, K per output (max: K-1 compares and
// the index select; avg: K-1 adds and the scale). Padding and dilation change
// neither. Adaptive pools tile their input: one operation per input element.
void pool_rule(const OpNode& n, const Ctx&, Work& w, std::string& note) {
  TensorRef in = first_tensor(n);
  TensorRef o = out0(n);
  double ops = 0;
  if (n.op.find("adaptive") != std::string::npos) {
    ops = std::max(in.numel(), o.numel());
    note = "adaptive: one operation per input element";
  } else {
    double K = window_elems(n);
    ops = K * o.numel();
    note = "window of " + std::to_string(int64_t(K));
  }
  add_flops(w, o.dtype, ops);
  w.bytes += io_bytes(n);
}

// Pooling backward: every gradient value of the output is routed into its
// window: K adds per grad_output element for avg, one add per grad_output
// element for max (to the arg-max position); the grad_input is written once.
void pool_backward_rule(const OpNode& n, const Ctx&, Work& w, std::string&) {
  TensorRef g = need(n, "grad_output");
  double per = n.op.find("avg") != std::string::npos ? window_elems(n) : 1;
  add_flops(w, g.dtype, per * g.numel());
  if (n.op.find("max") != std::string::npos) w.int_ops += g.numel();  // index reads
  w.bytes += io_bytes(n);
}

// Resampling (upsample_*, interpolate). Each output element is a weighted sum
// of input neighbours. Evaluated separably, the last pass alone does at least
// one 2-tap lerp per output element, a + t (b - a) = 3 FLOPs (linear, bilinear,
// trilinear; earlier passes run on fewer rows when upscaling and are not
// counted), or a 4-tap sum, 1 multiply + 3 FMAs = 7 FLOPs (bicubic); nearest
// does no arithmetic. Every mode computes one source address per output element
// (integer op). Backward forms scatter each grad_output element with the same
// work. Bytes: input and output once.
RuleFn resample(double flops) {
  return [=](const OpNode& n, const Ctx&, Work& w, std::string&) {
    TensorRef o = out0(n);
    TensorRef in = first_tensor(n);
    double per = n.op.find("backward") != std::string::npos ? in.numel() : o.numel();
    add_flops(w, o.dtype, flops * per);
    w.int_ops += per;
    w.bytes += io_bytes(n);
  };
}

struct Catalogue {
  std::unordered_map<std::string, Rule> rules;
  std::map<std::string, std::vector<std::string>> families;

  void add(const std::string& family, std::initializer_list<const char*> ops, RuleFn fn) {
    for (const char* op : ops) {
      rules[op] = Rule{family, fn};
      families[family].push_back(op);
    }
  }
};

const Catalogue& catalogue() {
  static const Catalogue cat = [] {
    Catalogue c;
    c.add("view", {"view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "alias",
                   "detach", "detach_", "expand", "expand_as", "permute", "transpose", "transpose_",
                   "t", "t_", "numpy_T", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "select",
                   "slice", "narrow", "split", "split_with_sizes", "tensor_split", "chunk", "unbind",
                   "view_as", "flatten", "unflatten", "movedim", "moveaxis", "diagonal", "unfold",
                   "view_as_real", "view_as_complex", "lift_fresh", "_local_scalar_dense", "empty",
                   "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
                   "set_", "item", "is_nonzero", "_assert_async", "broadcast_tensors", "conj",
                   "resolve_conj", "resolve_neg", "_conj", "real", "imag", "mT", "mH", "adjoint",
                   "_assert_tensor_metadata", "sym_size", "sym_stride", "sym_numel", "dim",
                   "size", "stride", "is_same_size", "_to_dim_order_copy_view", "align_as",
                   "as_strided_", "squeeze_copy_view", "_nested_view_from_buffer", "lift",
                   "_shape_as_tensor", "record_stream", "_has_compatible_shallow_copy_type"},
            zero_rule);
    c.add("matmul", {"mm", "bmm", "addmm", "addmv", "baddbmm", "addbmm", "mv", "dot", "vdot",
                     "matmul", "linear", "_scaled_mm", "_int_mm"},
          matmul_rule);
    c.add("einsum", {"einsum"}, einsum_rule);
    c.add("convolution", {"convolution", "_convolution", "conv1d", "conv2d", "conv3d",
                          "cudnn_convolution", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d", "convolution_overrideable", "mkldnn_convolution",
                          "_convolution_mode", "_slow_conv2d_forward", "slow_conv3d_forward",
                          "_nnpack_spatial_convolution", "thnn_conv2d"},
          conv_rule);
    c.add("attention", {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                        "_scaled_dot_product_attention_math", "_flash_attention_forward",
                        "_efficient_attention_forward", "_scaled_dot_product_flash_attention_for_cpu"},
          attention_rule);
    c.add("elementwise", {"add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "neg", "neg_",
                          "abs", "abs_", "relu", "relu_", "maximum", "minimum", "fmax", "fmin",
                          "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "square",
                          "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "threshold",
                          "threshold_", "positive", "relu6", "copysign", "heaviside"},
          elementwise(1, 0));
    c.add("elementwise", {"clamp", "clamp_", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_",
                          "nan_to_num", "nan_to_num_", "lerp", "lerp_", "addcmul", "addcmul_",
                          "remainder", "remainder_", "fmod", "fmod_", "floor_divide", "floor_divide_",
                          "xlogy", "hypot", "logaddexp_fast_placeholder", "prelu", "_prelu_kernel",
                          "rrelu", "threshold_backward", "hardtanh_backward", "leaky_relu_backward"},
          elementwise(2, 0));
    c.add("elementwise", {"hardsigmoid", "hardswish", "hardsigmoid_", "hardswish_", "sigmoid_backward",
                          "tanh_backward", "hardswish_backward", "hardsigmoid_backward", "mse_loss_backward"},
          elementwise(3, 0));
    c.add("compare/select", {"eq", "eq_", "ne", "ne_", "lt", "lt_", "le", "le_", "gt", "gt_", "ge",
                             "ge_", "logical_and", "logical_or", "logical_xor", "logical_not",
                             "logical_and_", "logical_or_", "bitwise_and", "bitwise_or", "bitwise_xor",
                             "bitwise_not", "bitwise_and_", "bitwise_or_", "bitwise_left_shift",
                             "bitwise_right_shift", "__and__", "__or__", "__xor__", "__lshift__",
                             "__rshift__", "isnan", "isinf", "isfinite", "isneginf", "isposinf",
                             "signbit", "where", "masked_fill", "masked_fill_", "tril", "triu",
                             "tril_", "triu_", "isin", "eq_scalar"},
          [](const OpNode& n, const Ctx&, Work& w, std::string&) {
            TensorRef o = out0(n);
            w.int_ops += o.numel();
            w.bytes += io_bytes(n);
          });
    c.add("division", {"div", "div_", "true_divide", "reciprocal_placeholder"}, div_rule);
    c.add("transcendental", {"exp", "exp_", "log", "log_", "log2", "exp2", "log10", "sqrt",
                             "sqrt_", "rsqrt", "rsqrt_", "reciprocal", "reciprocal_", "tanh", "tanh_",
                             "sin", "sin_", "cos", "cos_", "erf", "erf_", "erfc", "expm1", "log1p",
                             "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh"},
          elementwise(1, 1));
    c.add("transcendental", {"sigmoid", "sigmoid_", "elu", "elu_", "selu", "celu", "logit", "tan",
                             "atan2", "erfinv", "digamma", "lgamma", "softshrink_placeholder"},
          elementwise(2, 1));
    c.add("transcendental", {"silu", "silu_", "glu"}, elementwise(3, 1));
    c.add("transcendental", {"softplus", "logaddexp", "logaddexp2"}, elementwise(3, 2));
    c.add("transcendental", {"mish", "mish_"}, elementwise(5, 3));
    c.add("transcendental", {"gelu", "gelu_"}, elementwise(7, 1));
    c.add("transcendental", {"silu_backward", "elu_backward"}, elementwise(5, 1));
    c.add("transcendental", {"gelu_backward", "softplus_backward", "mish_backward"}, elementwise(8, 2));
    c.add("transcendental", {"pow", "pow_", "float_power"}, pow_rule);
    c.add("reduction", {"sum", "mean", "nansum", "nanmean", "prod", "amax", "amin", "aminmax",
                        "max", "min", "argmax", "argmin", "any", "all", "count_nonzero",
                        "_softmax_backward_data_placeholder"},
          reduction(1, 1, 0));
    c.add("reduction", {"var", "std", "var_mean", "std_mean"}, reduction(3, 2, 1));
    c.add("reduction", {"norm", "linalg_vector_norm", "frobenius_norm", "linalg_norm"}, reduction(2, 0, 1));
    c.add("reduction", {"logsumexp"}, reduction(3, 0, 1, 1));
    c.add("reduction", {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"}, reduction(3, 1, 0));
    c.add("reduction", {"nll_loss_forward", "nll_loss", "nll_loss2d_forward"}, reduction(0, 1, 0));
    c.add("softmax", {"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"}, softmax_rule);
    c.add("softmax", {"_softmax_backward_data", "_log_softmax_backward_data"}, elementwise(3, 0));
    c.add("normalisation", {"native_layer_norm", "layer_norm"}, normalisation(7, norm_rows_by_shape));
    c.add("normalisation", {"rms_norm", "_fused_rms_norm"}, normalisation(4, norm_rows_by_shape));
    c.add("normalisation", {"native_group_norm", "group_norm"},
          normalisation(7, [](const OpNode& n, const TensorRef& in) {
            double groups = double(int_arg(n, "group", int_arg(n, "num_groups", 1)));
            double batch = in.shape.empty() ? 1 : double(in.shape[0]);
            return batch * groups;
          }));
    c.add("normalisation", {"native_batch_norm", "_native_batch_norm_legit",
                            "_native_batch_norm_legit_no_training", "batch_norm", "instance_norm"},
          normalisation(7, [](const OpNode&, const TensorRef& in) {
            return in.shape.size() > 1 ? double(in.shape[1]) : 1.0;
          }));
    c.add("normalisation", {"native_layer_norm_backward", "native_group_norm_backward",
                            "native_batch_norm_backward"},
          normalisation(10, [](const OpNode&, const TensorRef&) { return 0.0; }));
    c.add("scan", {"cumsum", "cumsum_", "cumprod", "cumprod_", "cummax", "cummin"}, reduction(1, 0, 0));
    c.add("scan", {"logcumsumexp"}, reduction(3, 0, 0, 2));
    c.add("gather/scatter", {"gather", "index_select", "index", "embedding", "take",
                             "take_along_dim", "masked_select", "index_put", "index_put_",
                             "index_copy", "index_copy_", "scatter", "scatter_", "masked_scatter",
                             "masked_scatter_", "put", "put_", "_index_put_impl_", "_unsafe_index",
                             "_embedding_bag", "embedding_bag", "select_scatter", "slice_scatter",
                             "_unsafe_index_put", "diagonal_scatter"},
          gather_like(0));
    c.add("gather/scatter", {"scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
                             "index_add", "index_add_", "embedding_dense_backward", "index_reduce",
                             "index_reduce_"},
          gather_like(1));
    c.add("sort/select", {"topk", "sort", "argsort", "msort", "kthvalue", "median", "nanmedian",
                          "mode", "unique", "_unique", "_unique2", "unique_consecutive",
                          "unique_dim", "nonzero", "nonzero_static", "searchsorted", "bucketize",
                          "bincount", "histc", "one_hot"},
          select_rule);
    c.add("copy/cast", {"_to_copy", "to", "type_as", "_copy_from", "_copy_from_and_resize",
                        "_to_dim_order_copy"},
          copy_like(true));
    c.add("copy/cast", {"copy", "copy_", "clone", "contiguous", "lift_fresh_copy", "cat", "concat",
                        "concatenate", "stack", "hstack", "vstack", "constant_pad_nd", "pad",
                        "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
                        "replication_pad2d", "repeat", "tile", "roll", "flip", "fliplr", "flipud",
                        "repeat_interleave", "expand_copy", "permute_copy", "view_copy",
                        "transpose_copy", "t_copy", "unsqueeze_copy", "squeeze_copy", "slice_copy",
                        "select_copy", "alias_copy", "detach_copy", "unbind_copy", "split_copy",
                        "split_with_sizes_copy", "as_strided_copy", "_unsafe_view_copy",
                        "diag_embed", "block_diag", "im2col", "col2im", "pixel_shuffle",
                        "pixel_unshuffle", "channel_shuffle", "_unsafe_split"},
          copy_like(false));
    c.add("fft", {"_fft_r2c", "_fft_c2r", "_fft_c2c"}, fft_rule);
    c.add("pooling", {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
                      "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d",
                      "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                      "adaptive_avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                      "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"},
          pool_rule);
    c.add("pooling", {"max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward",
                      "avg_pool2d_backward", "avg_pool3d_backward"},
          pool_backward_rule);
    c.add("resample", {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
                       "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
                       "_upsample_nearest_exact3d", "upsample_nearest1d_backward",
                       "upsample_nearest2d_backward", "upsample_nearest3d_backward"},
          resample(0));
    c.add("resample", {"upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d",
                       "_upsample_bilinear2d_aa", "upsample_linear1d_backward",
                       "upsample_bilinear2d_backward", "upsample_trilinear3d_backward"},
          resample(3));
    c.add("resample", {"upsample_bicubic2d", "_upsample_bicubic2d_aa", "upsample_bicubic2d_backward"},
          resample(7));
    c.add("factory", {"zeros", "ones", "full", "scalar_tensor", "fill", "fill_", "zero_", "tensor",
                      "rand", "randn", "randint", "normal", "normal_", "uniform_", "bernoulli",
                      "bernoulli_", "randperm", "eye", "dropout", "native_dropout",
                      "masked_fill_scalar_placeholder"},
          factory_rule);
    c.add("factory", {"zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full",
                      "rand_like", "randn_like", "randint_like"},
          shape_only_factory_rule);
    c.add("factory", {"arange", "linspace", "logspace"}, iota_rule);
    return c;
  }();
  return cat;
}

// Operators that use only an input's shape, dtype and device (zeros_like(x),
// x.new_zeros(...)): they do not read its values.
bool is_shape_only(const std::string& op) {
  static const std::set<std::string> ops = {"zeros_like", "ones_like", "empty_like", "full_like",
                                            "rand_like", "randn_like", "randint_like", "new_zeros",
                                            "new_ones", "new_empty", "new_full", "new_empty_strided"};
  return ops.count(op) > 0;
}

bool is_view_op(const std::string& op) {
  auto it = catalogue().rules.find(op);
  return it != catalogue().rules.end() && it->second.family == "view";
}

bool is_gather_source(const OpNode& n, const std::string& arg) {
  static const std::set<std::string> ops = {"gather", "index_select", "index", "embedding", "take",
                                            "take_along_dim", "_unsafe_index", "embedding_bag",
                                            "_embedding_bag"};
  if (!ops.count(n.op)) return false;
  return arg == "self" || arg == "input" || arg == "weight";
}

// In-place operators ("add_", "_index_put_impl_"; not "__and__").
bool is_in_place(const std::string& op) {
  return op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_';
}

// Bytes an in-place operator writes into its destination `self` when it only
// writes (the old values are not read): the destination view for copies and
// fills, the scattered values for index_put_/index_copy_/scatter_/put_. Returns
// nullopt for read-modify-write operators (add_, index_add_, accumulating
// index_put_, masked writes whose extent depends on values).
std::optional<double> pure_write_bytes(const OpNode& n, const TensorRef& self) {
  static const std::set<std::string> whole = {"copy_", "fill_", "zero_", "normal_", "uniform_",
                                              "bernoulli_", "random_", "exponential_"};
  if (whole.count(n.op)) return self.bytes();
  if (n.op == "index_put_" || n.op == "_index_put_impl_") {
    if (bool_arg(n, "accumulate")) return std::nullopt;
    TensorRef v = n.tensor("values");
    return v.id >= 0 || !v.shape.empty() ? std::optional<double>(v.numel() * dtype_bytes(self.dtype)) : std::nullopt;
  }
  if (n.op == "index_copy_" || n.op == "put_" || n.op == "scatter_") {
    if (n.has("reduce") || bool_arg(n, "accumulate")) return std::nullopt;
    TensorRef v = n.tensor(n.op == "scatter_" ? "src" : "source");
    if (v.id < 0 && v.shape.empty() && n.op == "scatter_") v = n.tensor("index");  // scatter_(value)
    if (v.id < 0 && v.shape.empty()) return std::nullopt;
    return v.numel() * dtype_bytes(self.dtype);
  }
  return std::nullopt;
}

// Bytes a read-modify-write in-place operator reads from (and writes back to)
// its destination: the scattered values for scatters (index_add_, scatter_add_,
// accumulating index_put_), else the destination view.
double rmw_bytes(const OpNode& n, const TensorRef& self) {
  if (n.op.find("index") != std::string::npos || n.op.find("scatter") != std::string::npos || n.op == "put_") {
    for (const char* k : {"source", "src", "values"}) {
      TensorRef v = n.tensor(k);
      if (v.id >= 0 || !v.shape.empty()) return v.numel() * dtype_bytes(self.dtype);
    }
  }
  return self.bytes();
}

// Propagates value provenance (see Ctx::origin) through one operator.
void propagate_origin(const OpNode& n, Ctx& c) {
  auto ins = n.tensor_args();
  for (auto& o : n.outputs) {
    MathClass best = class_of_dtype(o.dtype);
    if (best == MathClass::Count) continue;  // integer results carry no float origin
    for (auto& t : ins) {
      if (t.numel() != o.numel() && !is_view_op(n.op)) continue;
      MathClass oc = c.origin_of(t);
      if (oc != MathClass::Count && class_bits(oc) < class_bits(best)) best = oc;
    }
    c.origin[o.id] = best;
  }
}


// --- replication ----------------------------------------------------------------
//
// Tensors that hold the same values several times: cat or stack of one tensor
// with itself, repeat, expand of a size-1 dim. Ctx::period records, per dim,
// the period of the values; views, casts and elementwise operators carry it
// on. A kernel computes each distinct value once: elementwise work, casts and
// reductions on such a tensor count its distinct values, a matmul with a
// replicated operand the MACs of replicated_matmul_fraction (cost_graph).
// Bytes are not affected (boundary I/O counts every written element).

// Which tensor ids stand for exactly one tensor. The tracer aggregates
// repeated calls into their first call's node and aliases their outputs to the
// first call's ids; past 8 data variants of one signature calls on other data
// join the last variant, so an id produced by a node with count > 1 may stand
// for several different tensors. It stands for one when its producer ran
// once, or is a view (same arguments, same aliased storage, same values) of
// ids that do, in a signature with fewer than 8 variants.
class UniqueIds {
 public:
  explicit UniqueIds(const OpGraph& g) : g_(g) {
    for (size_t i = 0; i < g.ops.size(); ++i)
      for (auto& o : g.ops[i].outputs) producers_[o.id].push_back(i);
  }

  bool unique(int64_t id, int depth = 0) {
    if (auto m = memo_.find(id); m != memo_.end()) return m->second;
    bool ok = true;
    auto p = producers_.find(id);
    if (p != producers_.end()) {
      for (size_t i : p->second) {
        const OpNode& n = g_.ops[i];
        if (n.count == 1) continue;
        if (depth > 64 || !is_view_family(n.op) || overflowed(i)) { ok = false; break; }
        for (auto& t : n.tensor_args())
          if (t.id == id || !unique(t.id, depth + 1)) ok = false;
        if (!ok) break;
      }
    }
    return memo_[id] = ok;
  }

 private:
  static bool is_view_family(const std::string& op);
  // Whether view node i's signature has 8 or more variants (worked out once,
  // on first use: only a cat of an id with itself asks).
  bool overflowed(size_t i) {
    if (!sigs_built_) {
      sigs_built_ = true;
      std::map<std::string, int> variants;
      std::vector<std::string> sigs(g_.ops.size());
      for (size_t k = 0; k < g_.ops.size(); ++k) {
        const OpNode& n = g_.ops[k];
        if (!is_view_family(n.op)) continue;
        json args = n.args;
        strip_ids(args);
        sigs[k] = n.op + "." + n.overload + args.dump();
        ++variants[sigs[k]];
      }
      for (size_t k = 0; k < g_.ops.size(); ++k)
        if (!sigs[k].empty() && variants[sigs[k]] >= 8) overflow_.insert(k);
    }
    return overflow_.count(i) > 0;
  }
  static void strip_ids(json& j) {
    if (j.is_object()) {
      j.erase("id");
      j.erase("base");
      for (auto& [k, v] : j.items()) strip_ids(v);
    } else if (j.is_array()) {
      for (auto& v : j) strip_ids(v);
    }
  }
  const OpGraph& g_;
  std::unordered_map<int64_t, std::vector<size_t>> producers_;
  std::set<size_t> overflow_;
  bool sigs_built_ = false;
  std::unordered_map<int64_t, bool> memo_;
};

bool UniqueIds::is_view_family(const std::string& op) { return is_view_op(op) && !is_shape_only(op); }

// Normalises and records the periods of `o` (none when nothing repeats).
void set_periods(Ctx& c, const TensorRef& o, std::vector<int64_t> p) {
  bool rep = false;
  if (p.size() == o.shape.size()) {
    for (size_t d = 0; d < p.size(); ++d) {
      p[d] = std::max<int64_t>(1, std::min(p[d], o.shape[d]));
      rep = rep || p[d] < o.shape[d];
    }
  }
  if (rep) {
    c.period[o.id] = std::move(p);
    c.period_root[o.id] = o.base >= 0 ? o.base : o.id;
  } else {
    c.period.erase(o.id);
  }
}

// Periods through a reshape (view, reshape, flatten, squeeze, unsqueeze):
// dims kept one to one keep theirs; dims merged into one keep the outermost's
// (times the inner sizes) when the inner ones do not repeat; a dim split into
// several keeps its period p where one new dim j has I_j | p | I_j * s_j (I_j:
// the sizes inside j): period p / I_j along j, 1 outside, full inside. Other
// groupings: none (counted in full).
std::vector<int64_t> reshape_periods(const std::vector<int64_t>& in, const std::vector<int64_t>& pin,
                                     const std::vector<int64_t>& out) {
  std::vector<int64_t> pout(out);
  std::vector<size_t> a, b;  // dims of size > 1
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 0) return pout;
    if (in[d] > 1) a.push_back(d);
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 0) return pout;
    if (out[d] > 1) b.push_back(d);
  }
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    size_t i0 = i, j0 = j;
    double pa = double(in[a[i++]]), pb = double(out[b[j++]]);
    while (pa != pb) {
      if (pa < pb) {
        if (i >= a.size()) return pout;
        pa *= double(in[a[i++]]);
      } else {
        if (j >= b.size()) return pout;
        pb *= double(out[b[j++]]);
      }
    }
    if (i - i0 == 1 && j - j0 == 1) {
      pout[b[j0]] = pin[a[i0]];
    } else if (j - j0 == 1) {  // merge: only the outermost may repeat
      bool inner_full = true;
      int64_t inner = 1;
      for (size_t k = i0 + 1; k < i; ++k) {
        inner_full = inner_full && pin[a[k]] >= in[a[k]];
        inner *= in[a[k]];
      }
      if (inner_full) pout[b[j0]] = pin[a[i0]] * inner;
    } else if (i - i0 == 1) {  // split
      const int64_t p = pin[a[i0]];
      if (p >= in[a[i0]]) continue;
      int64_t inner = 1;
      for (size_t k = j; k-- > j0;) {
        const int64_t s = out[b[k]];
        if (p % inner == 0 && (p / inner) <= s && s % (p / inner) == 0) {
          pout[b[k]] = p / inner;
          for (size_t o = j0; o < k; ++o) pout[b[o]] = 1;
          break;
        }
        inner *= s;
      }
    }
  }
  return pout;
}

int64_t norm_dim(int64_t d, size_t rank) { return d < 0 ? d + int64_t(rank) : d; }

// Elementwise operators whose output element depends only on the same
// (broadcast) element of each operand.
bool periodic_elementwise(const std::string& op, const std::string& family) {
  static const std::set<std::string> positional = {"tril", "triu", "tril_", "triu_", "isin",
                                                   "prelu", "_prelu_kernel", "glu"};
  static const std::set<std::string> families = {"elementwise", "division", "transcendental",
                                                 "compare/select"};
  static const std::set<std::string> copies = {"_to_copy", "to", "clone", "contiguous",
                                               "lift_fresh_copy", "_to_dim_order_copy",
                                               "alias_copy", "detach_copy"};
  if (positional.count(op)) return false;
  return families.count(family) || copies.count(op);
}

using Periods = std::vector<std::pair<TensorRef, std::vector<int64_t>>>;

// The periods of n's outputs from its operands' (Ctx::period), into `res`.
void output_periods(const OpNode& n, const std::string& family, UniqueIds& unique, const Ctx& c,
                    Periods& res) {
  if (n.outputs.empty()) return;
  const std::string& op = n.op;
  const TensorRef& o = n.outputs.front();
  const size_t R = o.shape.size();
  std::vector<int64_t> p;
  if (periodic_elementwise(op, family)) {
    p.assign(R, 1);
    bool any = false;
    for (auto& t : n.tensor_args()) {
      if (t.shape.size() > R) return;
      std::vector<int64_t> pt = c.periods(t);
      const size_t off = R - t.shape.size();
      for (size_t d = off; d < R; ++d) {
        const int64_t s = t.shape[d - off];
        if (s == 1) continue;
        if (s != o.shape[d]) return;  // not a broadcast operand
        const int64_t q = std::max<int64_t>(1, pt[d - off]);
        p[d] = std::min(o.shape[d], p[d] / std::gcd(p[d], q) * q);
      }
      any = true;
    }
    if (!any) return;
    for (auto& out : n.outputs)
      if (out.shape == o.shape) res.emplace_back(out, p);
    return;
  }
  if (op == "cat" || op == "concat" || op == "concatenate" || op == "stack") {
    auto ts = n.tensor_args();
    if (ts.size() < 2) return;
    for (auto& t : ts)
      if (t.id != ts[0].id || t.shape != ts[0].shape) return;
    if (!unique.unique(ts[0].id)) return;
    std::vector<int64_t> pin = c.periods(ts[0]);
    const size_t rin = ts[0].shape.size();
    if (op == "stack") {
      int64_t d = norm_dim(int_arg(n, "dim", 0), rin + 1);
      if (d < 0 || d > int64_t(rin) || R != rin + 1) return;
      pin.insert(pin.begin() + d, 1);
      res.emplace_back(o, pin);
    } else {
      int64_t d = norm_dim(int_arg(n, "dim", 0), rin);
      if (d < 0 || d >= int64_t(rin) || R != rin) return;
      const int64_t s = ts[0].shape[size_t(d)];
      if (s > 0 && s % pin[size_t(d)] != 0) pin[size_t(d)] = s;  // a period that does not tile
      res.emplace_back(o, pin);
    }
    return;
  }
  auto ins = n.tensor_args();
  if (ins.empty()) return;
  const TensorRef& in = ins.front();
  const bool makes = op == "repeat" || op == "expand" || op == "expand_as" || op == "expand_copy";
  if (!makes && !c.period.count(in.id)) return;  // nothing repeats in the input
  const std::vector<int64_t> pin = c.periods(in);
  const size_t rin = in.shape.size();
  if (op == "repeat") {
    std::vector<int64_t> reps = int_list(n, "repeats");
    if (reps.size() != R || R < rin) return;
    p.assign(R, 1);
    for (size_t d = 0; d < R; ++d) {
      if (d < R - rin) continue;  // a new leading dim: one copy after another
      const int64_t s = in.shape[d - (R - rin)], q = pin[d - (R - rin)];
      p[d] = reps[d] > 1 && s > 0 && s % q != 0 ? s : q;
    }
  } else if (op == "expand" || op == "expand_as" || op == "expand_copy") {
    if (R < rin) return;
    p.assign(R, 1);
    for (size_t d = R - rin; d < R; ++d) {
      const int64_t s = in.shape[d - (R - rin)];
      p[d] = s == 1 ? 1 : pin[d - (R - rin)];
    }
  } else if (op == "view" || op == "_unsafe_view" || op == "reshape" || op == "_reshape_alias" ||
             op == "view_as" || op == "flatten" || op == "unflatten" || op == "squeeze" ||
             op == "squeeze_" || op == "unsqueeze" || op == "unsqueeze_") {
    p = reshape_periods(in.shape, pin, o.shape);
  } else if (op == "alias" || op == "detach" || op == "detach_" || op == "lift_fresh" ||
             op == "resolve_conj" || op == "resolve_neg") {
    p = pin;
  } else if (op == "permute") {
    std::vector<int64_t> dims = int_list(n, "dims");
    if (dims.size() != rin || R != rin) return;
    p.resize(R);
    for (size_t d = 0; d < R; ++d) {
      int64_t s = norm_dim(dims[d], rin);
      if (s < 0 || s >= int64_t(rin)) return;
      p[d] = pin[size_t(s)];
    }
  } else if (op == "transpose" || op == "transpose_" || op == "t" || op == "t_") {
    p = pin;
    int64_t d0 = norm_dim(int_arg(n, "dim0", 0), rin), d1 = norm_dim(int_arg(n, "dim1", 1), rin);
    if (rin < 2) {
      // t() of a vector is itself
    } else if (d0 >= 0 && d1 >= 0 && d0 < int64_t(rin) && d1 < int64_t(rin)) {
      std::swap(p[size_t(d0)], p[size_t(d1)]);
    } else {
      return;
    }
  } else if (op == "slice" || op == "narrow") {
    // A contiguous run of a periodic dim is periodic with the same period.
    p = pin;
    int64_t d = norm_dim(int_arg(n, "dim", 0), rin);
    if (d < 0 || d >= int64_t(rin) || R != rin) return;
    if (int_arg(n, "step", 1) != 1) p[size_t(d)] = o.shape[size_t(d)];
  } else if (op == "select") {
    p = pin;
    int64_t d = norm_dim(int_arg(n, "dim", 0), rin);
    if (d < 0 || d >= int64_t(rin) || R + 1 != rin) return;
    p.erase(p.begin() + d);
  } else if (op == "split" || op == "split_with_sizes" || op == "chunk" || op == "tensor_split" ||
             op == "unbind") {
    int64_t d = norm_dim(int_arg(n, "dim", 0), rin);
    if (d < 0 || d >= int64_t(rin)) return;
    for (auto& out : n.outputs) {
      std::vector<int64_t> q = pin;
      if (op == "unbind") q.erase(q.begin() + d);
      if (q.size() == out.shape.size()) res.emplace_back(out, q);
    }
    return;
  } else {
    return;
  }
  res.emplace_back(o, p);
}

// Records the periods of n's outputs (Ctx::period).
void propagate_periods(const OpNode& n, const std::string& family, UniqueIds& unique, Ctx& c) {
  Periods res;
  try {
    output_periods(n, family, unique, c, res);
  } catch (const std::exception&) {
    res.clear();  // arguments it cannot read: no replication (counted in full)
  }
  // An in-place write changes the values of every view of its storage.
  if (is_in_place(n.op) && family != "view") {
    TensorRef self = n.tensor("self");
    if (self.id >= 0) {
      const int64_t root = self.base >= 0 ? self.base : self.id;
      for (auto it = c.period.begin(); it != c.period.end();) {
        if (c.period_root[it->first] == root || it->first == self.id) it = c.period.erase(it);
        else ++it;
      }
    }
  }
  for (auto& o : n.outputs) c.period.erase(o.id);
  for (auto& [o, p] : res) set_periods(c, o, std::move(p));
}

// The fraction of an operator's compute a kernel needs when its operands
// repeat: elementwise operators and casts compute each distinct output value
// once, a reduction of a single tensor reads each distinct value once (a sum
// over k copies is k times the sum of one). 1 when nothing repeats.
double replicated_fraction(const OpNode& n, const std::string& family, const Ctx& c) {
  if (n.outputs.empty()) return 1;
  if (periodic_elementwise(n.op, family)) return c.distinct_fraction(n.outputs.front());
  if (family == "reduction") {
    auto ts = n.tensor_args();
    if (ts.size() == 1) return c.distinct_fraction(ts.front());
  }
  return 1;
}

// --- causal masks written out by hand ------------------------------------------
//
// References often build attention with an explicit triangular mask
// (arange compare or tril/triu, then masked_fill(-inf) before softmax). A
// kernel skips the masked half, so the score matmul, the softmax and the PV
// matmul of such a chain are costed at the kept fraction of the scores. This
// pass finds those operators: it returns op index -> kept fraction.
std::unordered_map<size_t, double> masked_attention_density(const OpGraph& g) {
  std::set<int64_t> iota, tri;
  std::unordered_map<int64_t, size_t> producer;
  std::unordered_map<int64_t, std::vector<size_t>> consumers;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (auto& o : g.ops[i].outputs) producer.emplace(o.id, i);
    for (auto& t : g.ops[i].tensor_args()) consumers[t.id].push_back(i);
  }
  auto is_matmul = [](const std::string& op) { return op == "bmm" || op == "matmul" || op == "mm"; };
  static const std::set<std::string> cmp = {"le", "lt", "ge", "gt"};
  static const std::set<std::string> same_size = {"mul", "div", "add", "sub", "_to_copy", "clone",
                                                  "contiguous", "copy", "neg", "mul_", "div_", "add_"};
  std::unordered_map<size_t, double> density;
  auto kept = [](const TensorRef& t) {
    if (t.shape.size() < 2) return 1.0;
    double L = double(t.shape[t.shape.size() - 2]), S = double(t.shape.back());
    double m = std::min(L, S);
    return L * S > 0 ? (m * (m + 1) / 2 + (L - m) * S) / (L * S) : 1.0;
  };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& n = g.ops[i];
    auto ins = n.tensor_args();
    auto any_in = [&](const std::set<int64_t>& s) {
      for (auto& t : ins) if (s.count(t.id)) return true;
      return false;
    };
    if (n.op == "arange") {
      for (auto& o : n.outputs) iota.insert(o.id);
    } else if (n.op == "tril" || n.op == "triu" || n.op == "tril_" || n.op == "triu_") {
      for (auto& o : n.outputs) tri.insert(o.id);
    } else if (cmp.count(n.op) && ins.size() == 2 && iota.count(ins[0].id) && iota.count(ins[1].id)) {
      for (auto& o : n.outputs) tri.insert(o.id);
    } else if (is_view_op(n.op) || n.op == "bitwise_not" || n.op == "logical_not" || n.op == "_to_copy") {
      if (any_in(iota)) for (auto& o : n.outputs) iota.insert(o.id);
      if (any_in(tri)) for (auto& o : n.outputs) tri.insert(o.id);
    } else if ((n.op == "masked_fill" || n.op == "masked_fill_") && tri.count(n.tensor("mask").id)) {
      TensorRef x = n.tensor("self");
      double d = kept(x);
      // Backwards to the score matmul through same-size elementwise ops.
      int64_t id = x.id;
      for (int hop = 0; hop < 8; ++hop) {
        auto it = producer.find(id);
        if (it == producer.end()) break;
        const OpNode& p = g.ops[it->second];
        if (p.op == "bmm" || p.op == "matmul" || p.op == "mm" || p.op == "baddbmm") {
          density[it->second] = d;
          break;
        }
        if (!same_size.count(p.op) && !is_view_op(p.op)) break;
        TensorRef src = p.tensor_args().empty() ? TensorRef{} : p.tensor_args().front();
        id = src.id;
      }
      // Forwards: the softmax over the masked scores, then every matmul that
      // reads the masked probabilities P (zero in the masked blocks) or a
      // product with them: PV, and in a backward pass written out by hand
      // P^T dO, dS K and dS^T Q with dS = P * (dP - D). A matmul whose
      // output is only ever multiplied by such a zeroed tensor (dP = dO V^T,
      // used in P * dP and P * (dP - D)) need not compute the masked blocks
      // either.
      std::set<int64_t> chain, zeroed;
      std::vector<int64_t> partners;  // operands multiplied by a zeroed tensor
      for (auto& o : n.outputs) chain.insert(o.id);
      for (size_t k = i + 1; k < g.ops.size(); ++k) {
        const OpNode& c = g.ops[k];
        auto cin = c.tensor_args();
        if (cin.empty()) continue;
        const bool first_in = chain.count(cin.front().id) > 0;
        bool any_zeroed = false;
        for (auto& t : cin) any_zeroed = any_zeroed || zeroed.count(t.id) > 0;
        if (is_matmul(c.op)) {
          if (first_in || any_zeroed) density[k] = d;
          continue;
        }
        if (c.op == "_softmax" || c.op == "softmax" || c.op == "_safe_softmax") {
          if (!first_in) continue;
          density[k] = d;
          for (auto& o : c.outputs) chain.insert(o.id), zeroed.insert(o.id);
          continue;
        }
        if ((c.op == "mul" || c.op == "mul_") && any_zeroed && c.outputs.size() == 1) {
          const TensorRef& o = c.outputs[0];
          chain.insert(o.id);
          zeroed.insert(o.id);
          for (auto& t : cin)
            if (!zeroed.count(t.id) && t.numel() == o.numel()) partners.push_back(t.id);
          continue;
        }
        if (!first_in || (!same_size.count(c.op) && !is_view_op(c.op))) continue;
        const bool z = zeroed.count(cin.front().id) > 0 && (is_view_op(c.op) || c.op == "_to_copy" ||
                                                            c.op == "clone" || c.op == "contiguous" ||
                                                            c.op == "neg" || c.op == "copy");
        for (auto& o : c.outputs) {
          chain.insert(o.id);
          if (z) zeroed.insert(o.id);
        }
      }
      // Only multiplied by zeroed tensors: every consumer is a mul with a
      // zeroed operand, or a same-size add/sub/neg/cast/view whose own
      // consumers are (a few levels deep).
      std::function<bool(int64_t, int)> masked_use = [&](int64_t id, int depth) {
        auto cs = consumers.find(id);
        if (cs == consumers.end() || depth > 4) return false;
        for (size_t k : cs->second) {
          const OpNode& c = g.ops[k];
          bool mul_zeroed = false;
          if (c.op == "mul" || c.op == "mul_")
            for (auto& t : c.tensor_args()) mul_zeroed = mul_zeroed || zeroed.count(t.id) > 0;
          if (mul_zeroed) continue;
          static const std::set<std::string> pass = {"sub", "add", "neg", "_to_copy", "clone", "contiguous"};
          if ((!pass.count(c.op) && !is_view_op(c.op)) || c.outputs.size() != 1) return false;
          if (!masked_use(c.outputs[0].id, depth + 1)) return false;
        }
        return true;
      };
      for (int64_t id : partners) {
        for (int hop = 0; hop < 4; ++hop) {
          auto it = producer.find(id);
          if (it == producer.end()) break;
          const OpNode& p = g.ops[it->second];
          if (is_matmul(p.op)) {
            if (p.outputs.size() == 1 && masked_use(p.outputs[0].id, 0)) density[it->second] = d;
            break;
          }
          if (p.op != "sub" && p.op != "add" && p.op != "neg" && p.op != "_to_copy" && !is_view_op(p.op)) break;
          id = p.tensor_args().empty() ? -1 : p.tensor_args().front().id;
        }
      }
    }
  }
  return density;
}

// --- lookup encodings written as masked constant writes ---------------------
//
// Quantisers written in PyTorch encode a float tensor X as integer codes by
// comparing X with constant thresholds and writing a constant code where each
// mask holds: R = zeros_like(X, dtype=uint8); R[(X >= 0.75) & (X <= 1.25)] = 2;
// ... (the public NVFP4 references: 30 compares, 14 ands and 16 masked writes
// per value for one E2M1 code). Op by op that is 44 integer operations per
// value; a kernel makes each code with one conversion (Blackwell's
// cvt.rn.satfinite.e2m1x2.f32 converts two values per instruction) or, for any
// other table, with one select per element of R: every code is a
// piecewise-constant function of X. This pass finds such regions: compares of
// one float tensor X with scalars, logical combinations of those masks, and at
// least two masked writes of constants into one integer tensor R (index_put
// with the mask, masked_fill), each mask consumed only inside the region. The
// region costs one integer operation per element of R for every R made,
// instead of its compares and logical operators.
struct Encoding {
  std::set<size_t> ops;  // the region's operators: their work is replaced
  size_t anchor = 0;     // the operator that carries the region's work
  double int_ops = 0;    // per call of the anchor (its count multiplies)
};

std::vector<Encoding> lookup_encodings(const OpGraph& g) {
  static const std::set<std::string> cmp = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const std::set<std::string> logic = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                                              "logical_and", "logical_or", "logical_xor", "logical_not",
                                              "__and__", "__or__", "__xor__"};
  std::unordered_map<int64_t, int64_t> mask_src;  // bool tensor -> the float tensor X it tests
  std::unordered_map<int64_t, size_t> mask_op;    // bool tensor -> its producer
  std::unordered_map<int64_t, std::vector<size_t>> consumers;
  std::unordered_map<int64_t, size_t> producer;
  std::unordered_map<int64_t, int64_t> target_of;  // code tensor (or a write's result) -> R
  struct Target {
    int64_t src = -1;
    bool ok = true;
    int64_t writes = 0;  // calls, counts included
    std::vector<size_t> ops;
    std::vector<int64_t> masks;
    TensorRef r;
  };
  std::map<int64_t, Target> targets;
  auto is_float = [](const TensorRef& t) {
    MathClass c = class_of_dtype(t.dtype);
    return c != MathClass::Count && c != MathClass::INT8;
  };
  auto is_code = [](const TensorRef& t) { return class_of_dtype(t.dtype) == MathClass::INT8 ||
                                                 t.dtype == "int16" || t.dtype == "int32" || t.dtype == "int64"; };
  auto scalar_value = [](const OpNode& n, const char* key) {
    if (!n.args.contains(key)) return false;
    const json& v = n.args[key];
    if (v.is_number() || v.is_boolean()) return true;
    TensorRef t = n.tensor(key);
    return (t.id >= 0 || !t.dtype.empty()) && t.numel() == 1;
  };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& n = g.ops[i];
    for (auto& t : n.tensor_args()) consumers[t.id].push_back(i);
    for (auto& o : n.outputs) producer.emplace(o.id, i);
    if (n.outputs.size() != 1) continue;
    const TensorRef& out = n.outputs[0];
    std::string base = n.op.back() == '_' && n.op != "__and__" && n.op != "__or__" && n.op != "__xor__"
                           ? n.op.substr(0, n.op.size() - 1) : n.op;
    if (cmp.count(base)) {
      TensorRef x = n.tensor("self"), other = n.tensor("other");
      if (x.id >= 0 && is_float(x) && other.id < 0 && n.has("other") && n.args["other"].is_number()) {
        mask_src[out.id] = x.id;
        mask_op[out.id] = i;
      }
    } else if (logic.count(base)) {
      int64_t src = -1;
      bool ok = true;
      for (auto& t : n.tensor_args()) {
        auto it = mask_src.find(t.id);
        if (it == mask_src.end() || (src >= 0 && it->second != src)) ok = false;
        else src = it->second;
      }
      if (ok && src >= 0) {
        mask_src[out.id] = src;
        mask_op[out.id] = i;
      }
    } else if (base == "index_put" || base == "_index_put_impl" || base == "masked_fill") {
      TensorRef r = n.tensor("self");
      if (r.id < 0 || !is_code(r) || bool_arg(n, "accumulate")) continue;
      int64_t mask = -1;
      bool value_ok = false;
      if (base == "masked_fill") {
        mask = n.tensor("mask").id;
        value_ok = scalar_value(n, "value");
      } else if (n.args.contains("indices") && n.args["indices"].is_array() && n.args["indices"].size() == 1) {
        OpNode tmp;
        tmp.args = json::object({{"i", n.args["indices"]}});
        auto ts = tmp.tensor_args();
        if (ts.size() == 1) mask = ts[0].id;
        value_ok = scalar_value(n, "values");
      }
      auto ms = mask_src.find(mask);
      if (!value_ok || ms == mask_src.end()) continue;
      int64_t root = target_of.count(r.id) ? target_of[r.id] : r.id;
      target_of[out.id] = root;
      Target& t = targets[root];
      if (t.ops.empty()) t.r = r;
      if (t.src >= 0 && t.src != ms->second) t.ok = false;
      t.src = ms->second;
      t.writes += n.count;
      t.ops.push_back(i);
      t.masks.push_back(mask);
    }
  }
  std::vector<Encoding> found;
  for (auto& [root, t] : targets) {
    if (!t.ok || t.writes < 2) continue;
    Encoding e;
    e.ops.insert(t.ops.begin(), t.ops.end());
    // The masks and the compares and logical operators they come from.
    std::vector<int64_t> todo = t.masks;
    std::set<int64_t> seen;
    while (!todo.empty()) {
      int64_t id = todo.back();
      todo.pop_back();
      if (!seen.insert(id).second) continue;
      auto mo = mask_op.find(id);
      if (mo == mask_op.end()) continue;
      e.ops.insert(mo->second);
      for (auto& in : g.ops[mo->second].tensor_args())
        if (mask_src.count(in.id)) todo.push_back(in.id);
    }
    // Repeated calls are aggregated into their first call's node, so the masks
    // of later calls (compares with other thresholds) have no recorded
    // consumer: masks of the same X consumed only inside the region (or not
    // at all, and no output) belong to it too.
    std::set<int64_t> outputs;
    for (auto& o : g.outputs) outputs.insert(o.id);
    for (bool grew = true; grew;) {
      grew = false;
      for (auto& [id, src] : mask_src) {
        if (src != t.src || seen.count(id) || outputs.count(id)) continue;
        bool inside = true;
        for (size_t c : consumers[id]) inside = inside && e.ops.count(c);
        if (!inside) continue;
        seen.insert(id);
        e.ops.insert(mask_op[id]);
        grew = true;
      }
    }
    // Every recorded consumer of a mask is in the region.
    bool closed = true;
    for (int64_t id : seen)
      for (size_t c : consumers[id]) closed = closed && e.ops.count(c);
    if (!closed) continue;
    e.anchor = *std::min_element(t.ops.begin(), t.ops.end());
    // One operation per code, for every R made (its producer's calls); the
    // anchor's count multiplies the work, so divide it out here.
    auto p = producer.find(root);
    double made = p == producer.end() ? 1.0 : double(g.ops[p->second].count);
    e.int_ops = t.r.numel() * made / double(g.ops[e.anchor].count);
    found.push_back(std::move(e));
  }
  return found;
}

// --- contractions written as broadcast products --------------------------------
//
// References write matrix products out by hand: (C[..., :, None, :] *
// B[..., None, :, :]).sum(-1) is C @ B^T. Costed op by op that is P multiplies
// and P adds on the CUDA cores (P = the broadcast product's elements), but a
// kernel runs it as a GEMM: P multiply-accumulates on the tensor cores, without
// materialising the product. This pass finds mul(a, b) -> sum(dims) where the
// product is an outer product (a is broadcast along some dim that b is not,
// and b along some dim that a is not), every summed dim is a contraction dim
// (both operands full along it) and the sum is the product's only consumer.
struct Contraction {
  size_t mul = 0, sum = 0;
  double macs = 0;  // per call
};

std::vector<Contraction> broadcast_contractions(const OpGraph& g) {
  std::unordered_map<int64_t, std::vector<size_t>> consumers;
  for (size_t i = 0; i < g.ops.size(); ++i)
    for (auto& t : g.ops[i].tensor_args()) consumers[t.id].push_back(i);
  std::vector<Contraction> found;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& m = g.ops[i];
    if (m.op != "mul" || m.outputs.size() != 1) continue;
    TensorRef a = m.tensor("self"), b = m.tensor("other"), p = m.outputs[0];
    if (a.shape.empty() || b.shape.empty() || a.id < 0 || b.id < 0) continue;
    auto c = consumers.find(p.id);
    if (c == consumers.end() || c->second.size() != 1) continue;
    const OpNode& s = g.ops[c->second[0]];
    if ((s.op != "sum" && s.op != "mean") || s.tensor("self").id != p.id || s.count != m.count) continue;
    const size_t r = p.shape.size();
    if (a.shape.size() > r || b.shape.size() > r) continue;
    auto dim_of = [&](const TensorRef& t, size_t d) {  // right-aligned broadcast
      size_t off = r - t.shape.size();
      return d < off ? int64_t(1) : t.shape[d - off];
    };
    std::vector<int64_t> dims;
    if (s.has("dim") && s.args["dim"].is_array()) {
      for (auto& d : s.args["dim"])
        if (d.is_number_integer()) dims.push_back(d.get<int64_t>());
    } else if (s.has("dim") && s.args["dim"].is_number_integer()) {
      dims.push_back(s.args["dim"].get<int64_t>());
    }
    if (dims.empty()) continue;
    bool ok = true, a_bcast = false, b_bcast = false;
    std::set<size_t> summed;
    for (int64_t d : dims) {
      if (d < 0) d += int64_t(r);
      if (d < 0 || d >= int64_t(r)) ok = false;
      else summed.insert(size_t(d));
    }
    for (size_t d = 0; ok && d < r; ++d) {
      int64_t sa = dim_of(a, d), sb = dim_of(b, d), so = p.shape[d];
      if (summed.count(d)) {
        ok = sa == so && sb == so;  // contracted: neither operand broadcast
      } else if (so > 1) {
        a_bcast |= sa == 1 && sb == so;
        b_bcast |= sb == 1 && sa == so;
      }
    }
    if (!ok || !a_bcast || !b_bcast) continue;
    found.push_back({i, c->second[0], p.numel()});
  }
  return found;
}

// --- the graph's cost, op by op -------------------------------------------------

// Replaces the compute of `w` by `compute`; the traffic stays as traced.
void replace_compute(Work& w, Work compute) {
  compute.bytes = w.bytes;
  w = compute;
}

void append_note(std::string& note, const std::string& more) {
  note += (note.empty() ? "" : ", ") + more;
}

// The graph-wide findings that replace operators' own work: broadcast products
// run as contractions, lookup encodings, causal-masked scores.
struct Rewrites {
  std::unordered_map<size_t, double> density;  // op -> kept fraction of its scores
  std::vector<Contraction> contractions;
  std::unordered_map<size_t, const Contraction*> contraction_mul, contraction_sum;
  std::vector<Encoding> encodings;
  std::unordered_map<size_t, const Encoding*> encoding_of;

  explicit Rewrites(const OpGraph& g)
      : density(masked_attention_density(g)),
        contractions(broadcast_contractions(g)),
        encodings(lookup_encodings(g)) {
    for (auto& c : contractions) {
      contraction_mul[c.mul] = &c;
      contraction_sum[c.sum] = &c;
    }
    for (auto& e : encodings)
      for (size_t i : e.ops) encoding_of[i] = &e;
  }
  Rewrites(const Rewrites&) = delete;  // the maps point into the vectors

  // Rewrites `one` (op i's work per call, as its rule has it) by the findings.
  void apply(size_t i, const OpNode& n, const Ctx& ctx, Work& one, std::string& note) const {
    if (auto c = contraction_mul.find(i); c != contraction_mul.end()) {
      // The product and its sum run as one GEMM on the tensor cores; the
      // traffic stays as traced (unfused diagnostic).
      Work mm;
      mm.bytes = one.bytes;
      add_matmul(mm, ctx, n.tensor("self"), n.tensor("other"), c->second->macs, note);
      one = mm;
      note = "broadcast product + sum as a contraction: " + note;
    } else if (contraction_sum.count(i)) {
      replace_compute(one, Work{});
      if (n.op == "mean") add_flops(one, out0(n).dtype, out0(n).numel());  // the scale
      note = "accumulation counted in the contraction (broadcast product + sum)";
    }
    if (auto e = encoding_of.find(i); e != encoding_of.end()) {
      // A lookup encoding (compares and masked constant writes): one
      // operation per code, carried by the region's first write.
      replace_compute(one, Work{});
      if (i == e->second->anchor) {
        one.int_ops = e->second->int_ops;
        note = "lookup encoding: 1 operation per code (" + std::to_string(e->second->ops.size()) +
               " operators)";
      } else {
        note = "counted in the lookup encoding";
      }
    }
    if (auto d = density.find(i); d != density.end()) {
      // Only the kept scores cost compute; the traffic stays as traced.
      replace_compute(one, one.scaled(d->second));
      append_note(note, "causal-masked scores, kept " + std::to_string(d->second));
    }
  }

  std::string family(size_t i, const std::string& rule_family) const {
    return contraction_mul.count(i) ? "contraction" : encoding_of.count(i) ? "encoding" : rule_family;
  }
};

// Op i's cost through its rule (nullptr: none); adds it to gc's total, or the op
// to gc's uncosted ones.
OpCost cost_op(size_t i, const OpNode& n, const Rule* rule, const Ctx& ctx, const Rewrites& rw,
               double selected, GraphCost& gc) {
  OpCost oc;
  oc.index = i;
  oc.op = n.op;
  oc.count = n.count;
  if (!rule) {
    oc.note = "no rule for aten::" + n.op + "." + n.overload;
    gc.uncosted[n.op] += n.count;
    return oc;
  }
  try {
    Work one;
    rule->fn(n, ctx, one, oc.note);
    if (double f = replicated_fraction(n, rule->family, ctx); f < 1) {
      // Replicated operands: each distinct value computed once.
      replace_compute(one, one.scaled(f));
      char buf[64];
      std::snprintf(buf, sizeof buf, "replicated values: %.4g distinct", f);
      append_note(oc.note, buf);
    }
    if (selected < 1) {
      // An elementwise op on an input of which selections read only part.
      replace_compute(one, one.scaled(selected));
      char buf[64];
      std::snprintf(buf, sizeof buf, "selected elements only: %.4g", selected);
      append_note(oc.note, buf);
    }
    rw.apply(i, n, ctx, one, oc.note);
    oc.family = rw.family(i, rule->family);
    oc.costed = true;
    oc.work = one.scaled(double(n.count));
    gc.total += oc.work;
  } catch (const std::exception& e) {
    oc.note = std::string("rule ") + rule->family + " failed: " + e.what();
    gc.uncosted[n.op] += n.count;
  }
  return oc;
}

// --- data-dependent reads ---------------------------------------------------------
//
// A reference may convert a whole input and then read only part of it: a paged
// KV pool cast to fp32 of which each sequence gathers its pages, a ragged batch
// cut into slices at offsets read with .item(). A kernel reads only what is
// selected. Per definition input, its *chain* is the input, its whole views
// that keep the row-major order of its elements (view, reshape, squeeze,
// unsqueeze, flatten, a permute or transpose moving only size-1 dims, a select
// or slice keeping every element) and the same-shaped results of elementwise
// operators and casts on chain tensors: element e of each is computed from
// element e of the input. When every use of the chain is one of these, a gather
// whose indices were real (the tracer's selections) or a slice, select or narrow
// (step 1), the input is read at the positions those selections touch: their
// union in the input's flattened order where the selected dims lead (every dim
// before them has size 1), else their count (summed; at most the input), and
// elementwise work on the chain counts the same fraction. Any other use (a
// reduction, a matmul, an in-place write, a graph output) leaves the input to
// InputTraffic's rules.
class Demand {
 public:
  explicit Demand(const OpGraph& g) : g_(g), partial_(g.partial_budget_s > 0) {
    for (size_t i = 0; i < g.ops.size(); ++i)
      for (auto& [k, v] : g.ops[i].args.items()) {
        OpNode tmp;
        tmp.args = json::object({{k, v}});
        for (auto& t : tmp.tensor_args()) consumers_[t.id].push_back({i, k, t});
      }
    for (auto& s : g.selections) selections_[{s.id, s.dim, s.ndims}] = &s;
    for (auto& t : g.outputs) outputs_.insert(t.id);
    for (auto& t : g.inputs) analyse(t);
  }

  // Elements of input `name` a kernel must read when selections alone read
  // it; nullptr otherwise.
  const double* elements(const std::string& name) const {
    auto it = elements_.find(name);
    return it == elements_.end() ? nullptr : &it->second;
  }
  // The fraction of op i's work a kernel needs (an elementwise op on a chain).
  double work_fraction(size_t i) const {
    auto it = fraction_.find(i);
    return it == fraction_.end() ? 1.0 : it->second;
  }

 private:
  struct Use {
    size_t op;
    std::string arg;
    TensorRef t;
  };
  // Positions of the input read: [start, end) element runs, and element counts
  // that cannot be placed (selected dims after a dim of size > 1).
  struct Reads {
    std::vector<std::pair<double, double>> runs;
    double counted = 0;

    // `rows` of [start, end) over the flattened dims [d0, d0 + k) of a chain
    // tensor of `shape` (nullptr: only `count` rows are known).
    void add(const std::vector<int64_t>& shape, int64_t d0, int64_t k,
             const std::vector<std::pair<int64_t, int64_t>>* rows, double count) {
      double outer = 1, inner = 1;
      for (int64_t d = 0; d < d0; ++d) outer *= double(shape[size_t(d)]);
      for (size_t d = size_t(d0 + k); d < shape.size(); ++d) inner *= double(shape[d]);
      if (rows && outer == 1) {
        for (auto& [a, b] : *rows) runs.emplace_back(double(a) * inner, double(b) * inner);
      } else {
        counted += count * outer * inner;
      }
    }
    double total() {
      std::sort(runs.begin(), runs.end());
      double sum = 0, end = -1;
      for (auto& [a, b] : runs) {
        if (a >= end) {
          sum += b - a;
          end = b;
        } else if (b > end) {
          sum += b - end;
          end = b;
        }
      }
      return sum + counted;
    }
  };

  static bool keeps_order(const OpNode& n, const TensorRef& in) {
    static const std::set<std::string> reshapes = {
        "view", "_unsafe_view", "reshape", "_reshape_alias", "squeeze", "unsqueeze", "flatten",
        "unflatten", "alias", "detach", "lift_fresh", "expand", "expand_as", "view_as",
        "reshape_as", "select", "slice", "narrow"};
    if (n.outputs.size() != 1 || n.outputs[0].numel() != in.numel()) return false;
    if (reshapes.count(n.op)) return true;
    // A permutation keeps the order when the dims of size > 1 keep theirs.
    const size_t r = in.shape.size();
    std::vector<int64_t> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    if (n.op == "permute" && n.has("dims") && n.args["dims"].is_array() && n.args["dims"].size() == r) {
      for (size_t d = 0; d < r; ++d) perm[d] = norm_dim(n.args["dims"][d].get<int64_t>(), r);
    } else if ((n.op == "transpose" || n.op == "swapaxes" || n.op == "swapdims") && r > 0) {
      int64_t a = norm_dim(int_arg(n, "dim0", 0), r), b = norm_dim(int_arg(n, "dim1", 0), r);
      if (a < 0 || b < 0 || a >= int64_t(r) || b >= int64_t(r)) return false;
      std::swap(perm[size_t(a)], perm[size_t(b)]);
    } else if (n.op == "t" && r == 2) {
      std::swap(perm[0], perm[1]);
    } else {
      return false;
    }
    int64_t last = -1;
    for (int64_t d : perm) {
      if (d < 0 || d >= int64_t(r)) return false;
      if (in.shape[size_t(d)] == 1) continue;
      if (d < last) return false;
      last = d;
    }
    return true;
  }

  // A slice, select or narrow (step 1) of chain tensor `in`: the dim and the
  // [start, end) it keeps.
  static std::optional<std::tuple<int64_t, int64_t, int64_t>> cut(const OpNode& n, const TensorRef& in) {
    if (n.op != "slice" && n.op != "select" && n.op != "narrow") return std::nullopt;
    const size_t r = in.shape.size();
    int64_t d = norm_dim(int_arg(n, "dim", 0), r);
    if (d < 0 || d >= int64_t(r)) return std::nullopt;
    const int64_t size = in.shape[size_t(d)];
    auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    int64_t start = 0, end = size;
    if (n.op == "select") {
      start = clamp(int_arg(n, "index", 0));
      end = std::min(start + 1, size);
    } else if (n.op == "narrow") {
      start = clamp(int_arg(n, "start", 0));
      end = std::min(start + int_arg(n, "length", 0), size);
    } else {
      if (int_arg(n, "step", 1) != 1) return std::nullopt;
      if (n.has("start")) start = clamp(int_arg(n, "start", 0));
      if (n.has("end")) end = clamp(int_arg(n, "end", size));
    }
    return std::make_tuple(d, start, std::max(start, end));
  }

  // Whether a view `id` or a view of it is written in place or returned.
  bool written(int64_t id, int depth = 0) const {
    if (depth > 32 || outputs_.count(id)) return true;
    auto c = consumers_.find(id);
    if (c == consumers_.end()) return false;
    for (auto& u : c->second) {
      const OpNode& n = g_.ops[u.op];
      if (u.arg == "self" && is_in_place(n.op)) return true;
      if (is_view_op(n.op))
        for (auto& o : n.outputs)
          if (written(o.id, depth + 1)) return true;
    }
    return false;
  }

  void analyse(const TensorRef& in) {
    std::vector<int64_t> todo = {in.id};
    std::set<int64_t> chain = {in.id}, computed;  // computed: made by elementwise ops
    std::set<size_t> ops;  // elementwise ops on the chain
    Reads reads;
    bool any = false;
    while (!todo.empty()) {
      const int64_t id = todo.back();
      todo.pop_back();
      if (outputs_.count(id)) return;
      auto c = consumers_.find(id);
      // A computed chain tensor nobody uses still counts as reading the input
      // in full, as every operator reading an input does; in a partial trace
      // its users may not have run yet: it demands nothing so far (a kernel that
      // ran the same prefix need not have read more).
      if (c == consumers_.end() && computed.count(id) && !partial_) return;
      if (c == consumers_.end()) continue;
      for (auto& u : c->second) {
        const OpNode& n = g_.ops[u.op];
        auto follow = [&](bool computes) {
          for (auto& o : n.outputs) {
            if (computes) computed.insert(o.id);
            if (chain.insert(o.id).second) todo.push_back(o.id);
          }
        };
        if (is_shape_only(n.op)) continue;
        if (is_in_place(n.op) && u.arg == "self") return;
        if (is_view_op(n.op)) {
          if (keeps_order(n, u.t)) {
            follow(false);
          } else if (auto k = cut(n, u.t); k && n.outputs.size() == 1 && !written(n.outputs[0].id)) {
            auto [d, a, b] = *k;
            std::vector<std::pair<int64_t, int64_t>> rows = {{a, b}};
            reads.add(u.t.shape, d, 1, &rows, double(b - a));
            any = true;
          } else {
            return;
          }
          continue;
        }
        if (n.select_dim >= 0 && is_gather_source(n, u.arg)) {
          auto s = selections_.find({u.t.id, n.select_dim, n.select_ndims});
          if (s == selections_.end() || s->second->shape != u.t.shape) return;
          const Selection& sel = *s->second;
          reads.add(u.t.shape, sel.dim, sel.ndims, sel.has_ranges ? &sel.ranges : nullptr, sel.selected);
          any = true;
          continue;
        }
        auto r = catalogue().rules.find(n.op);
        if (r != catalogue().rules.end() && periodic_elementwise(n.op, r->second.family) &&
            !is_in_place(n.op) && n.outputs.size() == 1 && n.outputs[0].shape == u.t.shape) {
          ops.insert(u.op);
          follow(true);
          continue;
        }
        return;  // read otherwise: InputTraffic's rules
      }
    }
    // A partial trace whose chain reached no gather or slice yet has read none of
    // the input through it.
    if (!any && !(partial_ && !computed.empty())) return;
    const double numel = in.numel(), read = std::min(numel, reads.total());
    elements_[in.name] = read;
    const double f = numel > 0 ? read / numel : 1.0;
    for (size_t i : ops) {
      auto [it, fresh] = fraction_.emplace(i, f);
      if (!fresh) it->second = std::min(it->second, f);
    }
  }

  const OpGraph& g_;
  const bool partial_;  // the graph is a prefix of the run (OpGraph::partial_budget_s)
  std::unordered_map<int64_t, std::vector<Use>> consumers_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, const Selection*> selections_;
  std::set<int64_t> outputs_;
  std::map<std::string, double> elements_;
  std::unordered_map<size_t, double> fraction_;
};

// Which inputs are read in full, which only in part (through gathers or through
// views smaller than the input), and which are written in place.
class InputTraffic {
 public:
  InputTraffic(const OpGraph& g, const Demand& demand) : demand_(demand) {
    for (auto& t : g.inputs) {
      input_of_[t.id] = t.name;
      full_bytes_[t.name] = t.bytes();
    }
  }

  // The definition input whose storage `t` is (a view of), or nullptr.
  const std::string* root_input(const TensorRef& t) const {
    auto it = input_of_.find(t.base >= 0 ? t.base : t.id);
    if (it == input_of_.end()) it = input_of_.find(t.id);
    return it == input_of_.end() ? nullptr : &it->second;
  }

  // What op `n` reads of the inputs and writes into them.
  void record(const OpNode& n) {
    const bool view = is_view_op(n.op);
    const double count = double(n.count);
    for (auto& [k, v] : n.args.items()) {
      OpNode tmp;
      tmp.args = json::object({{k, v}});
      for (auto& t : tmp.tensor_args()) {
        const std::string* name = root_input(t);
        if (!name || demand_.elements(*name)) continue;  // selections alone read it
        const bool dest = k == "self" && is_in_place(n.op);
        if (view) {
          // A view of an input aliases it; record the alias so later uses count.
          for (auto& o : n.outputs) input_of_.emplace(o.id, *name);
        } else if (is_gather_source(n, k)) {
          double elem = dtype_bytes(t.dtype);
          for (auto& o : n.outputs) gathered_[*name] += o.numel() * elem * count;
        } else if (auto wb = dest ? pure_write_bytes(n, t) : std::nullopt; wb) {
          // Written without being read (a cache slot filled in place).
          written_[*name] += *wb * count;
        } else {
          double b = dest ? rmw_bytes(n, t) : t.bytes();
          // A slice of an input (b below its size) reads only the slice.
          if (b < full_bytes_[*name]) partial_[*name] += b * count;
          else fully_read_.insert(*name);
          if (dest) written_[*name] += b * count;
        }
      }
    }
  }

  // gc's input_touched_bytes and output_written_bytes.
  void finish(const OpGraph& g, const Ctx& ctx, GraphCost& gc) {
    for (auto& t : g.inputs) {
      double full = t.bytes();
      double touched =
          fully_read_.count(t.name) ? full : std::min(full, gathered_[t.name] + partial_[t.name]);
      if (const double* e = demand_.elements(t.name)) touched = std::min(full, *e * dtype_bytes(t.dtype));
      gc.input_touched_bytes[t.name] = touched;
    }
    // Outputs a kernel may write in part: a broadcast view (stride 0) holds only
    // its distinct elements, and so does an output whose values repeat along
    // dims (Ctx::period 1: an expanded size-1 dim, carried through casts and
    // elementwise operators) even where the reference materialised it, since
    // a kernel may return it as such a view; an output that aliases an input
    // updated in place (a cache returned after filling a few slots) needs only
    // the written bytes.
    for (auto& t : g.outputs) {
      if (t.name.empty()) continue;
      double declared = t.bytes(), least = declared;
      bool refined = false;
      if (t.distinct_numel >= 0) {
        least = std::min(least, t.distinct_numel * dtype_bytes(t.dtype));
        refined = true;
      }
      if (auto p = ctx.period.find(t.id); p != ctx.period.end() && p->second.size() == t.shape.size()) {
        double distinct = 1;
        for (size_t d = 0; d < t.shape.size(); ++d) distinct *= p->second[d] == 1 ? 1.0 : double(t.shape[d]);
        if (distinct < t.numel()) {
          least = std::min(least, distinct * dtype_bytes(t.dtype));
          refined = true;
        }
      }
      if (const std::string* in = root_input(t)) {
        least = std::min(least, written_[*in]);
        refined = true;
      }
      if (refined) gc.output_written_bytes[t.name] = least;
    }
  }

 private:
  // Root storage id -> definition input name (views of an input added as met).
  std::unordered_map<int64_t, std::string> input_of_;
  std::map<std::string, double> gathered_;  // input -> bytes read through gathers
  std::map<std::string, double> partial_;   // input -> bytes read through views smaller than it
  std::map<std::string, double> written_;   // input -> bytes written into it in place
  std::map<std::string, double> full_bytes_;
  std::set<std::string> fully_read_;
  const Demand& demand_;
};

}  // namespace

std::map<std::string, std::vector<std::string>> rule_catalogue() { return catalogue().families; }

GraphCost cost_graph(const OpGraph& g) {
  GraphCost gc;
  Ctx ctx;
  const auto& rules = catalogue().rules;
  const Demand demand(g);
  InputTraffic traffic(g, demand);
  const Rewrites rewrites(g);
  UniqueIds unique(g);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& n = g.ops[i];
    auto it = rules.find(n.op);
    const Rule* rule = it == rules.end() ? nullptr : &it->second;
    propagate_periods(n, rule ? rule->family : std::string(), unique, ctx);
    gc.ops.push_back(cost_op(i, n, rule, ctx, rewrites, demand.work_fraction(i), gc));
    // zeros_like(x) and the like use x's shape only: no read, no alias.
    if (!is_shape_only(n.op)) traffic.record(n);
    propagate_origin(n, ctx);
  }
  traffic.finish(g, ctx, gc);
  return gc;
}

}  // namespace solbench::sol
