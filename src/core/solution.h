// solution.json: a candidate implementation (sources and build spec).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/json.h"

namespace solbench {

enum class Language {
  // Python family
  Pytorch, Triton, CuteDsl, Cutile, CudnnFrontend,
  // C++ family
  CudaCpp, Cutlass, Cudnn, Cublas,
  Cpp,  // [ext] host C++ on the CPU
};
enum class LanguageFamily { Python, Cpp };

std::string_view language_name(Language l);
std::optional<Language> parse_language(std::string_view name);
LanguageFamily language_family(Language l);

// "torch" (public format: torch::Tensor arguments) or "native" [ext]
// (plain C tensor views, include/solbench/kernel.h).
enum class Binding { Torch, Native };

struct CompileOptions {
  std::vector<std::string> cflags;
  std::vector<std::string> cuda_cflags{"-O3", "--use_fast_math"};
  std::vector<std::string> ld_flags{"-lcuda"};
  bool operator==(const CompileOptions&) const = default;
};

struct BuildSpec {
  std::vector<Language> languages;
  std::vector<std::string> target_hardware;
  std::string entry_point;     // "file::function" as written
  std::string entry_file;      // parsed from entry_point
  std::string entry_function;  // parsed from entry_point
  bool destination_passing_style = true;
  Binding binding = Binding::Torch;
  std::vector<std::string> dependencies;
  CompileOptions compile_options;
  json extra = json::object();

  LanguageFamily family() const;  // of languages[0]; mixing is rejected at parse
  bool has_language(Language l) const;
  bool operator==(const BuildSpec&) const = default;
};

struct SourceFile {
  std::string path;
  std::string content;
  bool operator==(const SourceFile&) const = default;
};

struct Solution {
  std::string name;
  std::string definition;
  std::string author;
  std::string description;
  BuildSpec spec;
  std::vector<SourceFile> sources;
  json extra = json::object();

  const SourceFile* find_source(std::string_view path) const;
  bool operator==(const Solution&) const = default;
};

// A source path must be relative, non-empty, without "..", "." or empty
// components, backslashes, NUL or control characters. Returns the reason when unsafe.
std::optional<std::string> unsafe_source_path_reason(std::string_view path);

Solution parse_solution(const json& j, const std::string& file, Diagnostics& diags);
Solution load_solution(const std::filesystem::path& path, Diagnostics& diags);
json to_json(const Solution& s);

}  // namespace solbench
