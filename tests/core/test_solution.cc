#include "core/solution.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include "core_test_util.h"

namespace solbench {
namespace {

const char* kCuda = R"({
  "name": "rmsnorm_cuda_v1",
  "definition": "rmsnorm_h4096",
  "author": "solbench",
  "description": "warp-per-row RMSNorm",
  "spec": {
    "languages": ["cuda_cpp", "cublas"],
    "target_hardware": ["B200", "H100"],
    "entry_point": "kernel/rmsnorm.cu::rmsnorm",
    "destination_passing_style": false,
    "binding": "native",
    "dependencies": ["cublas", "CUTLASS_3_7"],
    "compile_options": {"cflags": ["-O2"], "cuda_cflags": ["-O3"], "ld_flags": []},
    "arch_hint": "sm_100"
  },
  "sources": [
    {"path": "kernel/rmsnorm.cu", "content": "__global__ void k() {}"},
    {"path": "kernel/common.h", "content": "#pragma once"}
  ],
  "provenance": {"tool": "x"}
})";

const char* kPython = R"({
  "name": "rmsnorm_triton",
  "definition": "rmsnorm_h4096",
  "author": "a",
  "spec": {"languages": ["triton"], "target_hardware": ["local"], "entry_point": "main.py::run"},
  "sources": [{"path": "main.py", "content": "def run(x, out):\n    pass\n"}]
})";

std::string errors_of(const char* base, const std::function<void(json&)>& edit) {
  json j = json::parse(base);
  edit(j);
  Diagnostics diags;
  parse_solution(j, "solution.json", diags);
  return diags.str();
}

TEST(Solution, ParsesEveryField) {
  Diagnostics diags;
  Solution s = parse_solution(json::parse(kCuda), "solution.json", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(s.name, "rmsnorm_cuda_v1");
  EXPECT_EQ(s.definition, "rmsnorm_h4096");
  EXPECT_EQ(s.author, "solbench");
  EXPECT_EQ(s.description, "warp-per-row RMSNorm");
  EXPECT_EQ(s.spec.languages, (std::vector<Language>{Language::CudaCpp, Language::Cublas}));
  EXPECT_EQ(s.spec.family(), LanguageFamily::Cpp);
  EXPECT_TRUE(s.spec.has_language(Language::Cublas));
  EXPECT_FALSE(s.spec.has_language(Language::Triton));
  EXPECT_EQ(s.spec.target_hardware, (std::vector<std::string>{"B200", "H100"}));
  EXPECT_EQ(s.spec.entry_point, "kernel/rmsnorm.cu::rmsnorm");
  EXPECT_EQ(s.spec.entry_file, "kernel/rmsnorm.cu");
  EXPECT_EQ(s.spec.entry_function, "rmsnorm");
  EXPECT_FALSE(s.spec.destination_passing_style);
  EXPECT_EQ(s.spec.binding, Binding::Native);
  EXPECT_EQ(s.spec.dependencies, (std::vector<std::string>{"cublas", "CUTLASS_3_7"}));
  EXPECT_EQ(s.spec.compile_options.cflags, (std::vector<std::string>{"-O2"}));
  EXPECT_EQ(s.spec.compile_options.cuda_cflags, (std::vector<std::string>{"-O3"}));
  EXPECT_TRUE(s.spec.compile_options.ld_flags.empty());
  EXPECT_EQ(s.spec.extra, json::parse(R"({"arch_hint": "sm_100"})"));
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.find_source("kernel/common.h")->content, "#pragma once");
  EXPECT_EQ(s.find_source("nope"), nullptr);
  EXPECT_EQ(s.extra, json::parse(R"({"provenance": {"tool": "x"}})"));
}

