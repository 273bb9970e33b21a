// `solbench pack`: writes a solution.json from source files on disk, so that nobody
// embeds sources as JSON strings by hand; `solbench pack --unpack` writes a
// solution's sources back out. The solution is checked with the code `validate`
// runs (parse_solution) before anything is written (docs/formats.md, "Writing a
// solution").
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/definition.h"
#include "core/json.h"
#include "core/solution.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct PackOptions {
  std::string problem;               // problem folder or its definition.json
  std::vector<std::string> sources;  // files and folders
  std::string output;                // solution.json ("-": stdout); the folder with --unpack
  std::string unpack;                // --unpack SOLUTION
  std::string root;
  std::string name;
  std::string author;
  std::string description;
  std::string entry;
  std::vector<std::string> languages;
  std::vector<std::string> target_hardware;
  std::string binding;
  std::vector<std::string> dependencies;
  std::string cflags, cuda_cflags, ld_flags;  // whitespace-separated; used when given
  bool dps = true;
  bool force = false;
};

// The flags that describe the solution; --unpack takes none of them.
constexpr const char* kPackOnlyFlags[] = {
    "--root",       "--name",     "--author",          "--description",
    "--entry",      "--language", "--target-hardware", "--binding",
    "--dependency", "--cflags",   "--cuda-cflags",     "--ld-flags",
    "--dps"};

[[noreturn]] void usage(const std::string& message) { throw CLI::ValidationError("pack", message); }

// --- reading sources -------------------------------------------------------------

// One source file: where it is on disk and the path it gets in the solution.
struct DiskSource {
  fs::path absolute;    // lexically normal
  std::string display;  // as the user named it (the argument, or folder/relative)
  std::string stored;   // relative to the root, '/'-separated
};

// Absolute and lexically normal, without a trailing separator ("/a/b/." is "/a/b").
fs::path absolute_normal(const fs::path& p) {
  fs::path n = fs::absolute(p).lexically_normal();
  return n.has_filename() || n == n.root_path() ? n : n.parent_path();
}

// `p` relative to the current folder when it is inside it, else absolute.
std::string display_path(const fs::path& p) {
  const fs::path rel = p.lexically_relative(absolute_normal("."));
  const std::string r = rel.generic_string();
  return rel.empty() || r == ".." || r.rfind("../", 0) == 0 ? p.string() : r;
}

// The offset of the first byte that is not part of well-formed UTF-8, if any.
// Sources are JSON strings, which hold text only.
std::optional<size_t> invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return i;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return i;  // overlong, surrogate
    i += len;
  }
  return std::nullopt;
}

bool skipped_in_folder(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.empty() || name[0] == '.' || name == "__pycache__" || p.extension() == ".pyc";
}

// The files of the SOURCE arguments in order (a folder's files sorted, hidden files,
// __pycache__ and `skip`, the output file, left out), each once. `folders` gets the
// folder each argument stands for (a file's parent, a folder itself).
std::vector<DiskSource> list_sources(const std::vector<std::string>& args, const fs::path& skip,
                                     std::vector<fs::path>& folders) {
  std::vector<DiskSource> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p, std::string display) {
    fs::path abs = absolute_normal(p);
    if (abs != skip && seen.insert(abs).second) out.push_back({abs, std::move(display), ""});
  };
  for (const auto& arg : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    if (fs::is_directory(st)) {
      std::vector<fs::path> files;
      fs::recursive_directory_iterator it(arg, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        if (skipped_in_folder(it->path())) {
          if (it->is_directory(ec)) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file(ec)) files.push_back(it->path());
      }
      if (ec) throw InputError(arg, 0, "", "cannot list the folder: " + ec.message());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw InputError(arg, 0, "", "the folder has no source files");
      for (const auto& f : files) add(f, f.string());
      folders.push_back(absolute_normal(arg));
    } else if (fs::is_regular_file(st)) {
      add(arg, arg);
      folders.push_back(absolute_normal(arg).parent_path());
    } else {
      throw InputError(arg, 0, "",
                       fs::exists(st) ? "not a file or folder" : "no such file or folder");
    }
  }
  return out;
}

