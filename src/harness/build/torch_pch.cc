#include "harness/build/torch_pch.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "core/settings.h"
#include "harness/sha256.h"
#include "harness/staging.h"

namespace solbench::harness::build_internal {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPchHeader = "torch_extension.h";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

fs::path gch_of(const fs::path& folder) { return folder / (std::string(kPchHeader) + ".gch"); }

// Keeps the `keep` most recently used entries of the PCH cache; entries used in the
// last hour stay regardless (a build may be reading them).
void prune_pch_cache(const fs::path& root, int keep) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n[0] == '.' || !e.is_directory(ec)) continue;
    entries.emplace_back(fs::last_write_time(e.path(), ec), e.path());
  }
  if (static_cast<int>(entries.size()) <= keep) return;
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.first > b.first; });
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (size_t i = static_cast<size_t>(keep); i < entries.size(); ++i)
    if (entries[i].first < hour_ago) remove_tree_quietly(entries[i].second);
}

}  // namespace

bool starts_with_torch_include(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  for (;;) {
    while (i < n && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) return false;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      i = s.find("*/", i + 2);
      if (i == std::string::npos) return false;
      i += 2;
      continue;
    }
    break;
  }
  if (i >= n || s[i] != '#') return false;
  ++i;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (s.compare(i, 7, "include") != 0) return false;
  i += 7;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.compare(i, 19, "<torch/extension.h>") == 0 || s.compare(i, 19, "\"torch/extension.h\"") == 0;
}

bool affects_header_lookup(const std::vector<std::string>& flags) {
  return has_prefix_flag(flags, {"-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros",
                                 "--include", "-nostdinc", "-iprefix", "-iwithprefix"});
}

bool is_gcc(const std::string& version) {
  const std::string v = lower(version);
  return v.find("clang") == std::string::npos &&
         (v.find("g++") != std::string::npos || v.find("gcc") != std::string::npos ||
          v.find("free software foundation") != std::string::npos);
}

bool TorchPch::usable(const std::pair<std::string, std::string>& compiler) const {
  return !sources_.empty() && b_.opts.torch_pch && mode_ != false && b_.cache && is_gcc(compiler.second) &&
         !affects_header_lookup(b_.sol.spec.compile_options.cflags);
}

void TorchPch::plan(const TorchSettings& ts, const std::pair<std::string, std::string>& compiler,
                    const std::vector<std::string>& flags) {
  for (const auto& s : b_.sol.sources)
    if (kind_of(s.path) == SrcKind::Cxx && starts_with_torch_include(s.content)) sources_.insert(s.path);
  mode_ = settings().torch_pch;
  torch_version_ = ts.version;
  if (!usable(compiler)) return;
  cache_.emplace(b_.cache->root() / ".pch");
  Sha256 h;
  h.field("solbench-torch-pch/1").field(compiler.first).field(compiler.second);
  h.field(ts.text).field(ts.origin + "\n");
  for (const auto& f : flags) h.field(f);
  key_ = h.hex_digest();
  std::error_code ec;
  if (auto entry = cache_->lookup(key_); entry && is_file(gch_of(*entry))) {
    header_ = *entry / kPchHeader;
    fs::last_write_time(*entry, fs::file_time_type::clock::now(), ec);  // recently used
    b_.log += "using the precompiled <torch/extension.h> " + header_.string() + ".gch\n";
  } else {
    plan_build(flags);
  }
}

// No PCH for these flags yet: the first cold build leaves a marker, a later one
// (or any, with $SOLBENCH_TORCH_PCH=1) makes it when a CPU is spare.
void TorchPch::plan_build(const std::vector<std::string>& flags) {
  std::error_code ec;
  const fs::path marker = cache_->root() / (key_ + ".wanted");
  size_t compiled = 0;
  for (const auto& s : b_.sol.sources) compiled += kind_of(s.path) != SrcKind::Other;
  const bool eager = mode_ == true;
  const bool wanted_before = is_file(marker);
  if (!eager && !wanted_before) {
    fs::create_directories(cache_->root(), ec);
    try {
      write_text_file(marker, b_.sol.name + "\n");
    } catch (const std::exception&) {
      // Only a hint for the next build.
    }
    b_.log += "no precompiled <torch/extension.h> for these flags yet; the next cold build with "
              "them makes one\n";
  } else if (static_cast<size_t>(b_.jobs()) <= compiled) {
    b_.log += "no CPU to spare for precompiling <torch/extension.h> in this build\n";
  } else {
    try {
      tmp_ = cache_->make_temp_dir();
      write_text_file(tmp_ / kPchHeader, "#include <torch/extension.h>\n");
      Step st;
      st.what = "precompiling <torch/extension.h>";
      st.optional = true;
      st.argv = flags;
      append(st.argv, {"-x", "c++-header", (tmp_ / kPchHeader).string(), "-o", gch_of(tmp_).string()});
      build_.push_back(std::move(st));
      b_.log += "building a precompiled <torch/extension.h> beside the sources, for later builds "
                "with these flags\n";
    } catch (const std::exception& e) {  // a PCH is never worth failing the build
      if (!tmp_.empty()) remove_tree_quietly(tmp_);
      tmp_.clear();
      b_.log += std::string("not precompiling <torch/extension.h>: ") + e.what() + "\n";
    }
  }
}

std::vector<std::string> TorchPch::include_flags(const std::string& source) const {
  if (!header_.empty() && sources_.count(source)) return {"-include", header_.string()};
  return {};
}

void TorchPch::finish() {
  if (tmp_.empty()) return;
  if (!build_.empty() && build_[0].ok) {
    try {
      std::error_code ec;
      const auto bytes = fs::file_size(gch_of(tmp_), ec);
      const fs::path entry =
          cache_->publish(key_, tmp_, json{{"torch", torch_version_}, {"bytes", ec ? 0 : bytes}});
      fs::remove(cache_->root() / (key_ + ".wanted"), ec);
      b_.log += "stored the precompiled <torch/extension.h> in " + entry.string() + " (" +
                std::to_string((ec ? 0 : bytes) >> 20) + " MiB)\n";
      prune_pch_cache(cache_->root(), kPchKeep);
    } catch (const std::exception& e) {
      remove_tree_quietly(tmp_);
      b_.log += std::string("could not store the precompiled header: ") + e.what() + "\n";
    }
  } else {
    // Failed or stopped: the next cold builds start over (marker, then a try).
    remove_tree_quietly(tmp_);
    std::error_code ec;
    fs::remove(cache_->root() / (key_ + ".wanted"), ec);
  }
}

void TorchPch::abandon() {
  if (!tmp_.empty()) remove_tree_quietly(tmp_);
}

}  // namespace solbench::harness::build_internal
