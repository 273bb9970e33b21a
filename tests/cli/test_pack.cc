// `solbench pack` and `solbench pack --unpack` end to end: runs the built binary and
// checks exit codes, messages and the solutions it writes (parsed back with the
// same code `validate` uses).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/solution.h"
#include "core/text.h"
#include "test_support.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Runs `COMMAND` through sh in `dir` with `solbench` on PATH (the built binary).
CliResult shell(const TempDir& tmp, const fs::path& dir, const std::string& command) {
  const fs::path out = tmp.path() / "stdout.txt", err = tmp.path() / "stderr.txt";
  const fs::path bin = fs::path(SOLBENCH_BINARY).parent_path();
  const std::string cmd = "cd " + quoted(dir) + " && PATH=" + quoted(bin) + ":\"$PATH\" " +
                          command + " >" + quoted(out) + " 2>" + quoted(err);
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = testing::read(out);
  r.err = testing::read(err);
  return r;
}

CliResult solbench(const TempDir& tmp, const std::string& args) {
  return shell(tmp, tmp.path(), "solbench " + args);
}

const fs::path kProblems = fs::path(SOLBENCH_SOURCE_DIR) / "problems";
const fs::path kRmsnorm = kProblems / "001_rmsnorm_llama3_8b_h4096";

Solution load(const fs::path& p) {
  Diagnostics d;
  Solution s = load_solution(p, d);
  EXPECT_TRUE(d.empty()) << p << ": " << d.str();
  return s;
}

std::vector<fs::path> bundled_solutions() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(kProblems))
    if (e.path().extension() == ".json" &&
        e.path().parent_path().string().find("/solutions") != std::string::npos)
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The problem folder of a bundled solution: the folder above "solutions".
fs::path problem_of(fs::path solution) {
  while (solution.filename() != "solutions") solution = solution.parent_path();
  return solution.parent_path();
}

std::string line(const std::string& text, size_t n) {
  size_t at = 0;
  for (size_t i = 0; i < n && at != std::string::npos; ++i) at = text.find('\n', at) + 1;
  return text.substr(at, text.find('\n', at) - at);
}

// Every bundled solution: unpacked, packed again with the command --unpack prints,
// the result equals the original (sources, spec, entry point, name, author) and
// passes `solbench validate`.
TEST(PackCli, UnpackThenPackGivesTheBundledSolutionsBack) {
  const auto solutions = bundled_solutions();
  ASSERT_GE(solutions.size(), 20u);
  for (const auto& original : solutions) {
    SCOPED_TRACE(original.string());
    TempDir tmp;
    CliResult u = solbench(tmp, "pack --unpack " + quoted(original) + " -o src");
    ASSERT_EQ(u.rc, 0) << u.err;
    std::string again = trim(line(u.out, 2));
    ASSERT_EQ(again.rfind("solbench pack PROBLEM_DIR ", 0), 0u) << u.out;
    again.replace(again.find("PROBLEM_DIR"), 11, quoted(problem_of(original)));
    CliResult p = shell(tmp, tmp.path(), again);
    ASSERT_EQ(p.rc, 0) << again << "\n" << p.err;
    const Solution before = load(original), after = load(tmp.path() / "solution.json");
    EXPECT_EQ(after.sources, before.sources);
    EXPECT_EQ(after.spec, before.spec);
    EXPECT_EQ(after.spec.entry_point, before.spec.entry_point);
    EXPECT_EQ(after, before);
    CliResult v =
        solbench(tmp, "validate " + quoted(problem_of(original)) + " --solution solution.json");
    EXPECT_EQ(v.rc, 0) << v.err;
  }
}

// The same by hand: the flags a user types, language and binding inferred.
TEST(PackCli, RepacksACudaSolutionFromItsSources) {
  TempDir tmp;
  const fs::path original = kRmsnorm / "solutions" / "cuda_rmsnorm.json";
  ASSERT_EQ(solbench(tmp, "pack --unpack " + quoted(original) + " -o kernel").rc, 0);
  CliResult r =
      solbench(tmp, "pack " + quoted(kRmsnorm) +
                        " --entry kernel/cuda_rmsnorm.cu::rmsnorm --author solbench --ld-flags ''"
                        " --description 'RMSNorm, one block per row, 16-byte loads, float32 math.'"
                        " -o solution.json kernel");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "languages cuda_cpp (entry file is CUDA)");
  EXPECT_HAS(r.out, "target_hardware cuda (default)");
  EXPECT_HAS(r.out, "binding native (cuda_rmsnorm.cu includes solbench/kernel.h)");
  const Solution before = load(original), after = load(tmp.path() / "solution.json");
  EXPECT_EQ(after.sources, before.sources);
  EXPECT_EQ(after.spec, before.spec);
  EXPECT_EQ(after.spec.entry_point, "cuda_rmsnorm.cu::rmsnorm");
  EXPECT_EQ(after, before);
}