// The deepest folder that holds every one of `folders`.
fs::path common_folder(const std::vector<fs::path>& folders) {
  fs::path common = folders.front();
  for (const auto& f : folders) {
    fs::path shared;
    auto a = common.begin(), b = f.begin();
    for (; a != common.end() && b != f.end() && *a == *b; ++a, ++b) shared /= *a;
    common = shared;
  }
  return common;
}

// Sets each source's stored path, relative to `root`.
void assign_stored_paths(std::vector<DiskSource>& sources, const fs::path& root) {
  Diagnostics diags;
  for (auto& s : sources) {
    const fs::path rel = s.absolute.lexically_relative(root);
    const std::string p = rel.generic_string();
    if (rel.empty() || p == ".." || p.rfind("../", 0) == 0) {
      diags.add(s.display, 0, "",
                fmt::format("is outside the root folder {} (give --root a folder that holds "
                            "every source)",
                            display_path(root)));
    } else if (auto why = unsafe_source_path_reason(p)) {
      diags.add(s.display, 0, "", fmt::format("cannot be stored as \"{}\": {}", p, *why));
    }
    s.stored = p;
  }
  if (!diags.empty()) throw InputError(diags);
}

std::vector<SourceFile> read_sources(const std::vector<DiskSource>& sources) {
  Diagnostics diags;
  std::vector<SourceFile> out;
  for (const auto& s : sources) {
    std::string text = read_text_file(s.absolute);
    if (auto at = invalid_utf8_at(text))
      diags.add(s.display, 0, "",
                fmt::format("not UTF-8 text (byte {}): a source is stored as a JSON string "
                            "(sources[{}].content), so it must be text",
                            *at, out.size()));
    out.push_back({s.stored, std::move(text)});
  }
  if (!diags.empty()) throw InputError(diags);
  return out;
}

// --- what the sources say ----------------------------------------------------------

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    f(trim_left(text.substr(0, nl)));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

bool is_module(std::string_view name, std::string_view module) {
  return name == module || (name.size() > module.size() &&
                            name.substr(0, module.size()) == module && name[module.size()] == '.');
}

// `import triton`, `import triton.language as tl`, `import torch, triton`, `from triton import
// jit`.
bool imports_triton(std::string_view python) {
  bool found = false;
  for_each_line(python, [&](std::string_view line) {
    if (line.rfind("from ", 0) == 0) {
      line = trim_left(line.substr(5));
      found = found || is_module(line.substr(0, line.find_first_of(" \t")), "triton");
    } else if (line.rfind("import ", 0) == 0) {
      line = line.substr(7);
      while (!line.empty()) {
        const size_t comma = line.find(',');
        std::string_view item = trim_left(line.substr(0, comma));
        found = found || is_module(item.substr(0, item.find_first_of(" \t#")), "triton");
        if (comma == std::string_view::npos) break;
        line.remove_prefix(comma + 1);
      }
    }
  });
  return found;
}

bool includes_kernel_header(std::string_view source) {
  bool found = false;
  for_each_line(source, [&](std::string_view line) {
    found = found || (line.rfind("#include", 0) == 0 &&
                      line.find("solbench/kernel.h") != std::string_view::npos);
  });
  return found;
}

bool has_extension(std::string_view path, std::initializer_list<std::string_view> exts) {
  const std::string ext = fs::path(path).extension().string();
  return std::find(exts.begin(), exts.end(), ext) != exts.end();
}

bool is_python(std::string_view path) { return has_extension(path, {".py"}); }
bool is_cuda(std::string_view path) { return has_extension(path, {".cu", ".cuh"}); }
bool is_cxx(std::string_view path) { return has_extension(path, {".cc", ".cpp", ".cxx", ".c"}); }

std::string known_languages() {
  std::string s;
  for (auto l : {Language::Pytorch, Language::Triton, Language::CuteDsl, Language::Cutile,
                 Language::CudnnFrontend, Language::CudaCpp, Language::Cutlass, Language::Cudnn,
                 Language::Cublas, Language::Cpp})
    s += (s.empty() ? "" : ", ") + std::string(language_name(l));
  return s + " (cuda means cuda_cpp)";
}

