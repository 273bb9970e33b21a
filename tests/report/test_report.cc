// The page built from a hand-made store and the bundled RMSNorm problem on the
// H100 SXM model: what collect() places, the HTML structure, escaping, that
// nothing is fetched from elsewhere, that every link has its target, filters,
// categories, and `solbench report` through the binary.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>

#include "report/html.h"
#include "report_fixture.h"
#include "test_support.h"

namespace solbench::report::testing {
namespace {

using solbench::testing::read;

#define REQUIRE_ANALYSIS() \
  if (!analysis_available()) GTEST_SKIP() << "embedded Python with torch is not available"

const ProblemReport* find_problem(const Report& r, const std::string& definition) {
  for (const auto& p : r.problems)
    if (p.definition == definition) return &p;
  return nullptr;
}

TEST_F(ReportTest, PlacesEveryTimeItCanAndSaysWhyForTheRest) {
  REQUIRE_ANALYSIS();
  record_sample();
  const Report r = collect_sample(options());
  ASSERT_EQ(r.problems.size(), 2u);
  const ProblemReport* p = find_problem(r, kRmsnorm);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->roofs);
  EXPECT_EQ(p->roofs->hardware, "h100_sxm");
  EXPECT_EQ(p->category, "all");
  ASSERT_EQ(p->workloads.size(), kWorkloads.size());
  for (size_t i = 0; i < uuids_.size(); ++i) EXPECT_EQ(p->workloads[i].uuid, uuids_[i]);  // folder order
  ASSERT_EQ(p->solutions.size(), 3u);
  EXPECT_EQ(p->solutions[0].name, "cuda_rmsnorm");  // rank 1: the highest mean score
  EXPECT_EQ(p->solutions[0].rank, 1);
  // T_SOL, T_b, two solutions on each workload, the failing one once.
  EXPECT_EQ(p->points.size(), 4 * kWorkloads.size() + 1);
  ASSERT_EQ(p->not_placed.size(), kWorkloads.size() - 1);
  for (const auto& n : p->not_placed) {
    EXPECT_EQ(n.what, "solution " + kXss);
    EXPECT_EQ(n.reason, "status RUNTIME_ERROR: no latency");
  }
  // RMSNorm's work is CUDA-core fp32/bf16: those roofs are the used ones.
  int used = 0;
  for (const auto& roof : p->roofs->compute) used += roof.used;
  EXPECT_GE(used, 1);
  for (const auto& roof : p->roofs->compute) {
    if (roof.name.rfind("tensor bf16", 0) == 0) {
      EXPECT_FALSE(roof.used);
    }
  }

  // Each point is work / time at the workload's intensity; none is above a roof.
  for (const auto& w : p->workloads) {
    ASSERT_TRUE(w.work) << w.work_reason;
    EXPECT_GT(w.work->flop, 0);
    for (const auto& pt : p->points) {
      if (pt.target.rfind(w.anchor, 0) != 0) continue;
      EXPECT_DOUBLE_EQ(pt.intensity, w.work->flop / w.work->bytes);
      const double roof =
          std::min(p->roofs->bandwidth * pt.intensity, p->roofs->compute.front().flops);
      EXPECT_LE(pt.flops_per_s, roof * (1 + 1e-9)) << pt.label;
      if (pt.kind == PointKind::Sol) {
        EXPECT_NEAR(pt.flops_per_s, w.work->flop / (w.work->t_sol_ms * 1e-3), 1e-6 * pt.flops_per_s);
      }
    }
  }
  // The problem's score is its best solution's mean (as the leaderboard has it).
  ASSERT_TRUE(p->score.mean);
  EXPECT_NEAR(*p->score.mean, *p->solutions[0].mean_score, 1e-12);
  EXPECT_EQ(p->histogram.total(), int(kWorkloads.size()));