TEST(Solution, Defaults) {
  Diagnostics diags;
  Solution s = parse_solution(json::parse(kPython), "solution.json", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(s.spec.family(), LanguageFamily::Python);
  EXPECT_TRUE(s.spec.destination_passing_style);
  EXPECT_EQ(s.spec.binding, Binding::Torch);
  EXPECT_TRUE(s.spec.dependencies.empty());
  EXPECT_TRUE(s.spec.compile_options.cflags.empty());
  EXPECT_EQ(s.spec.compile_options.cuda_cflags, (std::vector<std::string>{"-O3", "--use_fast_math"}));
  EXPECT_EQ(s.spec.compile_options.ld_flags, (std::vector<std::string>{"-lcuda"}));
  EXPECT_EQ(s.description, "");
}

TEST(Solution, Languages) {
  EXPECT_EQ(parse_language("cute_dsl"), Language::CuteDsl);
  EXPECT_EQ(parse_language("cpp"), Language::Cpp);
  EXPECT_FALSE(parse_language("cuda"));
  EXPECT_EQ(language_name(Language::CudnnFrontend), "cudnn_frontend");
  EXPECT_EQ(language_family(Language::Cutile), LanguageFamily::Python);
  EXPECT_EQ(language_family(Language::Cutlass), LanguageFamily::Cpp);
  EXPECT_EQ(language_family(Language::Cpp), LanguageFamily::Cpp);
}

TEST(Solution, ReadsSingularLanguage) {
  // FlashInfer-Bench writes one "language".
  Diagnostics diags;
  json j = json::parse(kPython);
  j["spec"].erase("languages");
  j["spec"]["language"] = "triton";
  Solution s = parse_solution(j, "solution.json", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(s.spec.languages, (std::vector<Language>{Language::Triton}));
  EXPECT_TRUE(s.spec.extra.empty());
  EXPECT_TRUE(to_json(s)["spec"].contains("languages"));
}

TEST(Solution, CppLanguageRunsOnTheCpu) {
  auto cpp = [](json& j) {
    j["spec"]["languages"] = {"cpp"};
    j["spec"]["target_hardware"] = {"cpu"};
  };
  EXPECT_EQ(errors_of(kCuda, cpp), "");
  EXPECT_HAS(errors_of(kCuda, [&](json& j) {
               cpp(j);
               j["spec"]["target_hardware"] = {"B200"};
             }),
             "spec.target_hardware: language \"cpp\" runs on the host: expected \"cpu\"");
}

TEST(Solution, ReportsLanguageErrors) {
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["languages"] = {"cuda_cpp", "triton"}; }),
             "solution.json: spec.languages[1]: language \"triton\" is Python-family but "
             "\"cuda_cpp\" is C++-family; families may not mix");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["languages"] = {"cuda"}; }),
             "spec.languages[0]: unknown language \"cuda\" (expected one of pytorch, triton");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["languages"] = json::array(); }),
             "spec.languages: expected at least one language");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["languages"] = "cuda_cpp"; }),
             "spec.languages: expected an array of strings, found \"cuda_cpp\"");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"].erase("languages"); }),
             "spec.languages: missing required field");
}

TEST(Solution, ReportsEntryPointErrors) {
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "rmsnorm.cu:rmsnorm"; }),
             "spec.entry_point: \"rmsnorm.cu:rmsnorm\" is not of the form \"file::function\"");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "a::b::c"; }),
             "is not of the form \"file::function\"");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "::rmsnorm"; }),
             "spec.entry_point: \"::rmsnorm\" names no file");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "kernel/rmsnorm.cu::"; }),
             "spec.entry_point: \"\" is not a function name");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "main.cu::rmsnorm"; }),
             "spec.entry_point: entry file \"main.cu\" is not among sources (have: "
             "kernel/rmsnorm.cu, kernel/common.h)");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["entry_point"] = "../x.cu::f"; }),
             "spec.entry_point: unsafe entry file \"../x.cu\"");
}