// --language values; "cuda" is read as "cuda_cpp".
std::vector<Language> parse_languages(const std::vector<std::string>& names) {
  std::vector<Language> out;
  for (const auto& n : names) {
    auto l = parse_language(n == "cuda" ? "cuda_cpp" : n);
    if (!l)
      usage(fmt::format("--language {}: unknown language (expected one of {})", n,
                        known_languages()));
    if (std::find(out.begin(), out.end(), *l) == out.end()) out.push_back(*l);
  }
  return out;
}

struct Inferred {
  std::vector<Language> languages;
  std::string why;  // for the summary: what the choice was made from
};

// The language from the entry file's extension: .py is pytorch, or triton when a
// Python source imports triton; .cu/.cuh cuda_cpp; .cc/.cpp/.cxx/.c cpp (host code),
// or cuda_cpp when a .cu source is among them (cpp builds no CUDA).
Inferred infer_language(const std::string& entry_file, const std::vector<SourceFile>& sources) {
  if (is_python(entry_file)) {
    for (const auto& s : sources)
      if (is_python(s.path) && imports_triton(s.content))
        return {{Language::Triton}, s.path + " imports triton"};
    return {{Language::Pytorch}, "entry file is Python and imports no triton"};
  }
  if (is_cuda(entry_file)) return {{Language::CudaCpp}, "entry file is CUDA"};
  if (is_cxx(entry_file)) {
    for (const auto& s : sources)
      if (is_cuda(s.path))
        return {{Language::CudaCpp}, "C++ entry file beside CUDA source " + s.path};
    return {{Language::Cpp}, "entry file is C++ and no source is CUDA"};
  }
  usage(fmt::format(
      "--entry: cannot infer the language from the entry file \"{}\" (.py gives pytorch or "
      "triton, .cu cuda_cpp, .cc/.cpp/.cxx cpp): give --language, one of {}",
      entry_file, known_languages()));
}

// Where a solution runs unless --target-hardware says otherwise, as the bundled
// solutions do: host C++ on the CPU, everything else on a CUDA GPU.
std::vector<std::string> default_targets(const std::vector<Language>& languages) {
  return std::find(languages.begin(), languages.end(), Language::Cpp) != languages.end()
             ? std::vector<std::string>{"cpu"}
             : std::vector<std::string>{"cuda"};
}

std::vector<std::string> split_flags(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    i = s.find_first_not_of(" \t\n", i);
    if (i == std::string::npos) break;
    const size_t end = s.find_first_of(" \t\n", i);
    out.push_back(s.substr(i, end == std::string::npos ? end : end - i));
    i = end;
  }
  return out;
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// True when `text` has `word` as a whole identifier.
bool mentions_identifier(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !is_identifier_char(text[at - 1]);
    const size_t end = at + word.size();
    if (left && (end == text.size() || !is_identifier_char(text[end]))) return true;
  }
  return false;
}

// --- pack ----------------------------------------------------------------------------

// PROBLEM: a problem folder, or a definition.json.
fs::path definition_path(const std::string& problem) {
  std::error_code ec;
  const auto st = fs::status(problem, ec);
  if (!fs::exists(st))
    throw InputError(problem, 0, "",
                     "no such problem folder (expected a folder with a definition.json)");
  return fs::is_directory(st) ? fs::path(problem) / "definition.json" : fs::path(problem);
}

void check_output(const std::string& output, bool force) {
  if (output == "-") return;
  std::error_code ec;
  const auto st = fs::status(output, ec);
  if (fs::is_directory(st))
    throw InputError(output, 0, "", "is a folder (-o names the solution.json to write)");
  if (fs::exists(st) && !force)
    throw InputError(output, 0, "", "already exists (give --force to overwrite it)");
}

// The stored path of --entry's FILE: a stored path as is, or a source's path on disk
// (as given or any spelling of it). Empty when it names none of the sources.
std::string entry_stored_path(const std::string& file, const std::vector<DiskSource>& sources) {
  for (const auto& s : sources)
    if (s.stored == file) return s.stored;
  const fs::path abs = absolute_normal(file);
  for (const auto& s : sources)
    if (s.absolute == abs) return s.stored;
  return "";
}

