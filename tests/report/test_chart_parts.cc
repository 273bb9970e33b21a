// The parts of the charts: log axes, roofs from a hardware model, where a time
// is placed, the SVG of a roofline and of a score histogram.
#include <gtest/gtest.h>

#include <cmath>

#include "report/histogram_svg.h"
#include "report/log_scale.h"
#include "report/placement.h"
#include "report/roofline_svg.h"
#include "report/roofs.h"
#include "sol/hardware.h"
#include "test_support.h"

namespace solbench::report {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

sol::HardwareModel h100() {
  auto hw = sol::find_hardware(sol::load_all_hardware(), "h100_sxm");
  if (!hw) throw std::runtime_error("no h100_sxm model");
  return *hw;
}

TEST(LogScale, CoversTheValuesInWholeDecades) {
  const LogScale s = LogScale::covering(1.17, 590, 0.5, 100, 600);
  EXPECT_EQ(s.lo(), -1);  // log10(1.17) - 0.5 = -0.43
  EXPECT_EQ(s.hi(), 4);   // log10(590) + 0.5 = 3.27
  EXPECT_DOUBLE_EQ(s.px(0.1), 100);
  EXPECT_DOUBLE_EQ(s.px(1e4), 600);
  EXPECT_DOUBLE_EQ(s.px(10), 300);  // 2 of 5 decades
  EXPECT_TRUE(s.contains(590));
  EXPECT_FALSE(s.contains(0));
  EXPECT_FALSE(s.contains(2e4));
  EXPECT_EQ(s.decades().size(), 6u);
}

TEST(LogScale, UpwardAxesAndDegenerateInput) {
  const LogScale y = LogScale::covering(0.01, 1000, 0, 400, 0);  // pixels grow downwards
  EXPECT_LT(y.px(1000), y.px(0.01));
  EXPECT_LT(y.px_per_decade(), 0);
  const LogScale none = LogScale::covering(0, -1, 0, 0, 10);  // nothing positive
  EXPECT_EQ(none.lo(), 0);
  EXPECT_EQ(none.hi(), 1);
  const LogScale one = LogScale::covering(100, 100, 0, 0, 10);  // one value: one decade
  EXPECT_EQ(one.hi() - one.lo(), 1);
}

TEST(Roofs, H100HasTheDramRoofAndOneRoofPerDistinctPeak) {
  const Roofs r = roofs_of(h100(), {}, {"fp32"});
  EXPECT_DOUBLE_EQ(r.bandwidth, 3350e9);
  EXPECT_EQ(r.hardware, "h100_sxm");
  ASSERT_FALSE(r.compute.empty());
  for (size_t i = 1; i < r.compute.size(); ++i) EXPECT_GT(r.compute[i - 1].flops, r.compute[i].flops);
  const auto find = [&](const std::string& name) -> const Roof* {
    for (const auto& x : r.compute)
      if (x.name == name) return &x;
    return nullptr;
  };
  const Roof* bf16 = find("tensor bf16/fp16");
  ASSERT_TRUE(bf16) << "dense tensor-core roof missing";
  EXPECT_DOUBLE_EQ(bf16->flops, 989.4e12);
  EXPECT_FALSE(bf16->used);
  // The datasheet gives FP64 tensor and FP32 CUDA cores the same 66.9 TFLOP/s: one roof.
  const Roof* fp32 = find("tensor fp64 / CUDA fp32");
  ASSERT_TRUE(fp32) << "CUDA-core roof missing";
  EXPECT_DOUBLE_EQ(fp32->flops, 66.9e12);
  EXPECT_TRUE(fp32->used);
  ASSERT_TRUE(find("CUDA bf16/fp16"));
  EXPECT_FALSE(find("CUDA bf16/fp16")->used);
  EXPECT_NEAR(r.ridge(*bf16), 989.4e12 / 3350e9, 1e-9);
}

TEST(Roofs, AClassTheChipLacksMarksTheRoofItFallsBackTo) {
  const Roofs r = roofs_of(h100(), {"fp4"}, {});  // no FP4 tensor cores on Hopper: FP8's rate
  int used = 0;
  for (const auto& x : r.compute)
    if (x.used) {
      ++used;
      EXPECT_EQ(x.name, "tensor fp8/int8");
    }
  EXPECT_EQ(used, 1);
}

json analysis(double cuda_tflop, double min_mb, double sol_us) {
  return {{"status", "ok"},
          {"work", {{"tensor_tflop", {{"bf16", 0.5}}}, {"cuda_tflop", {{"fp32", cuda_tflop}}}}},
          {"bytes", {{"min_mb", min_mb}, {"boundary_mb", min_mb}}},
          {"time_us", {{"sol", sol_us}}},
          {"bottleneck", "tensor"}};
}

TEST(Placement, WorkAndBytesComeFromTheAnalysis) {
  const WorkOrReason w = work_from_analysis(analysis(0.25, 100, 800));
  ASSERT_TRUE(w.work) << w.reason;
  EXPECT_DOUBLE_EQ(w.work->flop, 0.75e12);
  EXPECT_DOUBLE_EQ(w.work->bytes, 100e6);
  EXPECT_DOUBLE_EQ(w.work->t_sol_ms, 0.8);
  EXPECT_DOUBLE_EQ(w.work->intensity(), 7500);
  EXPECT_EQ(w.work->tensor_classes, std::set<std::string>{"bf16"});
  EXPECT_EQ(w.work->cuda_classes, std::set<std::string>{"fp32"});

  const WorkOrReason bad = work_from_analysis({{"status", "untraceable"}, {"reason", "no torch"}});
  EXPECT_FALSE(bad.work);
  EXPECT_HAS(bad.reason, "untraceable");
  EXPECT_HAS(bad.reason, "no torch");
}

TEST(Placement, AchievedRateIsWorkOverTime) {
  const WorkloadWork w = *work_from_analysis(analysis(0.25, 100, 800)).work;
  const Placement p = place(w, 1.5, "unused");
  ASSERT_TRUE(p.placed()) << p.reason;
  EXPECT_DOUBLE_EQ(p.intensity, 7500);
  EXPECT_DOUBLE_EQ(p.flops_per_s, 0.75e12 / 1.5e-3);

  EXPECT_EQ(place(w, std::nullopt, "status TIMEOUT: no latency").reason,
            "status TIMEOUT: no latency");
  EXPECT_HAS(place(w, 0.0, "").reason, "no rate");
  WorkloadWork zero = w;
  zero.flop = 0;
  EXPECT_HAS(place(zero, 1.0, "").reason, "0 FLOP");
}

TEST(RooflineSvg, DrawsRoofsPointsAndLinksWithEscapedText) {
  RooflineChart c;
  c.id = "p-x-roofline";
  c.title = "Roofline of <x>";
  c.roofs = roofs_of(h100(), {}, {"fp32"});
  c.series = {"good", "<script>alert(1)</script>"};
  c.points = {{PointKind::Sol, -1, 1.2, 4e12, "T_SOL on n=1", "row-a"},
              {PointKind::Baseline, -1, 1.2, 2e12, "baseline", "row-a"},
              {PointKind::Solution, 0, 1.2, 3e12, "good on n=1", "row-a-s0"},
              {PointKind::Solution, 1, 1.2, 1e9, "<script>alert(1)</script> on n=1", "row-a-s1"}};
  const std::string svg = roofline_svg(c);
  EXPECT_EQ(svg.rfind("<svg class=\"roofline\" id=\"p-x-roofline\"", 0), 0u) << svg.substr(0, 200);
  EXPECT_EQ(count(svg, "class=\"roof memory\""), 1u);
  EXPECT_EQ(count(svg, "class=\"roof compute"), c.roofs.compute.size());
  EXPECT_EQ(count(svg, "class=\"roof compute used\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point sol\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point baseline\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point solution\""), 2u);
  EXPECT_HAS(svg, "<a href=\"#row-a-s1\">");
  EXPECT_HAS(svg, "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_HAS(svg, "aria-label=\"Roofline of &lt;x&gt;\"");
  EXPECT_HAS(svg, "DRAM 3350 GB/s");
  EXPECT_EQ(svg.find("http"), std::string::npos);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
}

// `eval --profile`: the solutions' rings and the reference's (dashed, the baseline's
// grey), each with its legend entry only when the chart has one.
TEST(RooflineSvg, TheReferenceAsMeasuredIsARingWithItsLegendEntryOnlyWhenPresent) {
  RooflineChart c;
  c.id = "c";
  c.roofs = roofs_of(h100(), {}, {"fp32"});
  c.series = {"good"};
  c.points = {{PointKind::Sol, -1, 1.2, 4e12, "T_SOL", "a"},
              {PointKind::Baseline, -1, 1.2, 2e12, "baseline", "a"},
              {PointKind::Solution, 0, 1.2, 3e12, "good", "a-s0"}};
  const std::string plain = roofline_svg(c);
  EXPECT_EQ(plain.find("reference-measured"), std::string::npos);
  EXPECT_EQ(plain.find("reference, as measured"), std::string::npos);
  EXPECT_EQ(plain.find("as measured"), std::string::npos);

  c.points.push_back({PointKind::Measured, 0, 0.9, 2.5e12, "good, as measured", "a-s0"});
  c.points.push_back({PointKind::ReferenceMeasured, -1, 0.3, 0.4e12, "reference <r>", "a-s0"});
  const std::string svg = roofline_svg(c);
  EXPECT_EQ(count(svg, "class=\"point measured\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point reference-measured\""), 1u);
  EXPECT_HAS(svg, "<title>reference &lt;r&gt;</title>");
  EXPECT_HAS(svg, "stroke=\"#8a8a8a\" stroke-width=\"2.2\" stroke-dasharray=\"3 2\"");
  EXPECT_EQ(count(svg, "reference, as measured (over T_ref)"), 1u);
  EXPECT_EQ(count(svg, "as measured (eval --profile)"), 1u);
  // Drawn under the solutions: before the first solution's marker.
  EXPECT_LT(svg.find("point reference-measured"), svg.find("point solution"));
  // Five legend entries: two rows of three.
  EXPECT_EQ(count(svg, "class=\"legend\""), 5u);

  c.points.erase(c.points.begin() + 3);  // the reference alone: its entry, not the solutions'
  const std::string ref_only = roofline_svg(c);
  EXPECT_HAS(ref_only, "reference, as measured");
  EXPECT_EQ(ref_only.find("as measured (eval --profile)"), std::string::npos);
}

TEST(RooflineSvg, PointsAreInsideThePlotOnTheirRoofOrBelow) {
  RooflineChart c;
  c.id = "c";
  c.roofs = roofs_of(h100(), {}, {});
  // A DRAM-bound T_SOL point lies on the diagonal: rate = bandwidth x intensity.
  c.points = {{PointKind::Sol, -1, 2.0, 2.0 * 3350e9, "T_SOL", "a"},
              {PointKind::Solution, 0, 2.0, 1e6, "very slow", "a"}};
  c.series = {"s"};
  const std::string svg = roofline_svg(c);
  // The SOL diamond's top vertex (y - 6) and the memory roof at the same x meet.
  const auto attr = [&](const std::string& after, const std::string& name) {
    const size_t at = svg.find(name + "=\"", svg.find(after));
    return std::stod(svg.substr(at + name.size() + 2));
  };
  const double x1 = attr("roof memory", "x1"), y1 = attr("roof memory", "y1");
  const double x2 = attr("roof memory", "x2"), y2 = attr("roof memory", "y2");
  const size_t d = svg.find("class=\"point sol\" d=\"M");
  const double px = std::stod(svg.substr(d + 22));
  const double py = std::stod(svg.substr(svg.find(',', d + 22) + 1)) + 6;
  const double on_line = y1 + (y2 - y1) * (px - x1) / (x2 - x1);
  EXPECT_NEAR(py, on_line, 0.3);
  // The slow point is still inside the plot (the y axis reaches down to it).
  const size_t circle = svg.find("class=\"point solution\" cx=\"");
  ASSERT_NE(circle, std::string::npos);
  const double cy = std::stod(svg.substr(svg.find("cy=\"", circle) + 4));
  EXPECT_LE(cy, 406.0);
  EXPECT_GE(cy, 26.0);
}

TEST(ScoreHistogram, BinsFailuresAndUnscored) {
  ScoreHistogram h;
  h.add({true, 1.0, false});   // the speed of light: last bin
  h.add({true, 0.5, false});   // the baseline
  h.add({true, 0.55, false});
  h.add({true, 0.0, false});
  h.add({false, std::nullopt, false});
  h.add({true, std::nullopt, false});
  EXPECT_EQ(h.bins[9], 1);
  EXPECT_EQ(h.bins[5], 2);
  EXPECT_EQ(h.bins[0], 1);
  EXPECT_EQ(h.failed, 1);
  EXPECT_EQ(h.unscored, 1);
  EXPECT_EQ(h.total(), 6);
  const std::string svg = histogram_svg(h, "cat-a-histogram", "scores of <a>");
  EXPECT_EQ(count(svg, "<g class=\"bin\">"), 11u);
  EXPECT_HAS(svg, "not PASSED (counted as S = 0): 1 workload(s)");
  EXPECT_HAS(svg, "S in [0.5, 0.6): 2 workload(s)");
  EXPECT_HAS(svg, "S in [0.9, 1.0]: 1 workload(s)");
  EXPECT_HAS(svg, "aria-label=\"scores of &lt;a&gt;\"");
}

}  // namespace
}  // namespace solbench::report
