// The precompiled <torch/extension.h> of torch-extension builds (GCC only;
// docs/native-binding.md). A .cpp source whose first directive includes it is
// compiled with `-include <pch>` when one was made with the same compiler, flags
// and torch; it lives in <build cache>/.pch/<key>/. The first cold build that
// could use one leaves a marker, the next makes it beside the sources when a CPU
// is spare ($SOLBENCH_TORCH_PCH: "1" makes it at once, "0" never uses one); the
// kPchKeep most recently used are kept.
//
//   starts_with_torch_include, affects_header_lookup, is_gcc   when one may be used
//   TorchPch   plan, include_flags, steps (the one that makes it), finish, abandon
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/build/builder.h"
#include "harness/toolchain.h"

namespace solbench::harness::build_internal {

// Whether a source's first directive (after comments and blank lines) is
// #include <torch/extension.h>: then a precompiled header of it changes nothing.
bool starts_with_torch_include(const std::string& source);
// Flags that change where headers come from or what is included first: a PCH made
// without the solution's sources could then differ from including the header.
bool affects_header_lookup(const std::vector<std::string>& flags);
// Whether `--version` output is GCC's.
bool is_gcc(const std::string& version);

inline constexpr int kPchKeep = 4;  // precompiled headers kept (the least recently used go first)

class TorchPch {
 public:
  explicit TorchPch(Builder& b) : b_(b) {}

  // Decides for this build: use a published PCH, make one beside the sources, or
  // neither (the log says which). `compiler`: the host compiler {path, --version};
  // `flags`: its command for the PCH (without what differs between solutions: the
  // module name, the staging folder).
  void plan(const TorchSettings& ts, const std::pair<std::string, std::string>& compiler,
            const std::vector<std::string>& flags);
  // `-include <pch>` for `source` when it may use a published PCH; else nothing.
  std::vector<std::string> include_flags(const std::string& source) const;
  // The step that makes a PCH (none or one), to run beside the sources.
  std::vector<Step>* steps() { return &build_; }
  // After the compile: stores a finished PCH (even when a source failed: it is as
  // good for the next build), forgets a failed one.
  void finish();
  // Nothing was compiled: drops the step's folder.
  void abandon();

 private:
  bool usable(const std::pair<std::string, std::string>& compiler) const;
  void plan_build(const std::vector<std::string>& flags);

  Builder& b_;
  std::set<std::string> sources_;  // the .cpp sources that may use one
  std::filesystem::path header_;   // set when a published PCH is used
  std::vector<Step> build_;
  std::filesystem::path tmp_;      // where build_ writes
  std::string key_;
  std::optional<BuildCache> cache_;  // <build cache>/.pch
  std::optional<bool> mode_;       // $SOLBENCH_TORCH_PCH (settings.h torch_pch)
  std::string torch_version_;
};

}  // namespace solbench::harness::build_internal
