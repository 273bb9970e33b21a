// Tracing a problem's PyTorch reference into an operator graph, through the
// embedded Python (src/bridge/python.h) and solbench_py.tracer.
#pragma once

#include <filesystem>
#include <string>

#include "core/definition.h"
#include "core/resolve.h"
#include "core/workload.h"
#include "sol/op_graph.h"

namespace solbench::sol {

// The JSON request solbench_py.tracer.trace() takes: the reference, every
// input with its concrete shape, dtype and source kind (scalars with their
// value), the outputs, and the axis/scalar dict custom inputs are built from
// (empty when the tracer does not read it: no custom inputs, no safetensors
// index stand-ins). Two workloads with equal requests trace to equal graphs.
// Integer and bool safetensors inputs whose blob is present under
// `dataset_root` are named by absolute path, key and content hash (the tracer
// reads their values).
json trace_request(const Definition& def, const Workload& w, const ResolvedWorkload& r,
                   const std::string& mode = "auto", const std::filesystem::path& dataset_root = {});

// Runs the tracer. A missing Python or torch gives status "untraceable" with
// the reason; an exception in the reference gives status "error".
OpGraph trace_reference(const json& request);

// Starts the embedded Python and imports the tracer (and torch) without
// tracing anything, so that a later trace_reference() pays for tracing only
// (`solbench sol` tracer processes do this before their time limit starts).
// Failures are left for trace_reference() to report.
void warm_up_tracer();

// Content hash of the tracer's Python source (part of the graph cache key).
std::string tracer_version();

}  // namespace solbench::sol
