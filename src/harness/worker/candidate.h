// What the worker calls: the solution (native entry, Python function, torch
// extension) or the reference, behind one interface so correctness rounds and the
// timing loop treat them alike. Worker-internal (uses pybind11 types); include only
// from the worker's sources.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/embed.h>

#define SB_NO_ABI_SYMBOL
#include "solbench/kernel.h"

namespace solbench::harness::detail {

namespace py = pybind11;

// A call of the candidate failed (Python exception, nonzero return code).
class CallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The text of the active Python exception with its traceback.
std::string python_error_text(const py::error_already_set& e);

class Candidate {
 public:
  virtual ~Candidate() = default;
  // Arguments of the next call (outside any measured span). `outputs` are
  // pre-allocated, poisoned tensors; return-style candidates ignore them.
  virtual void bind(const py::list& inputs, const py::list& outputs) = 0;
  // Drops what the last call was given and returned (its finalizers run now).
  virtual void release() = 0;
  // The call itself (the measured span). Throws CallError.
  virtual void invoke() = 0;
  // The outputs of the last call as a list of tensors in output order. Throws
  // CallError when a return-style result cannot be read as outputs.
  virtual py::list outputs() = 0;
  virtual bool destination_passing() const = 0;
};

// A Python callable: the reference, a Python-family solution, a torch extension.
// `workload` is the runtime.Workload whose collect() normalises returned outputs.
std::unique_ptr<Candidate> make_python_candidate(py::object fn, bool dps, py::object workload);

// A native entry (include/solbench/kernel.h). `input_dtypes` are the definition's
// input dtype names (scalars are passed as host 0-d tensors of that dtype);
// `stream` is passed through (nullptr on the CPU).
std::unique_ptr<Candidate> make_native_candidate(sb_entry_fn fn, py::module_ runtime,
                                                 std::vector<std::string> input_dtypes,
                                                 void* stream = nullptr);

}  // namespace solbench::harness::detail