struct Packed {
  CliResult result;
  Solution solution;
};

// Packs the files `files` (name → text) written to tmp/src with `flags`.
Packed pack(const TempDir& tmp, const std::vector<std::pair<std::string, std::string>>& files,
            const std::string& flags) {
  for (const auto& [name, text] : files) tmp.write("src/" + name, text);
  Packed p;
  p.result = solbench(tmp, "pack " + quoted(kRmsnorm) + " " + flags + " -o out.json src");
  if (p.result.rc == 0) p.solution = load(tmp.path() / "out.json");
  return p;
}

std::vector<Language> langs(const Solution& s) { return s.spec.languages; }

TEST(PackCli, InfersTheLanguageFromTheEntryFile) {
  const std::string py = "import torch\n\ndef run(x, w, eps, out):\n    out.copy_(x)\n";
  {
    TempDir tmp;
    Packed p = pack(tmp, {{"k.py", py}}, "--entry k.py::run");
    ASSERT_EQ(p.result.rc, 0) << p.result.err;
    EXPECT_EQ(langs(p.solution), std::vector{Language::Pytorch});
    EXPECT_EQ(p.solution.spec.target_hardware, std::vector<std::string>{"cuda"});
    EXPECT_EQ(p.solution.name, "001_rmsnorm_llama3_8b_h4096__k");
    EXPECT_EQ(p.solution.spec.binding, Binding::Torch);
  }
  for (const std::string triton : {"import triton\n", "import torch, triton.language as tl\n",
                                   "    from triton import jit\n"}) {
    TempDir tmp;
    Packed p = pack(tmp, {{"k.py", py}, {"kern.py", triton}}, "--entry k.py::run");
    ASSERT_EQ(p.result.rc, 0) << p.result.err;
    EXPECT_EQ(langs(p.solution), std::vector{Language::Triton}) << triton;
    EXPECT_HAS(p.result.out, "kern.py imports triton");
  }
  {
    TempDir tmp;  // a name that only starts like triton is not triton
    Packed p = pack(tmp, {{"k.py", "import tritonish\n" + py}}, "--entry k.py::run");
    EXPECT_EQ(langs(p.solution), std::vector{Language::Pytorch});
  }
  {
    TempDir tmp;
    Packed p = pack(tmp, {{"k.cu", "int run;"}}, "--entry k.cu::run");
    ASSERT_EQ(p.result.rc, 0) << p.result.err;
    EXPECT_EQ(langs(p.solution), std::vector{Language::CudaCpp});
    EXPECT_EQ(p.solution.spec.binding, Binding::Torch);  // no solbench/kernel.h
  }
  for (const std::string ext : {".cc", ".cpp"}) {
    TempDir tmp;
    Packed p = pack(tmp, {{"k" + ext, "#include <solbench/kernel.h>\nint run;"}},
                    "--entry k" + ext + "::run");
    ASSERT_EQ(p.result.rc, 0) << p.result.err;
    EXPECT_EQ(langs(p.solution), std::vector{Language::Cpp});
    EXPECT_EQ(p.solution.spec.target_hardware, std::vector<std::string>{"cpu"});
    EXPECT_EQ(p.solution.spec.binding, Binding::Native);
  }
  {
    TempDir tmp;  // C++ beside CUDA is CUDA (cpp builds no .cu)
    Packed p = pack(tmp, {{"k.cpp", "int run;"}, {"kern.cu", ""}}, "--entry k.cpp::run");
    EXPECT_EQ(langs(p.solution), std::vector{Language::CudaCpp});
  }
  {
    TempDir tmp;  // --language wins (cuda is cuda_cpp); comma-separated lists
    Packed p = pack(tmp, {{"k.cu", "int run;"}},
                    "--entry k.cu::run --language cuda,cublas --target-hardware B200,H100");
    ASSERT_EQ(p.result.rc, 0) << p.result.err;
    EXPECT_EQ(langs(p.solution), (std::vector{Language::CudaCpp, Language::Cublas}));
    EXPECT_EQ(p.solution.spec.target_hardware, (std::vector<std::string>{"B200", "H100"}));
  }
}

