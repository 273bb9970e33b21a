#include "harness/worker/candidate.h"

#include <optional>

#include <pybind11/stl.h>

#include "core/dtype.h"

namespace solbench::harness::detail {

std::string python_error_text(const py::error_already_set& e) {
  // what() has the type, the message and (pybind11 >= 2.10) the traceback.
  return e.what();
}

namespace {

class PythonCandidate final : public Candidate {
 public:
  PythonCandidate(py::object fn, bool dps, py::object workload)
      : fn_(std::move(fn)), dps_(dps), workload_(std::move(workload)) {}

  void bind(const py::list& inputs, const py::list& outputs) override {
    py::list args;
    for (auto v : inputs) args.append(v);
    if (dps_)
      for (auto v : outputs) args.append(v);
    args_ = py::tuple(args);
    outs_ = outputs;
    result_ = py::none();
  }
  void release() override {
    args_ = py::tuple();
    outs_ = py::list();
    result_ = py::none();
  }

  void invoke() override {
    try {
      result_ = fn_(*args_);
    } catch (py::error_already_set& e) {
      throw CallError(python_error_text(e));
    }
  }

  py::list outputs() override {
    try {
      return workload_.attr("collect")(result_, outs_, dps_).cast<py::list>();
    } catch (py::error_already_set& e) {
      throw CallError("the outputs cannot be read: " + python_error_text(e));
    }
  }

  bool destination_passing() const override { return dps_; }

 private:
  py::object fn_;
  bool dps_;
  py::object workload_;
  py::tuple args_;
  py::list outs_;
  py::object result_ = py::none();
};

class NativeCandidate final : public Candidate {
 public:
  NativeCandidate(sb_entry_fn fn, py::module_ runtime, std::vector<std::string> input_dtypes,
                  void* stream)
      : fn_(fn), runtime_(std::move(runtime)), dtypes_(std::move(input_dtypes)), stream_(stream) {}

  void bind(const py::list& inputs, const py::list& outputs) override {
    outs_ = outputs;
    py::list dtypes;
    for (const auto& d : dtypes_) dtypes.append(d);
    // (keepalive, [(ptr, dtype, shape, strides, device_index)]) for inputs then outputs.
    py::tuple in = runtime_.attr("native_args")(inputs, dtypes).cast<py::tuple>();
    py::tuple out = runtime_.attr("native_args")(outputs, py::none()).cast<py::tuple>();
    keepalive_ = py::make_tuple(in[0], out[0]);
    fill(in[1].cast<py::list>(), inputs_, in_dims_);
    fill(out[1].cast<py::list>(), outputs_, out_dims_);
  }
  void release() override {
    outs_ = py::list();
    keepalive_ = py::none();
    inputs_.clear();
    outputs_.clear();
  }

  void invoke() override {
    const int rc = fn_(inputs_.data(), static_cast<int32_t>(inputs_.size()), outputs_.data(),
                       static_cast<int32_t>(outputs_.size()), stream_);
    if (rc != 0) throw CallError("the entry function returned error code " + std::to_string(rc));
  }

  py::list outputs() override { return outs_; }
  bool destination_passing() const override { return true; }

 private:
  // Shapes and strides live in `dims` (two vectors per tensor) so the views'
  // pointers stay valid until the next bind().
  static void fill(const py::list& views, std::vector<sb_tensor>& ts,
                   std::vector<std::vector<int64_t>>& dims) {
    ts.assign(views.size(), sb_tensor{});
    dims.assign(2 * views.size(), {});
    for (size_t i = 0; i < views.size(); ++i) {
      py::tuple v = views[i].cast<py::tuple>();
      sb_tensor& t = ts[i];
      t.data = reinterpret_cast<void*>(v[0].cast<uintptr_t>());
      const std::string dtype = v[1].cast<std::string>();
      auto dt = parse_dtype(dtype);
      t.dtype = dt ? dtype_info(*dt).kernel_code : -1;
      dims[2 * i] = v[2].cast<std::vector<int64_t>>();
      dims[2 * i + 1] = v[3].cast<std::vector<int64_t>>();
      t.ndim = static_cast<int32_t>(dims[2 * i].size());
      t.shape = t.ndim ? dims[2 * i].data() : nullptr;
      t.strides = t.ndim ? dims[2 * i + 1].data() : nullptr;
      t.device = v[4].cast<int32_t>();
    }
  }

  sb_entry_fn fn_;
  py::module_ runtime_;
  std::vector<std::string> dtypes_;
  void* stream_;
  py::list outs_;
  py::object keepalive_ = py::none();
  std::vector<sb_tensor> inputs_, outputs_;
  std::vector<std::vector<int64_t>> in_dims_, out_dims_;
};

}  // namespace

std::unique_ptr<Candidate> make_python_candidate(py::object fn, bool dps, py::object workload) {
  return std::make_unique<PythonCandidate>(std::move(fn), dps, std::move(workload));
}

std::unique_ptr<Candidate> make_native_candidate(sb_entry_fn fn, py::module_ runtime,
                                                 std::vector<std::string> input_dtypes,
                                                 void* stream) {
  return std::make_unique<NativeCandidate>(fn, std::move(runtime), std::move(input_dtypes),
                                           stream);
}

}  // namespace solbench::harness::detail
