// The hack corpus (tests/hacks/manifest.json) evaluated through the real binary on
// the CPU: every entry that is not gpu_only must get its expected status, for the
// expected reason (a substring of the log), leave no planted file behind and leave
// its copy of the problem unchanged; an entry expected to PASS (an honest twin, or a
// hack the harness makes inert) must not report a time far below its honest twin's.
//
// The evaluations run concurrently before the first entry's test (SOLBENCH_HACK_JOBS
// at a time, default 3): the corpus is one ctest test, so that its own pool sets the
// load on the machine. Entries whose `known_gap` names a harness fix still pending
// (src/, the lead's) are GTEST_SKIPped with what was measured, never passed; when the
// fix lands they get their expected status and pass.
//
// gpu_only entries are not run here: they are validated, and the native CUDA ones are
// built through `solbench eval --device cuda:0` (which builds before it needs a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "test_support.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using testing::read;

const fs::path kHacks = fs::path(SOLBENCH_SOURCE_DIR) / "tests" / "hacks";

const json& manifest() {
  static const json m = json::parse(read(kHacks / "manifest.json"));
  return m;
}

std::vector<std::string> names(bool gpu_only) {
  std::vector<std::string> out;
  for (const auto& e : manifest().at("entries"))
    if (e.value("gpu_only", false) == gpu_only) out.push_back(e.at("name").get<std::string>());
  return out;
}

