// `eval --profile` (issue #30, docs/profile.md) without a GPU: the kernel breakdown
// and the counters' arithmetic from synthetic records, the roofline position and its
// verdict line, the flag through the settings and the worker protocol, and the
// whole path on the CPU, where the profile says why there is none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "core/text.h"
#include "core/diagnostics.h"
#include "core/problem.h"
#include "eval/profile_verdict.h"
#include "eval/request.h"
#include "harness/eval_plan.h"
#include "harness/protocol.h"
#include "harness/runner_internal.h"  // reference_plan, merge_judged
#include "harness/timing/kernel_profile.h"
#include "test_support.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using harness::CallCounters;
using harness::CallTrace;
using harness::KernelCounters;
using harness::TracedActivity;

TracedActivity kernel(const std::string& name, uint64_t start_ns, uint64_t end_ns,
                      uint32_t stream = 7) {
  TracedActivity a;
  a.name = name;
  a.start_ns = start_ns;
  a.end_ns = end_ns;
  a.stream = stream;
  a.grid = {132, 1, 1};
  a.block = {256, 1, 1};
  return a;
}

// ------------------------------------------------------------ the breakdown

TEST(KernelBreakdown, GapsBusyTimeAndHostTimeFromSyntheticRecords) {
  CallTrace t;
  const uint64_t base = 1'000'000;
  // A 0-10 us, B 15-25 us, C on another stream 20-30 us (overlapping B).
  t.activities = {kernel("_Z1Av", base, base + 10'000),
                  kernel("_Z1Bv", base + 15'000, base + 25'000),
                  kernel("_Z1Cv", base + 20'000, base + 30'000, 9)};
  t.host_wall_ms = 0.050;
  t.host_enqueue_ms = 0.012;
  const json j = harness::kernel_breakdown(t, 0.040);
  EXPECT_EQ(j["kernel_count"], 3);
  EXPECT_EQ(j["streams"], 2);
  EXPECT_DOUBLE_EQ(j["span_us"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(j["busy_us"].get<double>(), 25.0);  // the union: 10 + 10 + 5
  EXPECT_DOUBLE_EQ(j["gaps_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["host_us"].get<double>(), 25.0);  // 50 us of wall less 25 us busy
  EXPECT_DOUBLE_EQ(j["host_enqueue_us"].get<double>(), 12.0);
  EXPECT_NEAR(j["gaps_share_of_t_k"].get<double>(), 5.0 / 40.0, 1e-12);
  const json& a = j["activities"];
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0]["name"], "A()");  // demangled
  EXPECT_DOUBLE_EQ(a[0]["gap_before_us"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(a[1]["gap_before_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(a[2]["gap_before_us"].get<double>(), 0.0);  // overlaps B: no gap
  EXPECT_DOUBLE_EQ(a[1]["start_us"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(a[0]["share_of_t_k"].get<double>(), 0.25);
  EXPECT_EQ(a[0]["grid"], json::array({132, 1, 1}));
  EXPECT_EQ(a[0]["block"], json::array({256, 1, 1}));
  EXPECT_EQ(a[2]["stream"], 9);
}

TEST(KernelBreakdown, RecordsAreOrderedByStartAndCopiesCarryBytes) {
  CallTrace t;
  TracedActivity copy;
  copy.kind = "memcpy";
  copy.name = "memcpy DtoD";
  copy.start_ns = 5'000;
  copy.end_ns = 6'000;
  copy.bytes = 4096;
  t.activities = {kernel("late", 10'000, 12'000), copy};
  t.host_wall_ms = 0.001;  // shorter than the busy time: no negative host time
  const json j = harness::kernel_breakdown(t, std::nullopt);
  ASSERT_EQ(j["activities"].size(), 2u);
  EXPECT_EQ(j["activities"][0]["kind"], "memcpy");
  EXPECT_EQ(j["activities"][0]["bytes"], 4096);
  EXPECT_FALSE(j["activities"][0].contains("grid"));
  EXPECT_EQ(j["activities"][1]["name"], "late");  // not a mangled name: kept
  EXPECT_DOUBLE_EQ(j["activities"][1]["gap_before_us"].get<double>(), 4.0);
  EXPECT_EQ(j["kernel_count"], 1);
  EXPECT_DOUBLE_EQ(j["host_us"].get<double>(), 0.0);
  EXPECT_TRUE(j["share_of_t_k"].is_null() || !j.contains("share_of_t_k"));
  EXPECT_TRUE(j["activities"][1]["share_of_t_k"].is_null());
  EXPECT_TRUE(j["gaps_share_of_t_k"].is_null());
}

TEST(KernelBreakdown, AThousandLaunchesListTheFirstAndCountEvery) {
  CallTrace t;
  for (uint64_t i = 0; i < 1000; ++i)
    t.activities.push_back(kernel("k", i * 2'000, i * 2'000 + 1'000));  // 1 us each, 1 us apart
  const json j = harness::kernel_breakdown(t, 2.0);
  EXPECT_EQ(j["kernel_count"], 1000);
  EXPECT_EQ(j["activities"].size(), 512u);
  EXPECT_EQ(j["activities_omitted"], 488);
  EXPECT_DOUBLE_EQ(j["busy_us"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(j["gaps_us"].get<double>(), 999.0);
}

TEST(KernelBreakdown, ACallWithoutGpuWorkHasAnEmptySpan) {
  CallTrace t;
  t.host_wall_ms = 0.2;
  const json j = harness::kernel_breakdown(t, 0.1);
  EXPECT_EQ(j["kernel_count"], 0);
  EXPECT_DOUBLE_EQ(j["span_us"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["host_us"].get<double>(), 200.0);
}

TEST(KernelBreakdown, KernelNamesAreDemangled) {
  EXPECT_EQ(demangle("_Z6kernelPfi"), "kernel(float*, int)");
  EXPECT_EQ(demangle("triton_poi_fused_0"), "triton_poi_fused_0");
}

// ------------------------------------------------------------ the counters

CallCounters two_kernels() {
  CallCounters c;
  c.metrics = harness::profile_metrics();
  c.replay = "kernel";
  c.passes = 3;
  KernelCounters a{"_Z4gemmv", {}};
  a.values = {{"gpu__time_duration.sum", 10'000},
              {"dram__bytes_read.sum", 2e6},
              {"dram__bytes_write.sum", 1e6},
              {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", 4e9},
              {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 10},
              {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 3},
              {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 2},
              {"sm__inst_executed_pipe_xu.sum", 4}};
  KernelCounters b{"epilogue", {}};
  b.values = {{"gpu__time_duration.sum", 2'000},
              {"dram__bytes_read.sum", 0.5e6},
              {"dram__bytes_write.sum", 0.2e6},
              {"sm__ops_path_tensor_src_fp16_dst_fp32.sum", 1e9}};
  c.kernels = {a, b};
  return c;
}

TEST(CounterSummary, DerivesBytesFlopsByUnitAndRates) {
  const json j = harness::counter_summary(two_kernels());
  EXPECT_TRUE(j["allowed"].get<bool>());
  ASSERT_EQ(j["kernels"].size(), 2u);
  const json& k = j["kernels"][0];
  EXPECT_EQ(k["name"], "gemm()");
  EXPECT_DOUBLE_EQ(k["dram_read_bytes"].get<double>(), 2e6);
  EXPECT_DOUBLE_EQ(k["fp32_flops"].get<double>(), 2 * 10 + 3 + 2);  // an FMA is two FLOPs
  EXPECT_DOUBLE_EQ(k["sfu_ops"].get<double>(), 4 * 32);
  EXPECT_DOUBLE_EQ(k["tensor_flops"]["bf16"].get<double>(), 4e9);
  EXPECT_DOUBLE_EQ(k["dram_gb_per_s"].get<double>(), 3e6 / 10'000);  // bytes per ns
  const json& t = j["total"];
  EXPECT_DOUBLE_EQ(t["dram_read_bytes"].get<double>(), 2.5e6);
  EXPECT_DOUBLE_EQ(t["dram_write_bytes"].get<double>(), 1.2e6);
  EXPECT_DOUBLE_EQ(t["duration_ns"].get<double>(), 12'000);
  EXPECT_DOUBLE_EQ(t["tensor_flops"]["bf16"].get<double>(), 4e9);
  EXPECT_DOUBLE_EQ(t["tensor_flops"]["fp16"].get<double>(), 1e9);
  EXPECT_EQ(j["passes"], 3);
}

TEST(CounterSummary, PmSampledBytesAreTheCallsAndAOneKernelCallsKernels) {
  // The PM-sampled pass (bytes while the call ran) beside kernel replay's: for the
  // call always, per kernel only where the call is one kernel.
  CallCounters c = two_kernels();
  c.sampled = harness::SampledDram{2.4e6, 0.7e6, 14, 1000};
  json j = harness::counter_summary(c);
  EXPECT_DOUBLE_EQ(j["total"]["dram_write_bytes_during"].get<double>(), 0.7e6);
  EXPECT_DOUBLE_EQ(j["total"]["dram_read_bytes_during"].get<double>(), 2.4e6);
  EXPECT_DOUBLE_EQ(j["total"]["dram_write_bytes"].get<double>(), 1.2e6);  // replay's, kept
  EXPECT_FALSE(j["kernels"][0].contains("dram_write_bytes_during")) << j.dump();
  EXPECT_EQ(j["sampled"]["samples"], 14);
  c.kernels.pop_back();
  j = harness::counter_summary(c);
  EXPECT_DOUBLE_EQ(j["kernels"][0]["dram_write_bytes_during"].get<double>(), 0.7e6);
  EXPECT_DOUBLE_EQ(j["kernels"][0]["dram_write_bytes"].get<double>(), 1e6);
  // Not sampled: why, and no bytes.
  c.sampled.reset();
  c.sampled_why_not = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  j = harness::counter_summary(c);
  EXPECT_EQ(j["sampled"]["reason"], "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  EXPECT_FALSE(j["total"].contains("dram_write_bytes_during"));
}

TEST(CounterSummary, AMetricTheGpuLacksIsNullNotZero) {
  CallCounters c = two_kernels();
  c.metrics.erase(std::remove(c.metrics.begin(), c.metrics.end(),
                              "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
                  c.metrics.end());
  c.unavailable = {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"};
  const json j = harness::counter_summary(c);
  EXPECT_TRUE(j["kernels"][0]["fp32_flops"].is_null());
  EXPECT_TRUE(j["total"]["fp32_flops"].is_null());
  EXPECT_EQ(j["unavailable"].size(), 1u);
  EXPECT_FALSE(j["total"]["dram_read_bytes"].is_null());
}

// ------------------------------------------------------------ roofline and verdict

sol::HardwareModel model() {
  sol::HardwareModel hw;
  hw.name = "test_gpu";
  hw.sm_count = 100;
  hw.boost_clock_mhz = 1000;
  hw.sfu_ops_per_clock_per_sm = 16;
  hw.tensor_tflops = {{"fp16", 1000}, {"bf16", 1000}};
  hw.cuda_core_tflops = {{"fp32", 50}};
  hw.dram_bandwidth_gbs = 1000;  // 1e12 B/s
  return hw;
}

// A profile as the worker writes it: 2 kernels, counters allowed.
json gemm_profile(double dram_bytes, double bf16_flops, double gaps_share) {
  CallCounters c;
  c.metrics = harness::profile_metrics();
  KernelCounters k{"gemm", {}};
  k.values = {{"gpu__time_duration.sum", 9'000},
              {"dram__bytes_read.sum", dram_bytes},
              {"dram__bytes_write.sum", 0},
              {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", bf16_flops}};
  c.kernels = {k};
  json p = {{"available", true}, {"kernel_count", 2}, {"gaps_share_of_t_k", gaps_share}};
  p["counters"] = harness::counter_summary(c);
  return p;
}

// The bound's counts as score::SolBound keeps them (the analysis's units).
json bound_counts(double dram_mb, double bf16_tflop) {
  return {{"work", {{"tensor_tflop", {{"bf16", bf16_tflop}}}, {"cuda_tflop", json::object()},
                    {"sfu_gop", 0.0}}},
          {"bytes", {{"dram_mb", dram_mb}, {"min_mb", dram_mb * 2}}},
          {"time_us", {{"sol", 5.0}}}};
}

TEST(ProfileVerdict, BytesAndTensorCoresAgainstTheBoundAndThePeaks) {
  const sol::HardwareModel hw = model();
  // T_k 10 us; 2.7 MB moved where the bound moves 1 MB; 4.1 GFLOP bf16 in 10 us
  // is 410 TFLOP/s, 41% of a 1000 TFLOP/s peak.
  const json p = gemm_profile(2.7e6, 4.1e9, 0.02);
  const json r = eval::roofline_position(p, 0.010, 0.005, bound_counts(1.0, 0.0041), &hw);
  EXPECT_NEAR(r["bytes_over_bound"].get<double>(), 2.7, 1e-9);
  EXPECT_NEAR(r["bytes_over_min"].get<double>(), 1.35, 1e-9);
  EXPECT_NEAR(r["tensor_share_of_peak"]["bf16"].get<double>(), 0.41, 1e-9);
  EXPECT_NEAR(r["tensor_flops_over_bound"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(r["dram_share_of_peak"].get<double>(), 2.7e6 / 1e-5 / 1e12, 1e-9);
  EXPECT_NEAR(r["t_k_over_t_sol"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(r["intensity"]["achieved"].get<double>(), 4.1e9 / 2.7e6, 1e-6);
  EXPECT_NEAR(r["intensity"]["bound"].get<double>(), 4.1e9 / 1e6, 1e-6);
  EXPECT_EQ(r["tensor_dtype"], "bf16");
  const std::string v = eval::verdict_line(p, r);
  EXPECT_NE(v.find("moves 2.7x the minimum bytes (DRAM at 27% of peak)"), std::string::npos) << v;
  EXPECT_NE(v.find("tensor cores at 41% of peak (bf16)"), std::string::npos) << v;
  EXPECT_NE(v.find("T_k is 2.0x T_SOL"), std::string::npos) << v;
  EXPECT_EQ(v.find("gaps"), std::string::npos) << v;  // 2% of T_k: not worth a word
}

TEST(ProfileVerdict, LaunchGapsAreNamedWhenTheyMatter) {
  const sol::HardwareModel hw = model();
  const json p = gemm_profile(1e6, 0, 0.70);
  const json r = eval::roofline_position(p, 0.010, std::nullopt, bound_counts(1.0, 0), &hw);
  EXPECT_TRUE(r["t_k_over_t_sol"].is_null());
  const std::string v = eval::verdict_line(p, r);
  EXPECT_NE(v.find("70% of T_k is gaps between its 2 kernels"), std::string::npos) << v;
  EXPECT_NE(v.find("moves 1.0x the minimum bytes"), std::string::npos) << v;
  EXPECT_EQ(v.find("tensor cores"), std::string::npos) << v;
}

TEST(ProfileVerdict, WithoutCountersTheBreakdownStaysAndTheReasonIsGiven) {
  json p = {{"available", true}, {"kernel_count", 1}, {"gaps_share_of_t_k", 0.0}};
  p["counters"] = harness::counters_not_allowed(
      "cuptiProfilerInitialize failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  const sol::HardwareModel hw = model();
  const json r = eval::roofline_position(p, 0.010, 0.004, bound_counts(1.0, 0), &hw);
  EXPECT_FALSE(r["counters"].get<bool>());
  EXPECT_FALSE(r.contains("bytes_over_bound"));
  EXPECT_DOUBLE_EQ(r["bound"]["dram_bytes"].get<double>(), 1e6);  // the bound's side is kept
  const std::string v = eval::verdict_line(p, r);
  EXPECT_NE(v.find("counters not allowed: cuptiProfilerInitialize failed: "
                   "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("1 kernel"), std::string::npos) << v;
  EXPECT_NE(v.find("T_k is 2.5x T_SOL"), std::string::npos) << v;
}

TEST(ProfileVerdict, NoProfileSaysWhy) {
  const json p = {{"available", false}, {"reason", "no GPU: the profile reads CUDA kernels"}};
  EXPECT_EQ(eval::verdict_line(p, json::object()),
            "no profile: no GPU: the profile reads CUDA kernels");
}

// A PASSED trace (T_k 10 µs, T_ref 20 µs) and its bound (T_SOL 5 µs, 1 GFLOP of bf16,
// 4.1 kB) on model(): what add_profile_verdict reads besides the profile.
struct VerdictCase {
  Trace t;
  eval::ScoreState st;
  score::ArchChoice arch;
  VerdictCase() {
    t.evaluation.status = Status::Passed;
    t.evaluation.performance = Performance{0.010, 0.020, 2.0};
    st.bound.t_sol_ms = 0.005;
    st.bound.counts = bound_counts(1.0, 0.0041);
    arch.model = model();
  }
};

TEST(ProfileVerdict, GoesIntoTheTraceOnlyWhereTheWorkerProfiled) {
  VerdictCase c;
  Trace& t = c.t;
  eval::add_profile_verdict(t, c.st, c.arch);
  EXPECT_FALSE(t.evaluation.extra.contains("solbench_profile"));  // nothing asked, nothing added
  t.evaluation.extra["solbench_profile"] = gemm_profile(2.7e6, 4.1e9, 0.0);
  eval::add_profile_verdict(t, c.st, c.arch);
  const json& p = t.evaluation.extra["solbench_profile"];
  ASSERT_TRUE(p.contains("roofline"));
  EXPECT_NEAR(p["roofline"]["bytes_over_bound"].get<double>(), 2.7, 1e-9);
  EXPECT_NE(p["verdict"].get<std::string>().find("moves 2.7x"), std::string::npos);
}

// The reference's profile (made where T_ref was timed) is placed over T_ref and
// adds a short part to the line; its numbers are in the JSON.
TEST(ProfileVerdict, TheReferencesPartFollowsTheSolutions) {
  VerdictCase c;
  Trace& t = c.t;
  json p = gemm_profile(1.0e6, 4.1e9, 0.0);
  json ref = gemm_profile(3.1e6, 4.1e9, 0.30);  // 2 kernels, 30% of T_ref in gaps
  ref["kernel_count"] = 9;
  p["reference"] = ref;
  t.evaluation.extra["solbench_profile"] = p;
  eval::add_profile_verdict(t, c.st, c.arch);
  const json& q = t.evaluation.extra["solbench_profile"];
  const json& r = q["reference"];
  ASSERT_TRUE(r.contains("roofline")) << r.dump();
  EXPECT_NEAR(r["roofline"]["bytes_over_bound"].get<double>(), 3.1, 1e-9);
  EXPECT_NEAR(r["roofline"]["t_k_us"].get<double>(), 20.0, 1e-9);  // T_ref, not T_k
  EXPECT_NEAR(r["roofline"]["t_k_over_t_sol"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(r["roofline"]["tensor_share_of_peak"]["bf16"].get<double>(), 0.205, 1e-9);
  EXPECT_EQ(r["verdict"], "9 kernels (30% of T_ref in gaps), moves 3.1x the minimum bytes");
  const std::string v = q["verdict"].get<std::string>();
  EXPECT_EQ(v.rfind("T_k is 2.0x T_SOL; 2 kernels; moves 1.0x the minimum bytes", 0), 0u) << v;
  EXPECT_NE(v.find("; reference: 9 kernels (30% of T_ref in gaps), moves 3.1x the minimum bytes"),
            std::string::npos)
      << v;
  // The solution's own numbers are the solution's: T_k, its bytes.
  EXPECT_NEAR(q["roofline"]["bytes_over_bound"].get<double>(), 1.0, 1e-9);
}

TEST(ProfileVerdict, TheReferencesPartSaysWhyItHasNoneOnlyWhereTheSolutionHasOne) {
  EXPECT_EQ(eval::reference_verdict({{"available", false}, {"reason", "no GPU"}}, json::object()),
            "no profile: no GPU");
  json counters_off = {{"available", true}, {"kernel_count", 1}, {"gaps_share_of_t_k", 0.0}};
  counters_off["counters"] = harness::counters_not_allowed("busy");
  EXPECT_EQ(eval::reference_verdict(counters_off, {{"counters", false}}), "1 kernel");

  Trace t;
  t.evaluation.status = Status::Passed;
  t.evaluation.performance = Performance{0.010, 0.020, 2.0};
  const json none = {{"available", false}, {"reason", "no GPU: the profile reads CUDA kernels"}};
  json p = none;
  p["reference"] = none;
  t.evaluation.extra["solbench_profile"] = p;
  eval::add_profile_verdict(t, eval::ScoreState{}, score::ArchChoice{});
  // On the CPU: said once, for both calls.
  EXPECT_EQ(t.evaluation.extra["solbench_profile"]["verdict"],
            "no profile: no GPU: the profile reads CUDA kernels");
  EXPECT_EQ(t.evaluation.extra["solbench_profile"]["reference"]["verdict"],
            "no profile: no GPU: the profile reads CUDA kernels");
  EXPECT_FALSE(t.evaluation.extra["solbench_profile"]["reference"].contains("roofline"));

  p = gemm_profile(1.0e6, 0, 0.0);
  p["reference"] = {{"available", false}, {"reason", "the profiled call failed: x"}};
  t.evaluation.extra["solbench_profile"] = p;
  eval::add_profile_verdict(t, eval::ScoreState{}, score::ArchChoice{});
  const std::string v = t.evaluation.extra["solbench_profile"]["verdict"].get<std::string>();
  EXPECT_NE(v.find("2 kernels; "), std::string::npos) << v;
  EXPECT_NE(v.find("; reference: no profile: the profiled call failed: x"), std::string::npos) << v;
}

// ------------------------------------------------------------ the flag's way

TEST(ProfileFlag, SettingsPassItToRunsChildrenOnlyWhenOn) {
  eval::Settings s;
  auto has = [](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), "--profile") != v.end();
  };
  EXPECT_FALSE(has(s.flags()));
  s.profile = true;
  EXPECT_TRUE(has(s.flags()));
}

TEST(ProfileFlag, ThePlanAndTheResultFrameCarryItAndAreUnchangedWithoutIt) {
  harness::WorkerPlan plan;
  plan.entry = harness::EntryPoint::reference();
  plan.role = harness::WorkerRole::Solution;
  const json off = plan.to_json();
  EXPECT_FALSE(off.contains("profile"));  // the default frame as before
  plan.profile = true;
  const json on = plan.to_json();
  EXPECT_EQ(on["profile"], true);
  EXPECT_TRUE(harness::WorkerPlan::from_json(on).profile);
  EXPECT_FALSE(harness::WorkerPlan::from_json(off).profile);

  harness::WorkloadOutcome o;
  o.index = 0;
  o.status = Status::Passed;
  EXPECT_FALSE(o.to_json().contains("profile"));
  EXPECT_TRUE(harness::WorkloadOutcome::from_json(o.to_json()).profile.is_null());
  o.profile = {{"available", false}, {"reason", "x"}};
  EXPECT_EQ(harness::WorkloadOutcome::from_json(o.to_json()).profile["reason"], "x");
  EXPECT_FALSE(o.to_json().contains("reference_profile"));
  EXPECT_TRUE(harness::WorkloadOutcome::from_json(o.to_json()).reference_profile.is_null());
}

// A reference profile, as the reference worker (or the in-process worker) sends it:
// the whole breakdown and counters, both ways through the result frame.
TEST(ProfileFlag, TheResultFrameCarriesTheReferencesProfile) {
  harness::WorkloadOutcome o;
  o.index = 3;
  o.status = Status::Passed;
  json ref = gemm_profile(3.1e6, 4.1e9, 0.1);
  ref["activities"] = json::array({{{"kind", "kernel"}, {"name", "at::native::vectorized"},
                                    {"grid", {132, 1, 1}}, {"block", {128, 1, 1}},
                                    {"duration_us", 12.5}}});
  ref["added_wall_ms"] = 3.5;
  o.reference_profile = ref;
  const json frame = o.to_json();
  EXPECT_FALSE(frame.contains("profile"));  // the solution's is its own key
  const harness::WorkloadOutcome back = harness::WorkloadOutcome::from_json(frame);
  EXPECT_EQ(back.reference_profile, ref);
  EXPECT_TRUE(back.profile.is_null());
}

// The reference worker keeps --profile: it profiles the reference's call after
// T_ref's timed loop; without --profile its plan is as before.
TEST(ProfileFlag, TheReferenceWorkersPlanKeepsTheFlag) {
  harness::WorkerPlan plan;
  plan.entry = harness::EntryPoint::reference();
  plan.role = harness::WorkerRole::Solution;
  const harness::WorkerPlan off = harness::runner_detail::reference_plan(plan, {});
  EXPECT_FALSE(off.profile);
  EXPECT_FALSE(off.to_json().contains("profile"));
  plan.profile = true;
  harness::WorkerPlan on = harness::runner_detail::reference_plan(plan, {});
  EXPECT_EQ(on.role, harness::WorkerRole::Judge);
  EXPECT_TRUE(on.profile);
  on.judge.value_secret = 42;  // as run_judged gives it (a Judge's plan needs one)
  EXPECT_TRUE(harness::WorkerPlan::from_json(on.to_json()).profile);
}

harness::TimingResult timed(double median_ms) {
  harness::TimingResult r;
  r.stats.median_ms = median_ms;
  r.stats.count = 10;
  return r;
}

// The judged merge: the solution's profile from its worker, the reference's from
// the reference worker with its T_ref; neither where the workload has no time.
TEST(MergeJudged, KeepsTheReferencesProfileWithItsTRefAndDropsBothWithoutTime) {
  harness::WorkloadOutcome sol;
  sol.index = 0;
  sol.status = Status::Passed;
  sol.timing = timed(0.010);
  sol.profile = {{"available", true}, {"kernel_count", 1}};
  sol.phases_ms = {{"profile_ms", 5.0}};
  harness::WorkloadOutcome judge;
  judge.index = 0;
  judge.status = Status::Passed;
  judge.reference_timing = timed(0.020);
  judge.reference_profile = {{"available", true}, {"kernel_count", 9}};
  judge.phases_ms = {{"reference_profile_ms", 7.0}};

  harness::WorkloadOutcome m = harness::runner_detail::merge_judged(sol, judge);
  EXPECT_EQ(m.status, Status::Passed);
  EXPECT_EQ(m.profile["kernel_count"], 1);
  EXPECT_EQ(m.reference_profile["kernel_count"], 9);
  EXPECT_DOUBLE_EQ(m.phases_ms["profile_ms"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(m.phases_ms["reference_profile_ms"].get<double>(), 7.0);

  harness::WorkloadOutcome wrong = judge;
  wrong.status = Status::IncorrectNumerical;
  wrong.log = "mismatch";
  m = harness::runner_detail::merge_judged(sol, wrong);
  EXPECT_TRUE(m.profile.is_null());
  EXPECT_TRUE(m.reference_profile.is_null());

  harness::WorkloadOutcome crashed = sol;
  crashed.status = Status::RuntimeError;
  m = harness::runner_detail::merge_judged(crashed, judge);
  EXPECT_TRUE(m.reference_profile.is_null());

  harness::WorkloadOutcome untimed = judge;  // T_ref failed: no profile of it
  untimed.reference_timing.reset();
  untimed.reference_profile = nullptr;
  m = harness::runner_detail::merge_judged(sol, untimed);
  EXPECT_FALSE(m.reference_timing);
  EXPECT_TRUE(m.reference_profile.is_null());
  EXPECT_EQ(m.profile["kernel_count"], 1);
}

// A T_ref the parent knew (RunnerOptions::known_reference) stands for the Judge's,
// which was not timed, and says so; one the Judge timed wins; none without a pass.
TEST(MergeJudged, AKnownTRefStandsForTheJudgesOwnOnlyWhereThereIsNone) {
  harness::WorkloadOutcome sol;
  sol.index = 0;
  sol.status = Status::Passed;
  sol.timing = timed(0.010);
  harness::WorkloadOutcome judge;
  judge.index = 0;
  judge.status = Status::Passed;
  const harness::TimingResult known = timed(0.030);

  harness::WorkloadOutcome m = harness::runner_detail::merge_judged(sol, judge, known);
  ASSERT_TRUE(m.reference_timing);
  EXPECT_DOUBLE_EQ(m.reference_timing->stats.median_ms, 0.030);
  EXPECT_EQ(m.extra.value("reference_timing_cached", false), true);
  EXPECT_EQ(m.log, "");  // not "timing the reference failed"

  harness::WorkloadOutcome timed_here = judge;
  timed_here.reference_timing = timed(0.020);
  m = harness::runner_detail::merge_judged(sol, timed_here, known);
  EXPECT_DOUBLE_EQ(m.reference_timing->stats.median_ms, 0.020);
  EXPECT_FALSE(m.extra.contains("reference_timing_cached"));

  harness::WorkloadOutcome wrong = judge;
  wrong.status = Status::IncorrectNumerical;
  m = harness::runner_detail::merge_judged(sol, wrong, known);
  EXPECT_FALSE(m.reference_timing);

  m = harness::runner_detail::merge_judged(sol, judge);  // nothing known: a failure noted
  EXPECT_FALSE(m.reference_timing);
  EXPECT_NE(m.log.find("timing the reference failed"), std::string::npos) << m.log;
}

// "go" names a Judge's own positions: a Judge started again after a crash has the
// workloads left (plan positions 2 and 4 here) from its position 0.
TEST(MergeJudged, GoNamesTheKnownReferencesByTheWorkersOwnPositions) {
  using harness::runner_detail::positions_in_worker;
  EXPECT_EQ(positions_in_worker({0, 2, 3}, {0, 1, 2, 3, 4}), (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(positions_in_worker({0, 2, 3}, {2, 4}), (std::vector<size_t>{0}));
  EXPECT_EQ(positions_in_worker({1}, {2, 4}), (std::vector<size_t>{}));
  EXPECT_EQ(positions_in_worker({}, {0, 1}), (std::vector<size_t>{}));
}

// The trace: solbench_profile.reference beside the solution's, only with a T_ref.
TEST(MergeJudged, TheTraceHasTheReferencesProfileUnderTheSolutions) {
  Diagnostics diags;
  const Problem prob = load_problem(
      problem_paths(fs::path(SOLBENCH_SOURCE_DIR) / "problems/001_rmsnorm_llama3_8b_h4096"), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  harness::WorkloadOutcome o;
  o.index = 0;
  o.uuid = prob.workloads[0].uuid;
  o.status = Status::Passed;
  o.timing = timed(0.010);
  o.reference_timing = timed(0.020);
  Trace t = harness::make_trace(prob, 0, "s", o, json::object());
  EXPECT_FALSE(t.evaluation.extra.contains("solbench_profile"));  // no --profile: nothing

  o.profile = {{"available", true}, {"kernel_count", 1}};
  o.reference_profile = {{"available", true}, {"kernel_count", 9}};
  t = harness::make_trace(prob, 0, "s", o, json::object());
  ASSERT_TRUE(t.evaluation.extra.contains("solbench_profile"));
  EXPECT_EQ(t.evaluation.extra["solbench_profile"]["kernel_count"], 1);
  EXPECT_EQ(t.evaluation.extra["solbench_profile"]["reference"]["kernel_count"], 9);

  o.reference_timing.reset();  // a T_ref dropped later drops its profile too
  t = harness::make_trace(prob, 0, "s", o, json::object());
  EXPECT_FALSE(t.evaluation.extra["solbench_profile"].contains("reference"));
}

// ------------------------------------------------------------ end to end, CPU

class ProfileCli : public ::testing::Test {
 protected:
  // `env`: variables before the command ("SOLBENCH_REFERENCE_WORKER=0 ").
  json eval(const std::string& extra, std::string* text = nullptr, const std::string& env = "") {
    const fs::path out = dir_ / "out.txt";
    const fs::path problem = fs::path(SOLBENCH_SOURCE_DIR) / "problems/001_rmsnorm_llama3_8b_h4096";
    const std::string cmd =
        env + "SOLBENCH_CACHE_DIR='" + (dir_ / "cache").string() + "' SOLBENCH_STAGING_DIR='" +
        (dir_ / "staging").string() + "' '" + SOLBENCH_BINARY + "' eval '" + problem.string() +
        "' --solution '" + (problem / "solutions/cpp_rowwise/solution.json").string() +
        "' -w 71630508 --rounds 1 --time-budget-ms 20 --no-db --no-baseline " + extra + " >'" +
        out.string() + "' 2>/dev/null";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    const std::string s = testing::read(out);
    if (text) *text = s;
    return json::parse(s, nullptr, false);
  }
  void SetUp() override {
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "staging");
  }
  testing::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(ProfileCli, OnTheCpuTheProfileSaysWhyAndTheDefaultHasNone) {
  const json on = eval("--profile --json");
  ASSERT_TRUE(on.is_object());
  const json& ev = on["results"][0]["evaluation"];
  EXPECT_EQ(ev["status"], "PASSED");
  ASSERT_TRUE(ev.contains("solbench_profile")) << ev.dump();
  const json& p = ev["solbench_profile"];
  EXPECT_FALSE(p["available"].get<bool>());
  EXPECT_EQ(p["reason"].get<std::string>().rfind("no GPU", 0), 0u) << p.dump();
  EXPECT_EQ(p["verdict"].get<std::string>().rfind("no profile: no GPU", 0), 0u);
  EXPECT_GE(p["added_wall_ms"].get<double>(), 0.0);
  // The reference, profiled in the reference worker after T_ref, says why too; the
  // line says it once for both.
  EXPECT_EQ(ev["solbench_checks"]["reference_timed_in"], "reference worker");
  ASSERT_TRUE(p.contains("reference")) << p.dump();
  EXPECT_FALSE(p["reference"]["available"].get<bool>());
  EXPECT_EQ(p["reference"]["reason"].get<std::string>().rfind("no GPU", 0), 0u);
  EXPECT_EQ(p["reference"]["verdict"].get<std::string>().rfind("no profile: no GPU", 0), 0u);
  EXPECT_GE(p["reference"]["added_wall_ms"].get<double>(), 0.0);
  EXPECT_EQ(p["verdict"].get<std::string>().find("reference"), std::string::npos);
  EXPECT_TRUE(ev["solbench_phases_ms"].contains("reference_profile_ms"));

  const json off = eval("--json");
  ASSERT_TRUE(off.is_object());
  const json& ev0 = off["results"][0]["evaluation"];
  EXPECT_FALSE(ev0.contains("solbench_profile"));
  EXPECT_FALSE(ev0["solbench_phases_ms"].contains("profile_ms"));
  // Nor a reference profile: nothing of it by default.
  EXPECT_FALSE(ev0["solbench_phases_ms"].contains("reference_profile_ms"));
  EXPECT_EQ(off.dump().find("reference_profile"), std::string::npos);

  std::string text;
  eval("--profile", &text);
  EXPECT_NE(text.find("     profile: no profile: no GPU"), std::string::npos) << text;
  EXPECT_NE(text.find(" ms]\n"), std::string::npos) << text;  // the added wall time, stated
}

// Without a reference worker (SOLBENCH_REFERENCE_WORKER=0) the solution's worker
// times T_ref itself, and profiles the reference there.
TEST_F(ProfileCli, InProcessTheSolutionsWorkerProfilesTheReferenceToo) {
  const json on = eval("--profile --json", nullptr, "SOLBENCH_REFERENCE_WORKER=0 ");
  ASSERT_TRUE(on.is_object());
  const json& ev = on["results"][0]["evaluation"];
  EXPECT_EQ(ev["status"], "PASSED");
  EXPECT_FALSE(ev["solbench_checks"].contains("reference_timed_in"));  // in-process
  ASSERT_TRUE(ev.contains("solbench_profile")) << ev.dump();
  const json& p = ev["solbench_profile"];
  ASSERT_TRUE(p.contains("reference")) << p.dump();
  EXPECT_EQ(p["reference"]["reason"].get<std::string>().rfind("no GPU", 0), 0u);
  EXPECT_TRUE(ev["solbench_phases_ms"].contains("reference_profile_ms"));
}

}  // namespace
}  // namespace solbench