  const ProblemReport* orphan = find_problem(r, kOrphan);
  ASSERT_TRUE(orphan);
  EXPECT_TRUE(orphan->points.empty());
  ASSERT_EQ(orphan->not_placed.size(), 2u);
  EXPECT_EQ(orphan->not_placed[0].what, "every point");
  EXPECT_HAS(orphan->not_placed[0].reason, "no problem folder under --problems has the definition");
  ASSERT_EQ(r.categories.size(), 1u);
  EXPECT_EQ(r.categories[0].name, "all");
  EXPECT_EQ(r.categories[0].problems.size(), 2u);
}

TEST_F(ReportTest, PageHasTitleOneChartPerProblemRoofsPointsAndRows) {
  REQUIRE_ANALYSIS();
  record_sample();
  const std::string page = render_html(collect_sample(options()));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_HAS(page, "<title>solbench report</title>");
  EXPECT_EQ(count(page, "<svg class=\"roofline\""), 2u);  // one per problem
  EXPECT_EQ(count(page, "<svg class=\"histogram\""), 1u);  // one per category
  EXPECT_EQ(count(page, "<svg"), count(page, "</svg>"));
  EXPECT_EQ(count(page, "class=\"roof memory\""), 2u);
  EXPECT_GE(count(page, "class=\"roof compute used\""), 1u);
  EXPECT_GE(count(page, "class=\"roof compute\""), 4u);  // the unused ones, dashed
  EXPECT_HAS(page, "tensor bf16/fp16 989.4");
  EXPECT_EQ(count(page, "class=\"point sol\""), kWorkloads.size());
  EXPECT_EQ(count(page, "class=\"point baseline\""), kWorkloads.size());
  EXPECT_EQ(count(page, "class=\"point solution\""), 2 * kWorkloads.size() + 1);
  // One table row per stored trace, each with its anchor.
  EXPECT_EQ(count(page, "<tr id=\""), 3 * kWorkloads.size() + 2);
  EXPECT_HAS(page, "<th>T_k (ms)</th><th>T_b (ms)</th><th>T_SOL (ms)</th><th>S</th>");
  EXPECT_HAS(page, "RUNTIME_ERROR");
  EXPECT_HAS(page, "Not on the chart (5)");
  EXPECT_HAS(page, "status RUNTIME_ERROR: no latency");
  EXPECT_HAS(page, "no problem folder under --problems has the definition");
  EXPECT_HAS(page, "id=\"overview\"");
  EXPECT_HAS(page, "Category all");
  EXPECT_HAS(page, "problem folder <code>");
}

TEST_F(ReportTest, StringsFromTheStoreAreText) {
  REQUIRE_ANALYSIS();
  record_sample();
  ReportOptions o = options();
  o.title = "<b>nightly</b>";
  const std::string page = render_html(collect_sample(o));
  EXPECT_EQ(page.find(kXss), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<b>nightly"), std::string::npos);
  EXPECT_HAS(page, "&lt;script&gt;alert(1)&lt;/script&gt;");  // the name, in tables and legend
  EXPECT_HAS(page, "&lt;img src=x onerror=alert(2)&gt;");     // the failing trace's log
  EXPECT_HAS(page, "<title>&lt;b&gt;nightly&lt;/b&gt;</title>");
}

// An eager T_b says "eager (why)" beside it in the table and above the chart; a
// compiled one says nothing more. Needs no analysis: the rows are drawn unplaced.
TEST_F(ReportTest, AnEagerBaselineSaysSoBesideItsTime) {
  const std::string why = "torch.compile failed on a call: <b>boom</b>";
  const json w1 = {{"uuid", "0000aaaa-1111-2222-3333-444455556666"}, {"axes", {{"n", 64}}},
                   {"inputs", json::object()}};
  const json w2 = {{"uuid", "0000bbbb-1111-2222-3333-444455556666"}, {"axes", {{"n", 128}}},
                   {"inputs", json::object()}};
  record(kOrphan, "orphan_kernel", w1, Status::Passed, 0.01, 0.004, 0.02, "", "eager", why);
  record(kOrphan, "orphan_kernel", w2, Status::Passed, 0.01, 0.004, 0.03);
  const Report r = collect_sample(options());
  const ProblemReport* p = find_problem(r, kOrphan);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->workloads.size(), 2u);
  EXPECT_EQ(p->workloads[0].rows[0].t_b_method, "eager");
  EXPECT_EQ(p->workloads[0].rows[0].t_b_reason, why);
  EXPECT_EQ(p->workloads[0].t_b_method, "eager");
  EXPECT_EQ(p->workloads[1].rows[0].t_b_method, "torch.compile");
  bool noted = false;
  for (const auto& n : p->notes) noted = noted || n.find("eager (" + why + ")") != std::string::npos;
  EXPECT_TRUE(noted) << "no note about the eager T_b";
  const std::string page = render_html(r);
  EXPECT_EQ(count(page, "<span class=\"eager\">"), 1u);
  EXPECT_HAS(page, "0.02 <span class=\"eager\">eager (torch.compile failed on a call: "
                   "&lt;b&gt;boom&lt;/b&gt;)</span>");
  EXPECT_EQ(page.find("<b>boom"), std::string::npos);
  EXPECT_HAS(page, "1 trace(s) scored against a T_b that is eager");
}

TEST_F(ReportTest, TAttainableStandsBesideTSolWhereItWasRecorded) {
  const json w1 = {{"uuid", "0000cccc-1111-2222-3333-444455556666"}, {"axes", {{"n", 64}}},
                   {"inputs", json::object()}};
  const json w2 = {{"uuid", "0000dddd-1111-2222-3333-444455556666"}, {"axes", {{"n", 128}}},
                   {"inputs", json::object()}};
  record(kOrphan, "orphan_kernel", w1, Status::Passed, 0.01, 0.004, 0.02, "", "torch.compile", "",
         nullptr, 0.0065);
  record(kOrphan, "orphan_kernel", w2, Status::Passed, 0.01, 0.004, 0.03);
  const Report r = collect_sample(options());
  const ProblemReport* p = find_problem(r, kOrphan);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->workloads.size(), 2u);
  ASSERT_TRUE(p->workloads[0].rows[0].t_attainable_ms);
  EXPECT_DOUBLE_EQ(*p->workloads[0].rows[0].t_attainable_ms, 0.0065);
  EXPECT_FALSE(p->workloads[1].rows[0].t_attainable_ms);
  const std::string page = render_html(r);
  EXPECT_EQ(count(page, "<div class=\"attainable\""), 1u);
  EXPECT_HAS(page, ">attainable 0.0065</div>");
}