// --entry FILE::FUNCTION split; a usage error unless it has exactly one "::".
std::pair<std::string, std::string> split_entry(const std::string& entry) {
  const size_t sep = entry.find("::");
  if (sep == std::string::npos || entry.find("::", sep + 2) != std::string::npos || sep == 0 ||
      sep + 2 == entry.size())
    usage(fmt::format("--entry \"{}\": expected FILE::FUNCTION, e.g. kernel.cu::run", entry));
  return {entry.substr(0, sep), entry.substr(sep + 2)};
}

// A warning when the entry file does not define FUNCTION: Python needs a top-level
// `def FUNCTION(`; for C++ the name must at least appear.
void warn_unless_defined(const std::vector<DiskSource>& disk, const Solution& s,
                         const std::string& file, const std::string& function, Diagnostics& diags) {
  const SourceFile* src = s.find_source(file);
  const auto on_disk =
      std::find_if(disk.begin(), disk.end(), [&](const DiskSource& d) { return d.stored == file; });
  if (!src || on_disk == disk.end()) return;
  if (is_python(file) && !detail::defines_python_function(src->content, function))
    diags.warn(on_disk->display, 0, "spec.entry_point",
               fmt::format("no top-level \"def {}(\" in the entry file", function));
  else if (!is_python(file) && !mentions_identifier(src->content, function))
    diags.warn(on_disk->display, 0, "spec.entry_point",
               fmt::format("the entry file never mentions \"{}\"", function));
}

