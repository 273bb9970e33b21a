// solution.json: parsing, validation (languages, entry point, safe source
// paths) and writing.
#include "core/solution.h"

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

#include "core/definition.h"

namespace solbench {

namespace {

using detail::describe_json;
using detail::FieldReader;
using detail::index_path;
using detail::join_path;

struct LanguageEntry {
  Language id;
  std::string_view name;
  LanguageFamily family;
};

constexpr std::array<LanguageEntry, 10> kLanguages{{
    {Language::Pytorch, "pytorch", LanguageFamily::Python},
    {Language::Triton, "triton", LanguageFamily::Python},
    {Language::CuteDsl, "cute_dsl", LanguageFamily::Python},
    {Language::Cutile, "cutile", LanguageFamily::Python},
    {Language::CudnnFrontend, "cudnn_frontend", LanguageFamily::Python},
    {Language::CudaCpp, "cuda_cpp", LanguageFamily::Cpp},
    {Language::Cutlass, "cutlass", LanguageFamily::Cpp},
    {Language::Cudnn, "cudnn", LanguageFamily::Cpp},
    {Language::Cublas, "cublas", LanguageFamily::Cpp},
    {Language::Cpp, "cpp", LanguageFamily::Cpp},
}};

std::string_view family_name(LanguageFamily f) {
  return f == LanguageFamily::Python ? "Python" : "C++";
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string known_languages() {
  std::string s;
  for (const auto& l : kLanguages) s += (s.empty() ? "" : ", ") + std::string(l.name);
  return s;
}

void parse_compile_options(const json& spec, const FieldReader& r, CompileOptions& out) {
  const json* v = r.field(spec, "spec", "compile_options", false);
  if (!v || v->is_null()) return;
  if (!r.expect_object(*v, "spec.compile_options")) return;
  if (auto x = r.strings(*v, "spec.compile_options", "cflags", false)) out.cflags = *x;
  if (auto x = r.strings(*v, "spec.compile_options", "cuda_cflags", false)) out.cuda_cflags = *x;
  if (auto x = r.strings(*v, "spec.compile_options", "ld_flags", false)) out.ld_flags = *x;
}

void parse_spec(const json& j, const FieldReader& r, BuildSpec& spec) {
  const json* v = r.field(j, "", "spec", true);
  if (!v || !r.expect_object(*v, "spec")) return;

  // "languages" (SOL-ExecBench); a single "language" string (FlashInfer-Bench) is also read.
  const bool plural = v->contains("languages") || !v->contains("language");
  std::vector<std::string> names;
  if (plural) {
    if (auto ls = r.strings(*v, "spec", "languages", true)) names = *ls;
  } else if (auto l = r.string(*v, "spec", "language", true)) {
    names.push_back(*l);
  }
  const std::string lpath = plural ? "spec.languages" : "spec.language";
  if (plural && v->contains("languages") && (*v)["languages"].is_array() && names.empty() &&
      (*v)["languages"].empty())
    r.error(lpath, "expected at least one language");
  for (size_t i = 0; i < names.size(); ++i) {
    std::string path = plural ? index_path(lpath, i) : lpath;
    auto lang = parse_language(names[i]);
    if (!lang) {
      r.error(path, fmt::format("unknown language \"{}\" (expected one of {})", names[i],
                                known_languages()));
      continue;
    }
    if (!spec.languages.empty() && language_family(*lang) != language_family(spec.languages[0])) {
      r.error(path, fmt::format("language \"{}\" is {}-family but \"{}\" is {}-family; families "
                                "may not mix",
                                names[i], family_name(language_family(*lang)),
                                language_name(spec.languages[0]),
                                family_name(language_family(spec.languages[0]))));
      continue;
    }
    if (!spec.has_language(*lang)) spec.languages.push_back(*lang);
  }

  if (auto th = r.strings(*v, "spec", "target_hardware", true)) {
    spec.target_hardware = *th;
    if (th->empty())
      r.error("spec.target_hardware",
              "is empty (expected at least one target, e.g. \"cuda\", \"B200\" or \"cpu\")");
  }
  if (spec.has_language(Language::Cpp) && v->contains("target_hardware") &&
      std::find(spec.target_hardware.begin(), spec.target_hardware.end(), "cpu") ==
          spec.target_hardware.end())
    r.error("spec.target_hardware",
            "language \"cpp\" runs on the host: expected \"cpu\" among target_hardware");

  if (auto ep = r.string(*v, "spec", "entry_point", true)) {
    spec.entry_point = *ep;
    size_t sep = ep->find("::");
    if (sep == std::string::npos || ep->find("::", sep + 2) != std::string::npos) {
      r.error("spec.entry_point",
              fmt::format("\"{}\" is not of the form \"file::function\"", *ep));
    } else {
      spec.entry_file = ep->substr(0, sep);
      spec.entry_function = ep->substr(sep + 2);
      if (spec.entry_file.empty())
        r.error("spec.entry_point", fmt::format("\"{}\" names no file (expected \"file::function\")", *ep));
      else if (auto why = unsafe_source_path_reason(spec.entry_file))
        r.error("spec.entry_point", fmt::format("unsafe entry file \"{}\": {}", spec.entry_file, *why));
      if (!is_identifier(spec.entry_function))
        r.error("spec.entry_point",
                fmt::format("\"{}\" is not a function name (expected \"file::function\")",
                            spec.entry_function));
    }
  }

  if (auto dps = r.boolean(*v, "spec", "destination_passing_style", false))
    spec.destination_passing_style = *dps;

  if (const json* b = r.field(*v, "spec", "binding", false); b && !b->is_null()) {
    if (auto name = r.string(*v, "spec", "binding", false)) {
      if (*name == "torch") {
        spec.binding = Binding::Torch;
      } else if (*name == "native") {
        spec.binding = Binding::Native;
        if (!spec.languages.empty() && spec.family() == LanguageFamily::Python)
          r.error("spec.binding", "the \"native\" binding is for C++-family languages only");
      } else {
        r.error("spec.binding",
                fmt::format("unknown binding \"{}\" (expected \"torch\" or \"native\")", *name));
      }
    }
  }

  if (auto deps = r.strings(*v, "spec", "dependencies", false)) spec.dependencies = *deps;
  parse_compile_options(*v, r, spec.compile_options);
  spec.extra = detail::unknown_keys(*v, {"languages", "language", "target_hardware", "entry_point",
                                         "destination_passing_style", "binding", "dependencies",
                                         "compile_options"});
}

void parse_sources(const json& j, const FieldReader& r, Solution& s) {
  const json* v = r.field(j, "", "sources", true);
  if (!v) return;
  if (!v->is_array()) {
    r.error("sources", "expected an array of {path, content}, found " + describe_json(*v));
    return;
  }
  if (v->empty()) r.error("sources", "expected at least one source file");
  std::set<std::string> seen;
  for (size_t i = 0; i < v->size(); ++i) {
    std::string path = index_path("sources", i);
    const json& e = (*v)[i];
    if (!r.expect_object(e, path)) continue;
    SourceFile f;
    auto p = r.string(e, path, "path", true);
    auto c = r.string(e, path, "content", true);
    if (p) {
      if (auto why = unsafe_source_path_reason(*p)) {
        r.error(join_path(path, "path"), fmt::format("unsafe path \"{}\": {}", *p, *why));
      } else if (!seen.insert(*p).second) {
        r.error(join_path(path, "path"), fmt::format("duplicate source path \"{}\"", *p));
      }
      f.path = *p;
    }
    if (c) f.content = *c;
    if (p && c) s.sources.push_back(std::move(f));
  }
}

}  // namespace

std::string_view language_name(Language l) {
  for (const auto& e : kLanguages)
    if (e.id == l) return e.name;
  return "?";
}

std::optional<Language> parse_language(std::string_view name) {
  for (const auto& e : kLanguages)
    if (e.name == name) return e.id;
  return std::nullopt;
}

LanguageFamily language_family(Language l) {
  for (const auto& e : kLanguages)
    if (e.id == l) return e.family;
  return LanguageFamily::Cpp;
}

LanguageFamily BuildSpec::family() const {
  return languages.empty() ? LanguageFamily::Python : language_family(languages[0]);
}

bool BuildSpec::has_language(Language l) const {
  return std::find(languages.begin(), languages.end(), l) != languages.end();
}

const SourceFile* Solution::find_source(std::string_view path) const {
  for (const auto& f : sources)
    if (f.path == path) return &f;
  return nullptr;
}

std::optional<std::string> unsafe_source_path_reason(std::string_view path) {
  if (path.empty()) return "the path is empty";
  if (path.front() == '/') return "absolute paths are not allowed";
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\') return "backslashes are not allowed";
    if (u < 0x20 || u == 0x7f) return "control characters are not allowed";
  }
  size_t pos = 0;
  while (true) {
    size_t end = path.find('/', pos);
    std::string_view comp = path.substr(pos, end == std::string_view::npos ? path.npos : end - pos);
    if (comp.empty()) return "empty path components (\"//\" or a trailing \"/\") are not allowed";
    if (comp == "..") return "\"..\" components are not allowed";
    if (comp == ".") return "\".\" components are not allowed";
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return std::nullopt;
}

Solution parse_solution(const json& j, const std::string& file, Diagnostics& diags) {
  FieldReader r(file, 0, diags);
  Solution s;
  if (!r.expect_object(j, "")) return s;
  if (auto x = r.string(j, "", "name", true)) {
    if (x->empty()) r.error("name", "expected a non-empty name");
    s.name = *x;
  }
  if (auto x = r.string(j, "", "definition", true)) {
    if (x->empty()) r.error("definition", "expected the definition's name, found an empty string");
    s.definition = *x;
  }
  if (auto x = r.string(j, "", "author", true)) s.author = *x;
  if (auto x = r.string(j, "", "description", false)) s.description = *x;
  parse_spec(j, r, s.spec);
  parse_sources(j, r, s);
  if (!s.spec.entry_file.empty() && !unsafe_source_path_reason(s.spec.entry_file) &&
      j.contains("sources") && j["sources"].is_array() && !s.find_source(s.spec.entry_file)) {
    std::string have;
    for (const auto& f : s.sources) have += (have.empty() ? "" : ", ") + f.path;
    r.error("spec.entry_point",
            fmt::format("entry file \"{}\" is not among sources (have: {})", s.spec.entry_file,
                        have.empty() ? "none" : have));
  }
  s.extra = detail::unknown_keys(j, {"name", "definition", "author", "description", "spec", "sources"});
  return s;
}

Solution load_solution(const std::filesystem::path& path, Diagnostics& diags) {
  try {
    return parse_solution(load_json_file(path), path.string(), diags);
  } catch (const InputError& e) {
    diags.append(e.diagnostics());
    return {};
  }
}

json to_json(const Solution& s) {
  json j = json::object();
  j["name"] = s.name;
  j["definition"] = s.definition;
  j["author"] = s.author;
  if (!s.description.empty()) j["description"] = s.description;
  json spec = json::object();
  json langs = json::array();
  for (auto l : s.spec.languages) langs.push_back(language_name(l));
  spec["languages"] = std::move(langs);
  spec["target_hardware"] = s.spec.target_hardware;
  spec["entry_point"] = s.spec.entry_point;
  spec["destination_passing_style"] = s.spec.destination_passing_style;
  spec["binding"] = s.spec.binding == Binding::Native ? "native" : "torch";
  spec["dependencies"] = s.spec.dependencies;
  json co = json::object();
  co["cflags"] = s.spec.compile_options.cflags;
  co["cuda_cflags"] = s.spec.compile_options.cuda_cflags;
  co["ld_flags"] = s.spec.compile_options.ld_flags;
  spec["compile_options"] = std::move(co);
  for (auto it = s.spec.extra.begin(); it != s.spec.extra.end(); ++it) spec[it.key()] = it.value();
  j["spec"] = std::move(spec);
  json sources = json::array();
  for (const auto& f : s.sources) {
    json jf = json::object();
    jf["path"] = f.path;
    jf["content"] = f.content;
    sources.push_back(std::move(jf));
  }
  j["sources"] = std::move(sources);
  for (auto it = s.extra.begin(); it != s.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

}  // namespace solbench