TEST(PackCli, ExplicitFlagsOverrideTheDefaults) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.py", "def run(x, w, eps):\n    return x\n"}},
                  "--entry k.py::run --language pytorch --target-hardware cpu,local --no-dps "
                  "--dependency torch --dependency numpy --name mine --author me "
                  "--description 'a b' --cflags '-O2  -g' --ld-flags ''");
  ASSERT_EQ(p.result.rc, 0) << p.result.err;
  const Solution& s = p.solution;
  EXPECT_EQ(s.name, "mine");
  EXPECT_EQ(s.author, "me");
  EXPECT_EQ(s.description, "a b");
  EXPECT_EQ(s.spec.target_hardware, (std::vector<std::string>{"cpu", "local"}));
  EXPECT_FALSE(s.spec.destination_passing_style);
  EXPECT_EQ(s.spec.dependencies, (std::vector<std::string>{"torch", "numpy"}));
  EXPECT_EQ(s.spec.compile_options.cflags, (std::vector<std::string>{"-O2", "-g"}));
  EXPECT_EQ(s.spec.compile_options.ld_flags, std::vector<std::string>{});
  EXPECT_EQ(s.spec.compile_options.cuda_cflags, CompileOptions{}.cuda_cflags);
}

TEST(PackCli, AnEntryFileWhoseLanguageIsUnclearIsAUsageError) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.h", "int run;"}}, "--entry k.h::run");
  EXPECT_EQ(p.result.rc, 2);
  EXPECT_HAS(p.result.err, "cannot infer the language from the entry file \"k.h\"");
  EXPECT_HAS(p.result.err, "give --language");
  EXPECT_FALSE(fs::exists(tmp.path() / "out.json"));
}

TEST(PackCli, AnEntryFileNotAmongTheSourcesIsAnError) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.cu", "int run;"}, {"util.cuh", ""}}, "--entry kernel.cu::run");
  EXPECT_EQ(p.result.rc, 1);
  EXPECT_HAS(p.result.err,
             "error: out.json: spec.entry_point: entry file \"kernel.cu\" (--entry) is not among "
             "the sources (have: k.cu, util.cuh; root src)");
  EXPECT_FALSE(fs::exists(tmp.path() / "out.json"));
}

TEST(PackCli, MalformedFlagsAreUsageErrors) {
  TempDir tmp;
  tmp.write("src/k.py", "def run(x, w, eps, out): pass\n");
  for (const std::string flags :
       {"--entry k.py", "--entry ::run", "--entry k.py::run --language rust",
        "--entry k.py::run --binding pybind", ""}) {
    CliResult r = solbench(tmp, "pack " + quoted(kRmsnorm) + " " + flags + " -o out.json src");
    EXPECT_EQ(r.rc, 2) << flags << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "out.json"));
}

TEST(PackCli, FoldersKeepRelativePathsUnderTheRoot) {
  TempDir tmp;
  tmp.write("proj/kernel.cu", "#include \"include/util.cuh\"\nint run;");
  tmp.write("proj/include/util.cuh", "");
  tmp.write("proj/.git/config", "");
  tmp.write("proj/__pycache__/x.pyc", "");
  CliResult r =
      solbench(tmp, "pack " + quoted(kRmsnorm) + " --entry proj/kernel.cu::run -o s.json proj");
  ASSERT_EQ(r.rc, 0) << r.err;
  Solution s = load(tmp.path() / "s.json");
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.sources[0].path, "include/util.cuh");
  EXPECT_EQ(s.sources[1].path, "kernel.cu");
  EXPECT_EQ(s.spec.entry_point, "kernel.cu::run");

  // Files given one by one: the common folder is the root; --root moves it up.
  r = solbench(
      tmp, "pack " + quoted(kRmsnorm) +
               " --entry kernel.cu::run --root . -o s2.json proj/kernel.cu proj/include/util.cuh");
  ASSERT_EQ(r.rc, 1);  // kernel.cu is proj/kernel.cu under the root "."
  r = solbench(
      tmp,
      "pack " + quoted(kRmsnorm) +
          " --entry proj/kernel.cu::run --root . -o s2.json proj/kernel.cu proj/include/util.cuh");
  ASSERT_EQ(r.rc, 0) << r.err;
  s = load(tmp.path() / "s2.json");
  EXPECT_EQ(s.spec.entry_point, "proj/kernel.cu::run");
  EXPECT_EQ(s.sources[1].path, "proj/include/util.cuh");

  r = solbench(tmp, "pack " + quoted(kRmsnorm) +
                        " --entry proj/kernel.cu::run --root proj/include -o s3.json proj");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "is outside the root folder proj/include");
}