void print_diagnostics(const Diagnostics& d) {
  for (const auto& e : d.items()) fmt::print(stderr, "error: {}\n", e.str());
  for (const auto& w : d.warnings()) fmt::print(stderr, "warning: {}\n", w.str());
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

// The files to pack, with their stored paths set. Without SOURCE, the entry file
// alone is the solution.
std::vector<DiskSource> collect_sources(const PackOptions& o, const std::string& entry_file,
                                        fs::path& root) {
  const std::vector<std::string> args = o.sources.empty() ? std::vector{entry_file} : o.sources;
  std::vector<fs::path> folders;
  const fs::path skip = o.output == "-" ? fs::path() : absolute_normal(o.output);
  std::vector<DiskSource> disk = list_sources(args, skip, folders);
  if (disk.empty()) throw InputError(o.output, 0, "sources", "no source files left to pack");
  root = o.root.empty() ? common_folder(folders) : absolute_normal(o.root);
  assign_stored_paths(disk, root);
  return disk;
}

// How the spec's values were chosen, for the summary.
struct Reasons {
  std::string language = "--language";
  std::string binding = "--binding";
};

// The spec from the flags, and where a flag is absent from the sources.
BuildSpec make_spec(const PackOptions& o, const CLI::App& cmd,
                    const std::vector<SourceFile>& sources, const std::string& entry_point,
                    Reasons& why) {
  BuildSpec spec;
  const std::string entry_file = entry_point.substr(0, entry_point.find("::"));
  spec.languages = parse_languages(o.languages);
  if (spec.languages.empty()) {
    Inferred inf = infer_language(entry_file, sources);
    spec.languages = inf.languages;
    why.language = inf.why;
  }
  spec.target_hardware =
      o.target_hardware.empty() ? default_targets(spec.languages) : o.target_hardware;
  spec.entry_point = entry_point;
  spec.destination_passing_style = o.dps;
  spec.dependencies = o.dependencies;
  if (!o.binding.empty()) {
    spec.binding = o.binding == "native" ? Binding::Native : Binding::Torch;
  } else if (spec.family() == LanguageFamily::Python) {
    why.binding = "Python family";
  } else {
    const auto native = std::find_if(sources.begin(), sources.end(), [](const SourceFile& f) {
      return includes_kernel_header(f.content);
    });
    spec.binding = native != sources.end() ? Binding::Native : Binding::Torch;
    why.binding = native != sources.end() ? native->path + " includes solbench/kernel.h"
                                          : "no source includes solbench/kernel.h";
  }
  if (cmd.count("--cflags")) spec.compile_options.cflags = split_flags(o.cflags);
  if (cmd.count("--cuda-cflags")) spec.compile_options.cuda_cflags = split_flags(o.cuda_cflags);
  if (cmd.count("--ld-flags")) spec.compile_options.ld_flags = split_flags(o.ld_flags);
  return spec;
}

void print_summary(std::FILE* to, const std::string& out, const Solution& s, const fs::path& root,
                   const Reasons& why, bool default_targets) {
  std::vector<std::string> langs, paths;
  for (auto l : s.spec.languages) langs.emplace_back(language_name(l));
  for (const auto& f : s.sources) paths.push_back(f.path);
  fmt::print(to, "wrote {}: solution \"{}\" for \"{}\"\n", out, s.name, s.definition);
  fmt::print(to, "  entry_point {}, {} source{} (root {}): {}\n", s.spec.entry_point, paths.size(),
             paths.size() == 1 ? "" : "s", display_path(root), join(paths));
  fmt::print(to,
             "  languages {} ({}); target_hardware {}{}; binding {} ({}); "
             "destination_passing_style {}\n",
             join(langs), why.language, join(s.spec.target_hardware),
             default_targets ? " (default)" : "",
             s.spec.binding == Binding::Native ? "native" : "torch", why.binding,
             s.spec.destination_passing_style ? "true" : "false");
}

int run_pack(const PackOptions& o, const CLI::App& cmd) {
  if (o.problem.empty()) usage("give the problem folder (PROBLEM) the solution is for");
  if (o.entry.empty()) usage("give --entry FILE::FUNCTION, e.g. --entry kernel.cu::run");
  if (o.output.empty()) usage("give -o FILE, the solution.json to write (\"-\": standard output)");
  if (!o.binding.empty() && o.binding != "torch" && o.binding != "native")
    usage(fmt::format("--binding {}: expected torch or native", o.binding));
  const auto [entry_file, entry_function] = split_entry(o.entry);
  parse_languages(o.languages);  // usage errors before any file is read

  Diagnostics diags;
  const Definition def = load_definition(definition_path(o.problem), diags);
  if (!diags.empty()) throw InputError(diags);
  check_output(o.output, o.force);
  fs::path root;
  const std::vector<DiskSource> disk = collect_sources(o, entry_file, root);
  const std::string out_label = o.output == "-" ? "<stdout>" : o.output;

  Solution s;
  s.definition = def.name;
  s.author = o.author;
  s.description = o.description;
  s.sources = read_sources(disk);
  const std::string entry_stored = entry_stored_path(entry_file, disk);
  if (entry_stored.empty()) {
    std::vector<std::string> have;
    for (const auto& d : disk) have.push_back(d.stored);
    throw InputError(out_label, 0, "spec.entry_point",
                     fmt::format("entry file \"{}\" (--entry) is not among the sources (have: {}; "
                                 "root {})",
                                 entry_file, join(have), display_path(root)));
  }
  s.name = o.name.empty() ? def.name + "__" + fs::path(entry_stored).stem().string() : o.name;
  Reasons why;
  s.spec = make_spec(o, cmd, s.sources, entry_stored + "::" + entry_function, why);

  // The checks `solbench validate --solution` makes, on the document as written.
  const json doc = to_json(s);
  Diagnostics check;
  parse_solution(doc, out_label, check);
  warn_unless_defined(disk, s, entry_stored, entry_function, check);
  print_diagnostics(check);
  if (!check.empty()) {
    fmt::print(stderr, "error: {} was not written: the solution would not pass solbench validate\n",
               out_label);
    return 1;
  }
  const std::string text = doc.dump(2) + "\n";
  if (o.output == "-")
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    write_text_file(o.output, text);
  print_summary(o.output == "-" ? stderr : stdout, out_label, s, root, why,
                o.target_hardware.empty());
  return 0;
}

// --- unpack ------------------------------------------------------------------------

bool plain_shell_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return is_identifier_char(c) || std::string_view("./:=,+@%-").find(c) != std::string_view::npos;
  });
}