TEST_F(ReportTest, PageFetchesNothing) {
  REQUIRE_ANALYSIS();
  record_sample();
  const std::string page = render_html(collect_sample(options()));
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("@font-face"), std::string::npos);
  EXPECT_EQ(page.find(" src=\""), std::string::npos);
  // url() only for the charts' own clip paths.
  const std::regex url(R"(url\((?!#))");
  EXPECT_FALSE(std::regex_search(page, url));
}

TEST_F(ReportTest, EveryLinkHasItsTargetAndIdsAreUnique) {
  REQUIRE_ANALYSIS();
  record_sample();
  const std::string page = render_html(collect_sample(options()));
  std::set<std::string> ids;
  const std::regex id_re(R"re( id="([^"]+)")re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), id_re); it != std::sregex_iterator(); ++it)
    EXPECT_TRUE(ids.insert((*it)[1]).second) << "duplicate id " << (*it)[1];
  size_t links = 0;
  const std::regex href_re(R"re(href="#([^"]*)")re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), href_re); it != std::sregex_iterator();
       ++it, ++links)
    EXPECT_TRUE(ids.count((*it)[1])) << "link to a missing anchor #" << (*it)[1];
  // Overview -> problems -> charts -> rows, and back.
  EXPECT_GT(links, 3 * kWorkloads.size() * 2);
  EXPECT_HAS(page, "href=\"#p-" + kRmsnorm + "\"");
  EXPECT_HAS(page, "href=\"#p-" + kRmsnorm + "-chart\"");
  EXPECT_HAS(page, "href=\"#overview\"");
  EXPECT_HAS(page, "<a href=\"#p-" + kRmsnorm + "-w-" + anchor_id(uuids_[0]) + "-s0\"><title>");
}