TEST(PackCli, TheEntryFileAloneWhenNoSourceIsGiven) {
  TempDir tmp;
  tmp.write("k.py", "def run(x, w, eps, out): pass\n");
  CliResult r = solbench(tmp, "pack " + quoted(kRmsnorm) + " --entry k.py::run -o s.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  Solution s = load(tmp.path() / "s.json");
  ASSERT_EQ(s.sources.size(), 1u);
  EXPECT_EQ(s.sources[0].path, "k.py");
}

TEST(PackCli, RefusesToOverwriteWithoutForce) {
  TempDir tmp;
  tmp.write("k.py", "def run(x, w, eps, out): pass\n");
  tmp.write("s.json", "keep");
  const std::string args = "pack " + quoted(kRmsnorm) + " --entry k.py::run -o s.json";
  CliResult r = solbench(tmp, args);
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "error: s.json: already exists (give --force to overwrite it)");
  EXPECT_EQ(testing::read(tmp.path() / "s.json"), "keep");
  EXPECT_EQ(solbench(tmp, args + " --force").rc, 0);
  EXPECT_NE(testing::read(tmp.path() / "s.json"), "keep");
}

TEST(PackCli, AnInvalidSolutionIsNotWritten) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.py", "def run(x, w, eps, out): pass\n"}},
                  "--entry k.py::run --binding native");
  EXPECT_EQ(p.result.rc, 1);
  EXPECT_HAS(
      p.result.err,
      "error: out.json: spec.binding: the \"native\" binding is for C++-family languages only");
  EXPECT_HAS(p.result.err, "out.json was not written");
  EXPECT_FALSE(fs::exists(tmp.path() / "out.json"));
}

TEST(PackCli, BinaryFilesAreRefused) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.cu", "int run;"}, {"blob.bin", std::string("\xff\xfe\x00", 3)}},
                  "--entry k.cu::run");
  EXPECT_EQ(p.result.rc, 1);
  EXPECT_HAS(p.result.err, "error: src/blob.bin: not UTF-8 text (byte 0)");
}

TEST(PackCli, WarnsWhenTheEntryFunctionIsMissing) {
  TempDir tmp;
  Packed p = pack(tmp, {{"k.py", "def run(x, w, eps, out): pass\n"}}, "--entry k.py::kernel");
  EXPECT_EQ(p.result.rc, 0) << p.result.err;
  EXPECT_HAS(p.result.err, "warning: src/k.py: spec.entry_point: no top-level \"def kernel(\"");
}

void write_solution(const TempDir& tmp, const std::string& name, const std::string& path) {
  json j = json::parse(testing::read(kRmsnorm / "solutions" / "cpp_rowwise" / "solution.json"));
  j["sources"].push_back({{"path", path}, {"content", "escaped"}});
  tmp.write(name, j.dump());
}

TEST(PackCli, UnpackRefusesPathsThatLeaveTheFolder) {
  for (const std::string bad : {"../x", "a/../../x", "/tmp/x"}) {
    TempDir tmp;
    write_solution(tmp, "sol.json", bad);
    CliResult r = solbench(tmp, "pack --unpack sol.json -o out/dir");
    EXPECT_EQ(r.rc, 1) << bad;
    EXPECT_HAS(r.err, "error: sol.json: sources[1].path: unsafe path \"" + bad + "\"");
    EXPECT_FALSE(fs::exists(tmp.path() / "out")) << "nothing is written";
    EXPECT_FALSE(fs::exists(tmp.path() / "out" / "x"));
  }
}

TEST(PackCli, UnpackRefusesToOverwriteOrFollowLinks) {
  TempDir tmp;
  write_solution(tmp, "sol.json", "sub/extra.h");
  CliResult r = solbench(tmp, "pack --unpack sol.json -o out");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(testing::read(tmp.path() / "out" / "sub" / "extra.h"), "escaped");
  EXPECT_HAS(r.out,
             "wrote 2 sources of solution \"rmsnorm_cpp_rowwise\" to out: rmsnorm.cc, sub/extra.h");

  r = solbench(tmp, "pack --unpack sol.json -o out");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "error: out/rmsnorm.cc: already exists (give --force to overwrite it)");
  EXPECT_HAS(r.err, "error: out/sub/extra.h: already exists");
  EXPECT_EQ(solbench(tmp, "pack --unpack sol.json -o out --force").rc, 0);

  fs::create_directories(tmp.path() / "elsewhere");
  fs::create_directories(tmp.path() / "out2");
  fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "out2" / "sub");
  r = solbench(tmp, "pack --unpack sol.json -o out2");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "error: out2/sub: is a symbolic link");
  EXPECT_FALSE(fs::exists(tmp.path() / "elsewhere" / "extra.h"));
}

TEST(PackCli, UnpackTakesNoPackFlags) {
  TempDir tmp;
  write_solution(tmp, "sol.json", "x.h");
  EXPECT_EQ(solbench(tmp, "pack --unpack sol.json").rc, 2);
  EXPECT_EQ(solbench(tmp, "pack --unpack sol.json -o out --entry a::b").rc, 2);
  EXPECT_EQ(solbench(tmp, "pack --unpack sol.json -o out " + quoted(kRmsnorm)).rc, 2);
}

}  // namespace
}  // namespace solbench