std::string shell_quote(std::string_view s) {
  if (plain_shell_word(s)) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The `solbench pack` command that makes `s` again from the files written to `dir`
// (PROBLEM_DIR stands for the problem folder). Keys of the solution no flag sets
// are named in `missing`.
std::string repack_command(const Solution& s, const std::string& dir, std::string& missing) {
  std::vector<std::string> a{"solbench", "pack", "PROBLEM_DIR", "--name", s.name};
  if (!s.author.empty()) a.insert(a.end(), {"--author", s.author});
  if (!s.description.empty()) a.insert(a.end(), {"--description", s.description});
  for (auto l : s.spec.languages) a.insert(a.end(), {"--language", std::string(language_name(l))});
  a.insert(a.end(), {"--entry", s.spec.entry_point});
  for (const auto& t : s.spec.target_hardware) a.insert(a.end(), {"--target-hardware", t});
  if (s.spec.family() == LanguageFamily::Cpp)
    a.insert(a.end(), {"--binding", s.spec.binding == Binding::Native ? "native" : "torch"});
  a.emplace_back(s.spec.destination_passing_style ? "--dps" : "--no-dps");
  for (const auto& d : s.spec.dependencies) a.insert(a.end(), {"--dependency", d});
  const CompileOptions defaults;
  const CompileOptions& co = s.spec.compile_options;
  if (co.cflags != defaults.cflags) a.insert(a.end(), {"--cflags", join(co.cflags, " ")});
  if (co.cuda_cflags != defaults.cuda_cflags)
    a.insert(a.end(), {"--cuda-cflags", join(co.cuda_cflags, " ")});
  if (co.ld_flags != defaults.ld_flags) a.insert(a.end(), {"--ld-flags", join(co.ld_flags, " ")});
  a.insert(a.end(), {"--root", dir, "-o", "solution.json"});
  for (const auto& f : s.sources) a.push_back((fs::path(dir) / f.path).string());
  std::vector<std::string> extra;
  for (auto it = s.extra.begin(); it != s.extra.end(); ++it) extra.push_back(it.key());
  for (auto it = s.spec.extra.begin(); it != s.spec.extra.end(); ++it)
    extra.push_back("spec." + it.key());
  missing = join(extra);
  std::string cmd;
  for (const auto& x : a) cmd += (cmd.empty() ? "" : " ") + shell_quote(x);
  return cmd;
}

// A folder on the way to `target` (below `dir`) that is a symbolic link: writing
// through it could land outside `dir`.
std::optional<fs::path> link_on_the_way(const fs::path& dir, const std::string& stored) {
  fs::path at = dir;
  for (const auto& part : fs::path(stored)) {
    at /= part;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(at, ec))) return at;
  }
  return std::nullopt;
}

int run_unpack(const PackOptions& o, const CLI::App& cmd) {
  if (!o.problem.empty() || !o.sources.empty())
    usage("--unpack SOLUTION -o DIR takes no PROBLEM or SOURCE arguments");
  for (const char* flag : kPackOnlyFlags)
    if (cmd.count(flag))
      usage(fmt::format("{} describes a solution to pack; --unpack takes none", flag));
  if (o.output.empty() || o.output == "-")
    usage("--unpack needs -o DIR, the folder to write the sources to");

  const json j = load_json_file(o.unpack);
  Diagnostics parsed;
  const Solution s = parse_solution(j, o.unpack, parsed);
  // Unsafe or missing sources stop it; anything else wrong with the solution does not
  // keep its sources from being written (the user may be about to fix it).
  Diagnostics refuse, warn;
  for (const auto& d : parsed.items()) {
    if (d.path.empty() || d.path.rfind("sources", 0) == 0)
      refuse.add(d);
    else
      warn.warn(d);
  }
  if (refuse.empty() && s.sources.empty())
    refuse.add(o.unpack, 0, "sources", "expected at least one source file");
  const fs::path dir = o.output;
  const bool readable = refuse.empty();
  for (const auto& f : readable ? s.sources : std::vector<SourceFile>{}) {
    std::error_code ec;
    const fs::path target = dir / f.path;
    if (auto link = link_on_the_way(dir, f.path))
      refuse.add(link->string(), 0, "",
                 fmt::format("is a symbolic link; refusing to write {} through it", f.path));
    else if (fs::exists(fs::symlink_status(target, ec)) && !o.force)
      refuse.add(target.string(), 0, "", "already exists (give --force to overwrite it)");
  }
  print_diagnostics(warn);
  if (!refuse.empty()) {
    print_diagnostics(refuse);
    return 1;
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(o.output, 0, "",
                     "is not a folder (-o names the folder to write the sources to)");
  for (const auto& f : s.sources) write_text_file(dir / f.path, f.content);

  std::vector<std::string> paths;
  for (const auto& f : s.sources) paths.push_back(f.path);
  fmt::print("wrote {} source{} of solution \"{}\" to {}: {}\n", paths.size(),
             paths.size() == 1 ? "" : "s", s.name, dir.string(), join(paths));
  std::string missing;
  const std::string again = repack_command(s, dir.string(), missing);
  fmt::print("to pack them again (PROBLEM_DIR: the folder of definition \"{}\"):\n  {}\n",
             s.definition, again);
  if (!missing.empty()) fmt::print("  (no flag sets these keys of the solution: {})\n", missing);
  return 0;
}

int run(const PackOptions& o, const CLI::App& cmd) {
  try {
    return o.unpack.empty() ? run_pack(o, cmd) : run_unpack(o, cmd);
  } catch (const InputError& e) {
    print_diagnostics(e.diagnostics());
    return 1;
  }
}

}  // namespace