TEST_F(ReportTest, GlobAndDefinitionSelectProblems) {
  REQUIRE_ANALYSIS();
  record_sample();
  ReportOptions o = options();
  o.problem_globs = {"001_*"};
  Report r = collect_sample(o);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].definition, kRmsnorm);
  EXPECT_HAS(render_html(r), "selection: problem 001_*");
  o = options();
  o.filter.definition = kOrphan;
  r = collect_sample(o);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].definition, kOrphan);
  o.problem_globs = {"nothing*"};
  r = collect_sample(o);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_HAS(render_html(r), "No traces match");
}

TEST_F(ReportTest, CategoryComesFromTheDataSetLayout) {
  REQUIRE_ANALYSIS();
  record_sample();
  // ROOT/CATEGORY/PROBLEM, as the public data set is laid out.
  const fs::path set = dir_.path() / "set";
  const fs::path dst = set / "norms" / kRmsnorm;
  fs::create_directories(dst);
  for (const char* f : {"definition.json", "workload.jsonl", "reference.py"})
    fs::copy_file(problems_dir() / kRmsnorm / f, dst / f);
  ReportOptions o = options();
  o.problem_dirs = {set};
  const Report r = collect_sample(o);
  ASSERT_EQ(r.categories.size(), 2u);  // "all" for the problem without a folder
  const ProblemReport* p = find_problem(r, kRmsnorm);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->category, "norms");
  EXPECT_EQ(p->points.size(), 4 * kWorkloads.size() + 1);
  EXPECT_HAS(render_html(r), "Category norms");
}

TEST_F(ReportTest, AFailedAnalysisIsSaidWherePointsAreMissing) {
  record_sample();
  ReportOptions o = options();
  o.analyse = [](const Problem&, size_t, const sol::HardwareModel&) {
    return json{{"status", "error"}, {"reason", "tracer crashed <oops>"}};
  };
  const Report r = collect_sample(o);
  const ProblemReport* p = find_problem(r, kRmsnorm);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->points.empty());
  ASSERT_EQ(p->not_placed.size(), kWorkloads.size());
  EXPECT_HAS(p->not_placed[0].reason, "status error: tracer crashed <oops>");
  const std::string page = render_html(r);
  EXPECT_HAS(page, "tracer crashed &lt;oops&gt;");
  EXPECT_EQ(count(page, "<svg class=\"roofline\""), 2u);  // the roofs are still drawn
}

TEST_F(ReportTest, WithoutProblemFoldersThePageSaysWhyNothingIsPlaced) {
  record_sample();
  ReportOptions o = options();
  o.problem_dirs.clear();
  const Report r = collect_sample(o);
  EXPECT_EQ(r.placed(), 0u);
  EXPECT_EQ(r.not_placed(), kWorkloads.size() + 2);
  const std::string page = render_html(r);
  EXPECT_HAS(page, "No problem folders were given (--problems DIR)");
  EXPECT_HAS(page, "pass --problems DIR");
}

TEST_F(ReportTest, ArchDefaultsToTheModelTheTracesWereScoredOn) {
  record_sample();
  ReportOptions o = options();
  o.arch.clear();
  o.analyse = [](const Problem&, size_t, const sol::HardwareModel& hw) {
    return json{{"status", "error"}, {"reason", "model " + hw.name}};
  };
  const Report r = collect_sample(o);
  const ProblemReport* p = find_problem(r, kRmsnorm);
  ASSERT_TRUE(p && p->roofs);
  EXPECT_EQ(p->roofs->hardware, "h100_sxm");
  // The traces say "NVIDIA H100 80GB HBM3", an alias of the same model: no mismatch note.
  for (const auto& n : p->notes) EXPECT_EQ(n.find("another chip"), std::string::npos) << n;
  o.arch = "b200";
  const Report other = collect_sample(o);
  const ProblemReport* q = find_problem(other, kRmsnorm);
  ASSERT_TRUE(q && q->roofs);
  EXPECT_EQ(q->roofs->hardware, "b200");
  bool noted = false;
  for (const auto& n : q->notes) noted = noted || n.find("another chip") != std::string::npos;
  EXPECT_TRUE(noted);
  o.arch = "no_such_gpu";
  EXPECT_THROW(collect_sample(o), InputError);
}

