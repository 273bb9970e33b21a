// `solbench db leaderboard|best|history|export` on a store made through the API.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "store_test_util.h"

namespace solbench::store {
namespace {

namespace fs = std::filesystem;
using testing::make_trace;

struct CliRun {
  int rc = -1;
  std::string out;
  std::string err;
  json doc;  // stdout parsed, when it is JSON
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class CliDbTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    record(make_trace("gemm", "slow", "w1", Status::Passed, 2.0), 0.25);
    record(make_trace("gemm", "fast", "w1", Status::Passed, 0.5), 0.75);
    record(make_trace("gemm", "fast", "w2", Status::RuntimeError), std::nullopt);
    record(make_trace("rmsnorm", "rms", "r1", Status::Passed, 0.1), 0.5);
    store_.reset();  // the CLI opens the file itself
  }

  // Runs `solbench db ARGS` with $SOLBENCH_CACHE_DIR set to `cache_dir`.
  CliRun db(const std::string& args, const fs::path& cache_dir = "/nonexistent") {
    CliRun r;
    const fs::path out = dir_.path() / "stdout.txt", err = dir_.path() / "stderr.txt";
    const std::string cmd = "SOLBENCH_CACHE_DIR='" + cache_dir.string() + "' '" +
                            SOLBENCH_BINARY + "' db " + args + " >'" + out.string() + "' 2>'" +
                            err.string() + "'";
    const int status = std::system(cmd.c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    r.doc = json::parse(r.out, nullptr, false);
    return r;
  }

  std::string at() const { return " --db '" + db_.string() + "'"; }
};

TEST_F(CliDbTest, LeaderboardPrintsTheRankingAsATableOrOneJsonDocument) {
  CliRun r = db("leaderboard" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "gemm on NVIDIA H100 80GB HBM3");
  EXPECT_LT(r.out.find("slow"), r.out.find("rmsnorm"));
  EXPECT_LT(r.out.find("fast"), r.out.find("slow"));  // 0.375 > 0.25

  r = db("leaderboard --json" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.doc["db"], db_.string());
  const json& rows = r.doc["leaderboard"];
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[0]["solution"], "fast");
  EXPECT_EQ(rows[0]["rank"], 1);
  EXPECT_EQ(rows[0]["mean_score"], 0.375);
  EXPECT_EQ(rows[0]["passed"], 1);
  EXPECT_EQ(rows[1]["solution"], "slow");
  EXPECT_EQ(rows[1]["rank"], 2);
  EXPECT_EQ(rows[2]["definition"], "rmsnorm");

  r = db("leaderboard --json --top 1 --definition gemm" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(r.doc["leaderboard"].size(), 1u) << r.out;
  EXPECT_EQ(r.doc["leaderboard"][0]["solution"], "fast");
}

TEST_F(CliDbTest, BestAndHistoryCarryTheTraces) {
  CliRun r = db("best --json" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  const json& best = r.doc["best"];
  ASSERT_EQ(best.size(), 2u) << r.out;  // gemm w1 and rmsnorm r1 (w2 never passed)
  EXPECT_EQ(best[0]["workload_uuid"], "w1");
  EXPECT_EQ(best[0]["solution"], "fast");
  EXPECT_EQ(best[0]["latency_ms"], 0.5);
  EXPECT_EQ(best[0]["trace"]["evaluation"]["status"], "PASSED");

  r = db("history --json --solution fast" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(r.doc["history"].size(), 2u) << r.out;
  EXPECT_EQ(r.doc["history"][1]["status"], "RUNTIME_ERROR");
  EXPECT_TRUE(r.doc["history"][1]["latency_ms"].is_null());

  r = db("history --definition nothing-like-this" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "no traces match");
}

TEST_F(CliDbTest, ExportWritesJsonlThatLoadTracesReads) {
  const fs::path out = dir_.path() / "out" / "gemm.jsonl";
  CliRun r = db("export --jsonl --definition gemm -o '" + out.string() + "'" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "exported 3 trace(s)");
  Diagnostics diags;
  const std::vector<Trace> back = load_traces(out, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0], make_trace("gemm", "slow", "w1", Status::Passed, 2.0));
  EXPECT_EQ(back[2], make_trace("gemm", "fast", "w2", Status::RuntimeError));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));

  r = db("export --json -o '" + out.string() + "'" + at());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["exported"], 4);
  EXPECT_EQ(r.doc["output"], out.string());

  r = db("export" + at());  // to standard output
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4);
}

TEST_F(CliDbTest, TheDefaultStoreIsUnderSolbenchCacheDir) {
  const fs::path cache = dir_.path();  // holds solbench.db
  CliRun r = db("leaderboard --json", cache);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["db"], (cache / "solbench.db").string());
  EXPECT_EQ(r.doc["leaderboard"].size(), 3u);
}

TEST_F(CliDbTest, AMissingStoreIsAnErrorNamingTheFile) {
  const fs::path missing = dir_.path() / "typo.db";
  CliRun r = db("best --db '" + missing.string() + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, missing.string());
  EXPECT_HAS(r.err, "no results store here");
  EXPECT_FALSE(fs::exists(missing));
  r = db("frobnicate" + at());
  EXPECT_EQ(r.rc, 2);  // usage
  r = db("export --json" + at());
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "needs -o FILE");
}

}  // namespace
}  // namespace solbench::store