void add_pack_command(CLI::App& app) {
  auto o = std::make_shared<PackOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pack",
      "Write a solution.json from source files (or, with --unpack, a solution's sources to a "
      "folder)");
  cmd->add_option("PROBLEM", o->problem,
                  "the problem folder (or its definition.json) the solution is for");
  cmd->add_option("SOURCE", o->sources,
                  "source files and folders (a folder adds its files, hidden ones and "
                  "__pycache__ left out); default: the entry file alone");
  cmd->add_option("-o,--output", o->output,
                  "the solution.json to write (\"-\": standard output); with --unpack, the folder");
  cmd->add_option("--unpack", o->unpack,
                  "write the sources of this solution.json to -o DIR instead");
  cmd->add_flag("--force", o->force, "overwrite the output (or, with --unpack, files in DIR)");
  cmd->add_option("--entry", o->entry,
                  "FILE::FUNCTION; FILE is a source's path in the solution or on disk (required)");
  cmd->add_option("--root", o->root,
                  "source paths are stored relative to this folder (default: the deepest folder "
                  "holding every SOURCE)");
  cmd->add_option("--name", o->name, "the solution's name (default: DEFINITION__ENTRYSTEM)");
  cmd->add_option("--author", o->author, "the author (default: empty)");
  cmd->add_option("--description", o->description, "a description");
  cmd->add_option("--language", o->languages,
                  "spec.languages (repeat or comma-separate; cuda means cuda_cpp); default: from "
                  "the entry file's extension")
      ->delimiter(',')
      ->allow_extra_args(false);  // one value per flag: `--language x SOURCE` leaves SOURCE
  cmd->add_option(
         "--target-hardware", o->target_hardware,
         "spec.target_hardware (repeat or comma-separate); default: cpu for cpp, else cuda")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--dps,!--no-dps", o->dps,
                "destination-passing style: outputs are passed after the inputs (default) or "
                "returned (--no-dps)");
  cmd->add_option("--binding", o->binding,
                  "torch or native (C++ family); default: native when a source includes "
                  "solbench/kernel.h, else torch");
  cmd->add_option("--dependency", o->dependencies, "spec.dependencies entry (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--cflags", o->cflags, "compile_options.cflags, space-separated (\"\": none)");
  cmd->add_option("--cuda-cflags", o->cuda_cflags,
                  "compile_options.cuda_cflags, space-separated (default: -O3 --use_fast_math)");
  cmd->add_option("--ld-flags", o->ld_flags,
                  "compile_options.ld_flags, space-separated (default: -lcuda; \"\": none)");
  cmd->callback([o, cmd] { exit_code() = run(*o, *cmd); });
}

}  // namespace solbench::cli