// `solbench report` through the binary.
int run(const std::string& args) {
  const int rc = std::system(("'" SOLBENCH_BINARY "' report " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST_F(ReportTest, CommandWritesThePage) {
  REQUIRE_ANALYSIS();
  record_sample();
  const fs::path out = dir_.path() / "out" / "report.html";
  fs::create_directories(out.parent_path());
  ASSERT_EQ(run("--db '" + db_.string() + "' --problems '" + problems_dir().string() +
                "' --arch h100_sxm --problem '001_*' -o '" + out.string() + "'"),
            0);
  const std::string page = read(out);
  EXPECT_HAS(page, "<title>solbench report</title>");
  EXPECT_EQ(count(page, "<svg class=\"roofline\""), 1u);
  EXPECT_EQ(count(page, "class=\"point sol\""), kWorkloads.size());
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
  EXPECT_EQ(run("--db '" + db_.string() + "' --arch no_such_gpu -o '" + out.string() + "'"), 2);
  EXPECT_EQ(run("--db '" + (dir_.path() / "missing.db").string() + "' -o '" + out.string() + "'"), 1);
  EXPECT_FALSE(fs::exists(dir_.path() / "missing.db"));  // a report never creates a store
  EXPECT_EQ(run("--db '" + db_.string() + "'"), 2);       // -o is required
}

}  // namespace
}  // namespace solbench::report::testing

namespace solbench::report::testing {
namespace {

// A call's profile as `eval --profile` writes it: `kernels` kernels of which one is
// listed (`name`, 40 us, `share` of T_k, 4096 blocks of 256 threads), `gaps_us`
// between them, its FP32 FLOPs and achieved intensity against a bound of 1.5.
json kernel_profile(const std::string& name, int kernels, double intensity, double flops,
                    double gaps_us, double share) {
  return json{{"available", true},
              {"kernel_count", kernels},
              {"span_us", 40.0},
              {"gaps_us", gaps_us},
              {"host_us", 12.0},
              {"activities",
               {{{"kind", "kernel"}, {"name", name}, {"grid", {4096, 1, 1}}, {"block", {256, 1, 1}},
                 {"duration_us", 40.0}, {"share_of_t_k", share}, {"gap_before_us", 0.0}}}},
              {"roofline",
               {{"achieved", {{"tensor_flops", json::object()}, {"fp32_flops", flops}}},
                {"intensity", {{"achieved", intensity}, {"bound", 1.5}}}}}};
}

// A trace made with `eval --profile`: the row shows the verdict and the kernels, and
// the chart has the solution a second time, at the intensity its counters measured.
TEST_F(ReportTest, AProfiledTraceShowsItsKernelsAndWhereItReallyStands) {
  Diagnostics diags;
  const Problem prob = load_problem(problem_paths(problems_dir() / kRmsnorm), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const json w = to_json(prob.workloads[12]);
  json profile = kernel_profile("rms_kernel<<b>>(float*)", 1, 2.0, 2.0e8, 0.0, 0.95);
  profile["verdict"] = "T_k is 1.2x T_SOL; 1 kernel; moves 1.3x the minimum bytes";
  record(kRmsnorm, "cuda_rmsnorm", w, Status::Passed, 0.042, 0.035, 0.08, "", "torch.compile", "",
         profile);
  record(kRmsnorm, "triton_rmsnorm", w, Status::Passed, 0.05, 0.035, 0.08);
  const Report r = collect_sample(options());
  const ProblemReport* p = find_problem(r, kRmsnorm);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->workloads.size(), 1u);
  size_t profiled = 0;
  for (const Row& row : p->workloads[0].rows) profiled += row.profile.is_object() ? 1 : 0;
  EXPECT_EQ(profiled, 1u);  // the store kept the profile with its trace; the other has none
  const std::string page = render_html(r);
  EXPECT_HAS(page, "profile: T_k is 1.2x T_SOL; 1 kernel; moves 1.3x the minimum bytes");
  EXPECT_HAS(page, "rms_kernel&lt;&lt;b&gt;&gt;(float*)");  // a name from the trace is text
  EXPECT_HAS(page, "4096x1x1 x 256x1x1");
  EXPECT_EQ(count(page, "<tr class=\"profile\">"), 1u);
  if (!analysis_available()) return;  // no work, no chart points
  size_t measured = 0;
  for (const ChartPoint& pt : p->points)
    if (pt.kind == PointKind::Measured) {
      ++measured;
      EXPECT_DOUBLE_EQ(pt.intensity, 2.0);
      EXPECT_NEAR(pt.flops_per_s, 2.0e8 / 42e-6, 1.0);
    }
  EXPECT_EQ(measured, 1u);
  EXPECT_HAS(page, "class=\"point measured\"");
  EXPECT_HAS(page, "as measured (eval --profile");
  // No reference profile in the trace: no reference ring, no legend entry, no kernels.
  EXPECT_EQ(page.find("reference-measured"), std::string::npos);
  EXPECT_EQ(page.find("reference, as measured"), std::string::npos);
  EXPECT_EQ(page.find("class=\"kernels reference\""), std::string::npos);
}

// With the reference's profile (made where T_ref was timed): its kernels under the
// solution's, and a ring where the reference really stands (its FLOPs over T_ref),
// once per workload, beside the solution's.
TEST_F(ReportTest, AProfiledReferenceIsListedAndRingedBesideTheSolution) {
  Diagnostics diags;
  const Problem prob = load_problem(problem_paths(problems_dir() / kRmsnorm), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const json w = to_json(prob.workloads[12]);
  const auto profile = [](const std::string& kernel, int kernels, double intensity, double flops) {
    return kernel_profile(kernel, kernels, intensity, flops, 1.0, 0.5);
  };
  json p = profile("rms_kernel(float*)", 1, 2.0, 2.0e8);
  p["verdict"] = "T_k is 1.2x T_SOL; 1 kernel; reference: 3 kernels, moves 2.9x the minimum bytes";
  p["reference"] = profile("at::native::<unnamed>::reduce_kernel<512>", 3, 0.5, 1.0e8);
  // T_b 0.08 ms; the fixture records T_ref = 1.3 T_b = 0.104 ms.
  record(kRmsnorm, "cuda_rmsnorm", w, Status::Passed, 0.042, 0.035, 0.08, "", "torch.compile", "",
         p);
  json p2 = profile("triton_rms", 1, 1.9, 2.0e8);
  p2["reference"] = profile("at::native::<unnamed>::reduce_kernel<512>", 3, 0.5, 1.0e8);
  record(kRmsnorm, "triton_rmsnorm", w, Status::Passed, 0.05, 0.035, 0.08, "", "torch.compile", "",
         p2);
  const Report r = collect_sample(options());
  const ProblemReport* pr = find_problem(r, kRmsnorm);
  ASSERT_TRUE(pr);
  const std::string page = render_html(r);
  EXPECT_HAS(page, "reference: 3 kernels, moves 2.9x the minimum bytes");
  // Under each row, the reference's kernels after the solution's.
  EXPECT_EQ(count(page, "<details class=\"kernels reference\"><summary>reference: 3 kernel(s)"), 2u);
  EXPECT_HAS(page, "at::native::&lt;unnamed&gt;::reduce_kernel&lt;512&gt;");
  EXPECT_LT(page.find("rms_kernel(float*)"), page.find("reduce_kernel&lt;512&gt;"));
  EXPECT_HAS(page, "<th>share of T_ref</th>");
  if (!analysis_available()) return;  // no work, no chart points
  size_t rings = 0;
  for (const ChartPoint& pt : pr->points)
    if (pt.kind == PointKind::ReferenceMeasured) {
      ++rings;
      EXPECT_DOUBLE_EQ(pt.intensity, 0.5);
      EXPECT_NEAR(pt.flops_per_s, 1.0e8 / 104e-6, 1.0);  // over T_ref, not T_k
      EXPECT_HAS(pt.label, "reference on ");
    }
  EXPECT_EQ(rings, 1u);  // one per workload, however many solutions carry it
  EXPECT_EQ(count(page, "class=\"point reference-measured\""), 1u);
  EXPECT_EQ(count(page, "class=\"point measured\""), 2u);
  EXPECT_HAS(page, "reference, as measured (over T_ref)");
}

}  // namespace
}  // namespace solbench::report::testing
