// A problem folder loaded and validated as a unit.
#include "core/problem.h"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "core/safetensors.h"

namespace solbench {

namespace fs = std::filesystem;

namespace {

using detail::join_path;

// Text with trailing whitespace removed from every line and trailing blank
// lines dropped, so an editor's final newline does not count as a difference.
std::string normalized_source(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('\n', pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view line = s.substr(pos, end - pos);
    size_t last = line.find_last_not_of(" \t\r");
    out.append(line.substr(0, last == std::string_view::npos ? 0 : last + 1));
    out.push_back('\n');
    pos = end + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void check_reference_file(const ProblemPaths& paths, const Definition& def, Diagnostics& diags) {
  const fs::path ref = paths.definition.parent_path() / "reference.py";
  std::error_code ec;
  if (!fs::is_regular_file(ref, ec)) return;
  std::string text;
  try {
    text = read_text_file(ref);
  } catch (const InputError& e) {
    diags.append(e.diagnostics());
    return;
  }
  if (normalized_source(text) != normalized_source(def.reference))
    diags.add(ref.string(), 0, "",
              fmt::format("differs from \"reference\" in {} (expected the same source text)",
                          paths.definition.string()));
}

// Safetensors inputs whose blob is present must match the definition's dtype
// and the resolved shape. Missing blobs are not an error here: evaluation
// reports those workloads as skipped.
void check_safetensors_inputs(const ProblemPaths& paths, const Workload& w,
                              const ResolvedWorkload& r, Diagnostics& diags) {
  const std::string file = paths.workloads.string();
  for (const auto& t : r.inputs) {
    const InputSource* src = w.input(t.name);
    if (!src || src->kind != InputKind::Safetensors) continue;
    const fs::path blob = blob_path(paths.dataset_root, *src);
    std::error_code ec;
    if (!fs::is_regular_file(blob, ec)) continue;
    const std::string path = join_path("inputs", t.name);
    try {
      SafetensorsFile f = SafetensorsFile::open(blob);
      const SafetensorsFile::Tensor* st = f.find(src->tensor_key);
      if (!st) {
        diags.add(file, w.line, join_path(path, "tensor_key"),
                  fmt::format("no tensor \"{}\" in {}", src->tensor_key, blob.string()));
        continue;
      }
      // Packed FP4x2 is stored as safetensors "F4" (one FP4 value per element), so
      // the blob's last dimension counts values: twice the definition's bytes.
      std::vector<int64_t> stored_shape = st->shape;
      DType stored_dtype = st->dtype;
      if (t.dtype == DType::Float4E2M1FNx2 && st->dtype == DType::Float4E2M1 &&
          !stored_shape.empty() && stored_shape.back() % 2 == 0) {
        stored_shape.back() /= 2;
        stored_dtype = DType::Float4E2M1FNx2;
      }
      if (stored_dtype != t.dtype)
        diags.add(file, w.line, path,
                  fmt::format("tensor \"{}\" in {} has dtype {} (expected {})", src->tensor_key,
                              blob.string(), st->dtype_name, dtype_name(t.dtype)));
      if (stored_shape != t.shape)
        diags.add(file, w.line, path,
                  fmt::format("tensor \"{}\" in {} has shape [{}] (expected [{}])", src->tensor_key,
                              blob.string(), fmt::join(st->shape, ", "), fmt::join(t.shape, ", ")));
    } catch (const InputError& e) {
      diags.append(e.diagnostics());
    }
  }
}

}  // namespace

ProblemPaths problem_paths(const fs::path& dir) {
  ProblemPaths p;
  p.definition = dir / "definition.json";
  p.workloads = dir / "workload.jsonl";
  // Safetensors paths are relative to the data set root: the folder above the
  // category folder (<root>/<category>/<problem>).
  fs::path abs = fs::absolute(dir).lexically_normal();
  if (!abs.has_filename()) abs = abs.parent_path();  // "a/b/" -> "a/b"
  p.dataset_root = abs.parent_path().parent_path();
  return p;
}

Problem load_problem(const ProblemPaths& paths, Diagnostics& diags) {
  Problem p;
  p.paths = paths;
  const size_t before = diags.size();
  p.definition = load_definition(paths.definition, diags);
  const bool definition_ok = diags.size() == before;
  if (definition_ok) check_reference_file(paths, p.definition, diags);

  const size_t before_workloads = diags.size();
  p.workloads = load_workloads(paths.workloads, diags);
  if (p.workloads.empty() && diags.size() == before_workloads)
    diags.add(paths.workloads.string(), 0, "", "no workloads (expected one JSON object per line)");

  // Checking workloads against a broken definition would only repeat its errors.
  const std::string file = paths.workloads.string();
  p.resolved.reserve(p.workloads.size());
  for (auto& w : p.workloads) {
    if (!definition_ok) {
      p.resolved.push_back(std::nullopt);
      continue;
    }
    auto r = check_and_resolve_workload(p.definition, w, file, diags);
    if (r) check_safetensors_inputs(paths, w, *r, diags);
    p.resolved.push_back(std::move(r));
    // Sources for inputs the definition lacks were warned about above; from here
    // on (evaluation, traces) the workload is as if they were not written.
    drop_unknown_inputs(p.definition, w);
  }
  return p;
}

std::string missing_blob(const Problem& problem, size_t i) {
  for (const auto& [name, src] : problem.workloads.at(i).inputs) {
    if (src.kind != InputKind::Safetensors) continue;
    const fs::path blob = blob_path(problem.paths.dataset_root, src);
    std::error_code ec;
    if (!fs::is_regular_file(blob, ec)) return "safetensors blob missing: " + blob.string();
  }
  return "";
}

bool is_problem_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "definition.json", ec);
}

std::vector<fs::path> find_problem_dirs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (is_problem_dir(root)) out.push_back(root);
  if (!fs::is_directory(root, ec)) return out;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& e = *it;
    if (!e.is_directory(ec)) continue;
    const std::string name = e.path().filename().string();
    if (!name.empty() && name[0] == '.') {
      it.disable_recursion_pending();  // .git, .cache and the like
      continue;
    }
    if (is_problem_dir(e.path())) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace solbench