const json& entry(const std::string& name) {
  for (const auto& e : manifest().at("entries"))
    if (e.at("name") == name) return e;
  throw std::runtime_error("no entry " + name);
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// The files an `absent` entry names: its path, or with "*" components (one folder
// level each, e.g. a content-keyed cache folder) every existing match.
std::vector<fs::path> existing(const std::string& pattern) {
  std::vector<fs::path> found = {"/"};
  for (const auto& part : fs::path(pattern).relative_path()) {
    std::vector<fs::path> next;
    for (const fs::path& f : found) {
      std::error_code ec;
      if (part != "*") {
        if (fs::exists(fs::symlink_status(f / part, ec))) next.push_back(f / part);
        continue;
      }
      for (fs::directory_iterator it(f, ec), end; !ec && it != end; it.increment(ec))
        next.push_back(it->path());
    }
    found = std::move(next);
  }
  return found;
}

// What one evaluation of an entry gave.
struct Outcome {
  std::string status;  // first non-PASSED workload's status, PASSED, or NO_RESULT
  std::string log;     // that workload's log (or the binary's output when no result)
  std::optional<double> latency_ms, reference_latency_ms;
  std::vector<std::string> problems;  // planted files, a changed problem copy
  json build;                         // the build record (native entries)
  double seconds = 0;
};

// One entry's private problem copy, cache and staging folder; placeholders in the
// sources replaced; evaluated with the manifest's flags.
Outcome evaluate(const fs::path& root, const json& e, const std::string& device = "cpu",
                 const std::string& extra_flags = "") {
  const std::string name = e.at("name").get<std::string>();
  const json& m = manifest();
  const fs::path work = root / name, problem = work / "problem", cache = work / "cache",
                 staging = work / "staging";
  fs::create_directories(problem);
  fs::create_directories(cache);
  fs::create_directories(staging);
  const fs::path src = fs::path(SOLBENCH_SOURCE_DIR) / "problems" / m.at("problem").get<std::string>();
  for (const char* f : {"definition.json", "workload.jsonl"}) fs::copy_file(src / f, problem / f);
  const std::string before_def = read(problem / "definition.json"),
                    before_wl = read(problem / "workload.jsonl");

  std::mt19937_64 rng{std::random_device{}()};
  const std::string run_id = std::to_string(rng() % 1000000000000ull);
  auto fill = [&](std::string s) {
    s = replace_all(s, "@PROBLEM_DIR@", problem.string());
    s = replace_all(s, "@CACHE_DIR@", cache.string());
    return replace_all(s, "@RUN_ID@", run_id);
  };
  for (const auto& d : e.value("mkdirs", json::array())) fs::create_directories(fill(d.get<std::string>()));
  json sol = json::parse(read(kHacks / name / "solution.json"));
  for (auto& s : sol.at("sources")) s["content"] = fill(s.at("content").get<std::string>());
  testing::write(work / "solution.json", sol.dump(2));

  std::string flags;
  for (const auto& f : m.at("flags")) flags += " " + f.get<std::string>();
  flags += " --smallest " + std::to_string(e.value("workloads", 1)) +
           " --no-db --no-baseline --json --timeout 120 --device " + device + extra_flags;
  const fs::path out = work / "stdout.txt", err = work / "stderr.txt";
  const std::string cmd = "SOLBENCH_CACHE_DIR=" + quote(cache.string()) +
                          " SOLBENCH_STAGING_DIR=" + quote(staging.string()) +
                          " timeout -k 10 400 " + quote(SOLBENCH_BINARY) + " eval " +
                          quote(problem.string()) + " -s " + quote((work / "solution.json").string()) +
                          flags + " >" + quote(out.string()) + " 2>" + quote(err.string());
  const auto t0 = std::chrono::steady_clock::now();
  (void)std::system(cmd.c_str());
  Outcome o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const json doc = json::parse(read(out), nullptr, false);
  o.status = "NO_RESULT";
  o.log = "no JSON from solbench eval; stderr:\n" + read(err).substr(0, 4000);
  if (doc.is_object()) {
    o.build = doc.value("build", json(nullptr));
    const json results = doc.value("results", json::array());
    const json* chosen = nullptr;
    for (const auto& r : results)
      if (r.contains("evaluation") && r.at("evaluation").at("status") != "PASSED") {
        chosen = &r;
        break;
      }
    if (!chosen)
      for (const auto& r : results)
        if (r.contains("evaluation")) {
          chosen = &r;
          break;
        }
    if (!chosen && !results.empty()) {  // every row skipped (e.g. --build-only)
      o.status = "SKIPPED";
      o.log = results.at(0).value("skip_reason", "");
    }
    if (chosen) {
      const json& ev = chosen->at("evaluation");
      o.status = ev.at("status").get<std::string>();
      o.log = ev.value("log", "");
      if (ev.contains("performance") && ev["performance"].is_object()) {
        const json& p = ev["performance"];
        if (p.value("latency_ms", 0.0) > 0) o.latency_ms = p.value("latency_ms", 0.0);
        if (p.value("reference_latency_ms", 0.0) > 0)
          o.reference_latency_ms = p.value("reference_latency_ms", 0.0);
      }
    }
  }
  for (const auto& a : e.value("absent", json::array())) {
    for (const fs::path& f : existing(fill(a.get<std::string>()))) {
      const std::string p = f.string();
      o.problems.push_back(p + " exists");
      std::error_code ec;
      if (p.rfind("/tmp/solbench-hack-", 0) == 0 || p.rfind("/dev/shm/solbench-hack-", 0) == 0)
        fs::remove(p, ec);  // outside our folder
    }
  }
  if (read(problem / "definition.json") != before_def) o.problems.push_back("definition.json changed");
  if (read(problem / "workload.jsonl") != before_wl) o.problems.push_back("workload.jsonl changed");
  return o;
}

// Evaluates every entry whose test will run, before the first of them asserts.
class Corpus {
 public:
  static Corpus& get() {
    static Corpus c;
    return c;
  }

  void prefetch(std::vector<std::string> todo) {
    // The slowest (a torch-binding build) first, so that it overlaps the rest.
    std::stable_sort(todo.begin(), todo.end(), [](const std::string& a, const std::string& b) {
      return (entry(a).at("kind") == "cpp_torch") > (entry(b).at("kind") == "cpp_torch");
    });
    int jobs = 3;
    if (const char* j = std::getenv("SOLBENCH_HACK_JOBS")) jobs = std::max(1, std::atoi(j));
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int i = 0; i < jobs; ++i)
      pool.emplace_back([&] {
        for (size_t k; (k = next++) < todo.size();) (void)result(todo[k]);
      });
    for (auto& t : pool) t.join();
    wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!todo.empty())
      std::printf("[hack corpus] %zu evaluations in %.1f s (%d at a time)\n", todo.size(), wall_s_,
                  jobs);
  }

  // The outcome of `name`, evaluated on first use.
  const Outcome& result(const std::string& name) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = done_.find(name);
    if (it != done_.end()) return it->second;
    if (running_.count(name)) {
      cv_.wait(lock, [&] { return done_.count(name) > 0; });
      return done_.at(name);
    }
    running_.insert({name, true});
    lock.unlock();
    Outcome o = evaluate(tmp_.path(), entry(name));
    lock.lock();
    running_.erase(name);
    const Outcome& r = done_.emplace(name, std::move(o)).first->second;
    cv_.notify_all();
    return r;
  }

  const fs::path& root() const { return tmp_.path(); }

 private:
  testing::TempDir tmp_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Outcome> done_;
  std::map<std::string, bool> running_;
  double wall_s_ = 0;
};