TEST(Solution, ReportsSpecErrors) {
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["binding"] = "pybind"; }),
             "spec.binding: unknown binding \"pybind\" (expected \"torch\" or \"native\")");
  EXPECT_HAS(errors_of(kPython, [](json& j) { j["spec"]["binding"] = "native"; }),
             "spec.binding: the \"native\" binding is for C++-family languages only");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["destination_passing_style"] = "yes"; }),
             "spec.destination_passing_style: expected true or false, found \"yes\"");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["compile_options"]["cflags"] = "-O2"; }),
             "spec.compile_options.cflags: expected an array of strings");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["compile_options"]["ld_flags"] = {1}; }),
             "spec.compile_options.ld_flags[0]: expected a string, found 1");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["spec"]["dependencies"] = {"torch", false}; }),
             "spec.dependencies[1]: expected a string, found false");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j.erase("spec"); }), "spec: missing required field");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j.erase("author"); }), "author: missing required field");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["definition"] = ""; }), "definition: expected the definition's name");
}

TEST(Solution, ReportsSourceErrors) {
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"][1]["path"] = "kernel/rmsnorm.cu"; }),
             "sources[1].path: duplicate source path \"kernel/rmsnorm.cu\"");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"][1]["path"] = "../../etc/passwd"; }),
             "sources[1].path: unsafe path \"../../etc/passwd\": \"..\" components are not allowed");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"][1]["path"] = "/tmp/x.h"; }),
             "sources[1].path: unsafe path \"/tmp/x.h\": absolute paths are not allowed");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"][1].erase("content"); }),
             "sources[1].content: missing required field");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"] = json::array(); }),
             "sources: expected at least one source file");
  EXPECT_HAS(errors_of(kCuda, [](json& j) { j["sources"] = json::object(); }),
             "sources: expected an array of {path, content}");
}

TEST(Solution, UnsafeSourcePaths) {
  EXPECT_FALSE(unsafe_source_path_reason("main.py"));
  EXPECT_FALSE(unsafe_source_path_reason("a/b/c.cu"));
  EXPECT_FALSE(unsafe_source_path_reason("a..b/..c"));  // dots inside names are fine
  EXPECT_FALSE(unsafe_source_path_reason(".hidden/x"));
  EXPECT_EQ(unsafe_source_path_reason(""), "the path is empty");
  EXPECT_EQ(unsafe_source_path_reason("/abs"), "absolute paths are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("../x"), "\"..\" components are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("a/../x"), "\"..\" components are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("a/.."), "\"..\" components are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("./x"), "\".\" components are not allowed");
  EXPECT_TRUE(unsafe_source_path_reason("a//b"));
  EXPECT_TRUE(unsafe_source_path_reason("a/"));
  EXPECT_EQ(unsafe_source_path_reason("a\\b"), "backslashes are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("a\nb"), "control characters are not allowed");
  EXPECT_EQ(unsafe_source_path_reason(std::string_view("a\0b", 3)), "control characters are not allowed");
  EXPECT_EQ(unsafe_source_path_reason("a\x7f"), "control characters are not allowed");
}

TEST(Solution, RoundTrip) {
  for (const char* text : {kCuda, kPython}) {
    Diagnostics diags;
    Solution s = parse_solution(json::parse(text), "solution.json", diags);
    json j = to_json(s);
    Solution again = parse_solution(j, "again", diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    EXPECT_EQ(s, again);
    EXPECT_EQ(to_json(again), j);
  }
}

TEST(Solution, WritesDefaultsExplicitly) {
  Diagnostics diags;
  json j = to_json(parse_solution(json::parse(kPython), "solution.json", diags));
  EXPECT_EQ(j["spec"], json::parse(R"({
    "languages": ["triton"], "target_hardware": ["local"], "entry_point": "main.py::run",
    "destination_passing_style": true, "binding": "torch", "dependencies": [],
    "compile_options": {"cflags": [], "cuda_cflags": ["-O3", "--use_fast_math"], "ld_flags": ["-lcuda"]}
  })"));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "definition", "author", "spec", "sources"}));
}

}  // namespace
}  // namespace solbench