std::string describe(const Outcome& o) {
  std::string s = "measured " + o.status;
  if (o.latency_ms) s += ", latency " + std::to_string(*o.latency_ms) + " ms";
  if (o.reference_latency_ms) s += ", reference " + std::to_string(*o.reference_latency_ms) + " ms";
  return s + "; log: " + o.log.substr(0, 1500);
}

class HackCorpus : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    // The entries of this suite that the filter selects, all at once.
    std::vector<std::string> todo;
    const auto* unit = ::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit->total_test_suite_count(); ++i) {
      const auto* suite = unit->GetTestSuite(i);
      if (std::string(suite->name()).find("HackCorpus") == std::string::npos) continue;
      for (int k = 0; k < suite->total_test_count(); ++k) {
        const auto* t = suite->GetTestInfo(k);
        if (!t->should_run() || !t->value_param()) continue;
        std::string v = t->value_param();  // printed as "\"name\""
        v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
        todo.push_back(v);
        // An honest twin named for a time comparison is needed too.
        for (const char* key : {"honest_time_vs", "honest_reference_vs"}) {
          const std::string twin = entry(v).value(key, "");
          if (!twin.empty()) todo.push_back(twin);
        }
      }
    }
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    Corpus::get().prefetch(todo);
  }
};

TEST_P(HackCorpus, GetsItsExpectedStatus) {
  const std::string name = GetParam();
  const json& e = entry(name);
  const Outcome& o = Corpus::get().result(name);
  const std::string expected = e.at("expected").get<std::string>();
  const std::string gap = e.value("known_gap", "");
  RecordProperty("measured", o.status);
  RecordProperty("seconds", std::to_string(o.seconds));
  std::printf("[hack corpus] %-32s expected %-20s %s (%.1f s)\n", name.c_str(), expected.c_str(),
              o.status.c_str(), o.seconds);

  // Files the hack tried to plant, and the problem folder, are checked whatever the
  // status: a write that got through is never a known gap.
  for (const auto& p : o.problems) ADD_FAILURE() << name << ": " << p;

  if (o.status != expected && !gap.empty())
    GTEST_SKIP() << "known gap: " << gap << " [" << name << ": expected " << expected << ", "
                 << describe(o) << "]";
  ASSERT_EQ(o.status, expected) << name << " (" << e.at("class").get<std::string>() << "): "
                                << describe(o);
  if (!gap.empty())
    std::printf("[hack corpus] %s: the known gap is closed; drop known_gap from the manifest\n",
                name.c_str());

  const json any = e.value("log_any", json::array());
  if (!any.empty()) {
    bool found = false;
    for (const auto& s : any) found = found || o.log.find(s.get<std::string>()) != std::string::npos;
    EXPECT_TRUE(found) << name << ": the log names none of " << any.dump() << "\n" << o.log;
  }

  // A PASSED hack (made inert by the harness) must not have a faked time: it does
  // the work its honest twin does and cannot be several times faster.
  const std::string twin = e.value("honest_time_vs", "");
  if (expected == "PASSED" && !twin.empty()) {
    const Outcome& h = Corpus::get().result(twin);
    ASSERT_TRUE(o.latency_ms && h.latency_ms) << describe(o) << "\ntwin: " << describe(h);
    EXPECT_GE(*o.latency_ms, 0.3 * *h.latency_ms)
        << name << " reports " << *o.latency_ms << " ms, its honest twin " << twin << " "
        << *h.latency_ms << " ms: a faked time";
  }

  // A PASSED hack that tried to slow the reference: T_ref (the speedup's
  // denominator) must be about what the reference takes beside an honest solution.
  // The 3x margin covers noise on a loaded machine; the slowing it guards against
  // is ~10x.
  const std::string ref_twin = e.value("honest_reference_vs", "");
  if (expected == "PASSED" && !ref_twin.empty()) {
    const Outcome& h = Corpus::get().result(ref_twin);
    ASSERT_TRUE(o.reference_latency_ms && h.reference_latency_ms)
        << describe(o) << "\ntwin: " << describe(h);
    EXPECT_LE(*o.reference_latency_ms, 3.0 * *h.reference_latency_ms)
        << name << ": the reference took " << *o.reference_latency_ms << " ms, beside its honest "
        << "twin " << ref_twin << " " << *h.reference_latency_ms << " ms: a slowed reference";
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, HackCorpus, ::testing::ValuesIn(names(false)),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// --- the corpus itself

TEST(HackCorpusManifest, EntriesAreCompleteAndSolutionsMatchTheirSources) {
  const json& m = manifest();
  const std::vector<std::string> statuses = {"PASSED", "REWARD_HACK", "RUNTIME_ERROR",
                                             "INCORRECT_NUMERICAL"};
  std::map<std::string, int> seen;
  int cpu = 0, twins = 0;
  for (const auto& e : m.at("entries")) {
    const std::string name = e.at("name").get<std::string>();
    EXPECT_EQ(seen[name]++, 0) << "duplicate entry " << name;
    for (const char* k : {"kind", "class", "tries", "expected"})
      EXPECT_TRUE(e.contains(k) && e[k].is_string()) << name << " lacks " << k;
    EXPECT_NE(std::find(statuses.begin(), statuses.end(), e.value("expected", "")), statuses.end())
        << name;
    if (!e.value("gpu_only", false)) ++cpu;
    if (e.value("expected", "") == "PASSED") ++twins;
    for (const char* key : {"honest_time_vs", "honest_reference_vs"})
      if (e.contains(key)) {
        EXPECT_NO_THROW(entry(e[key].get<std::string>()));
      }

    // solution.json carries exactly the files of the entry's folder (make_corpus.py),
    // or of the entry a twin takes its sources from.
    const fs::path dir = kHacks / name;
    ASSERT_TRUE(fs::exists(dir / "solution.json")) << name;
    const fs::path src = kHacks / e.value("sources_from", name);
    if (e.contains("sources_from")) {
      EXPECT_NO_THROW(entry(e["sources_from"].get<std::string>())) << name;
      for (const auto& f : fs::directory_iterator(dir))
        EXPECT_EQ(f.path().filename(), "solution.json") << name << ": a twin holds no sources";
    }
    const json sol = json::parse(read(dir / "solution.json"));
    EXPECT_EQ(sol.at("definition"), m.at("problem")) << name;
    std::map<std::string, std::string> in_json;
    for (const auto& s : sol.at("sources"))
      in_json[s.at("path").get<std::string>()] = s.at("content").get<std::string>();
    for (const auto& f : fs::directory_iterator(src)) {
      const std::string file = f.path().filename().string();
      if (file == "solution.json") continue;
      EXPECT_EQ(in_json[file], read(f.path()))
          << name << "/" << file << " differs from solution.json: run tests/hacks/make_corpus.py";
    }
    if (in_json.count("rms_common.h")) {
      EXPECT_EQ(in_json["rms_common.h"], read(kHacks / "common" / "rms_common.h"))
          << name << ": run tests/hacks/make_corpus.py";
    }
  }
  EXPECT_GE(cpu, 30);
  EXPECT_GE(twins, 3);
}

// gpu_only entries: valid solutions of the problem; native CUDA ones build here too.
class GpuOnlyHack : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuOnlyHack, IsValidAndBuilds) {
  const std::string name = GetParam();
  const json& e = entry(name);
  const fs::path sol = kHacks / name / "solution.json";
  const fs::path problem = fs::path(SOLBENCH_SOURCE_DIR) / "problems" /
                           manifest().at("problem").get<std::string>();
  testing::TempDir tmp;
  const std::string validate = quote(SOLBENCH_BINARY) + " validate " + quote(problem.string()) +
                               " --solution " + quote(sol.string()) + " >" +
                               quote((tmp.path() / "v.txt").string()) + " 2>&1";
  EXPECT_EQ(std::system(validate.c_str()), 0) << read(tmp.path() / "v.txt");
  if (e.at("kind") != "cuda_native") return;
  // Building needs nvcc, not a GPU: --build-only builds and evaluates nothing.
  const Outcome o = evaluate(tmp.path(), e, "cuda:0", " --cuda-arch 90a --build-only");
  const std::string status = o.build.is_object() ? o.build.value("status", "") : "";
  const std::string log = o.build.is_object() ? o.build.value("log", "") : o.log;
  if (status != "ok" && log.find("not found") != std::string::npos)
    GTEST_SKIP() << "no CUDA compiler here: " << log.substr(0, 300);
  EXPECT_EQ(status, "ok") << o.build.dump(2) << "\n" << o.log;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuOnlyHack, ::testing::ValuesIn(names(true)),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace solbench
