#include "report/roofline_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "report/html.h"
#include "report/log_scale.h"

namespace solbench::report {

namespace {

// Layout (SVG user units; the page scales the whole chart).
constexpr double kWidth = 900, kLeft = 70, kRight = 690, kTop = 26, kBottom = 406;
constexpr double kLegendTop = 458, kLegendRow = 18, kLegendColumn = 270;
constexpr int kLegendPerRow = 3;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#17becf", "#e377c2", "#8c564b"};
constexpr int kColourCount = int(std::size(kColours));

std::string tick_label(double v) { return fmt::format("{:g}", v); }

// A solution's marker: a circle for the first colours, then triangles.
std::string solution_marker(int series, double x, double y, const std::string& cls) {
  const std::string colour = series_colour(series);
  if (series < kColourCount)
    return fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}"/>)", cls, x,
                       y, colour);
  return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f}l5,9h-10z" fill="{}"/>)", cls, x,
                     y - 6, colour);
}

// `legend`: the marker drawn in the legend (a class that counts as no point).
std::string marker(PointKind kind, int series, double x, double y, bool legend = false) {
  switch (kind) {
    case PointKind::Sol:
      return fmt::format(
          R"(<path class="{}" d="M{:.1f},{:.1f}l6,6l-6,6l-6,-6z" fill="#fff" stroke="#000" stroke-width="1.6"/>)",
          legend ? "legend-marker" : "point sol", x, y - 6);
    case PointKind::Baseline:
      return fmt::format(
          R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="9" height="9" fill="#8a8a8a" stroke="#444"/>)",
          legend ? "legend-marker" : "point baseline", x - 4.5, y - 4.5);
    case PointKind::Solution:
      return solution_marker(series, x, y, legend ? "legend-marker" : "point solution");
    case PointKind::Measured:  // a ring in the solution's colour (grey in the legend)
      return fmt::format(
          R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="5" fill="none" stroke="{}" stroke-width="2"/>)",
          legend ? "legend-marker" : "point measured", x, y,
          series < 0 ? std::string("#555") : series_colour(series));
    case PointKind::ReferenceMeasured:  // a ring in the baseline's grey, dashed
      return fmt::format(
          R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="5" fill="none" stroke="#8a8a8a" stroke-width="2.2" stroke-dasharray="3 2"/>)",
          legend ? "legend-marker" : "point reference-measured", x, y);
  }
  return "";
}

}  // namespace

std::string series_colour(int series) {
  return kColours[((series % kColourCount) + kColourCount) % kColourCount];
}

std::string roofline_svg(const RooflineChart& c) {
  const Roofs& roofs = c.roofs;
  // The axes cover every point and every ridge, half a decade beyond.
  double x_min = std::numeric_limits<double>::infinity(), x_max = 0;
  double y_min = std::numeric_limits<double>::infinity(), y_max = 0;
  for (const auto& p : c.points) {
    x_min = std::min(x_min, p.intensity);
    x_max = std::max(x_max, p.intensity);
    y_min = std::min(y_min, p.flops_per_s);
    y_max = std::max(y_max, p.flops_per_s);
  }
  for (const auto& r : roofs.compute) {
    x_min = std::min(x_min, roofs.ridge(r));
    x_max = std::max(x_max, roofs.ridge(r));
    y_min = std::min(y_min, r.flops);
    y_max = std::max(y_max, r.flops);
  }
  const LogScale xs = LogScale::covering(x_min, x_max, 0.5, kLeft, kRight);
  // The DRAM roof at the left edge is on the chart too (it shows the slope).
  if (roofs.bandwidth > 0) y_min = std::min(y_min, roofs.bandwidth * std::pow(10.0, xs.lo()));
  const LogScale ys = LogScale::covering(y_min / 1e12, y_max / 1e12, 0.3, kBottom, kTop);
  const auto X = [&](double intensity) { return xs.px(intensity); };
  const auto Y = [&](double flops) { return ys.px(flops / 1e12); };

  const auto any = [&](PointKind kind) {
    return std::any_of(c.points.begin(), c.points.end(),
                       [&](const ChartPoint& p) { return p.kind == kind; });
  };
  const bool measured = any(PointKind::Measured);
  const bool reference_measured = any(PointKind::ReferenceMeasured);
  const int legend_items =
      2 + int(c.series.size()) + (measured ? 1 : 0) + (reference_measured ? 1 : 0);
  const int legend_rows = (legend_items + kLegendPerRow - 1) / kLegendPerRow;
  const double height = kLegendTop + legend_rows * kLegendRow + 6;

  std::string s = fmt::format(
      R"(<svg class="roofline" id="{}" viewBox="0 0 {} {:.0f}" role="img" aria-label="{}">)"
      "\n",
      c.id, kWidth, height, escape(c.title));
  s += fmt::format(
      R"(<defs><clipPath id="{}-plot"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>)"
      "\n",
      c.id, kLeft, kTop, kRight - kLeft, kBottom - kTop);
  s += fmt::format(
      R"(<rect class="plot" x="{}" y="{}" width="{}" height="{}" fill="#fff" stroke="#999"/>)" "\n",
      kLeft, kTop, kRight - kLeft, kBottom - kTop);

  // Decade grid and tick labels.
  for (double d : xs.decades()) {
    const double x = X(d);
    s += fmt::format(
        R"(<line class="grid" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#e4e4e4"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4}</text>)"
        "\n",
        x, kTop, kBottom, kBottom + 16, tick_label(d));
  }
  for (double d : ys.decades()) {
    const double y = ys.px(d);
    s += fmt::format(
        R"(<line class="grid" x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#e4e4e4"/><text x="{3}" y="{4:.1f}" text-anchor="end">{5}</text>)"
        "\n",
        kLeft, y, kRight, kLeft - 6, y + 4, tick_label(d));
  }
  s += fmt::format(
      R"(<text class="axis-title" x="{:.0f}" y="{}" text-anchor="middle">arithmetic intensity (FLOP/byte, log scale)</text>)"
      "\n",
      (kLeft + kRight) / 2, kBottom + 36);
  s += fmt::format(
      R"~(<text class="axis-title" transform="translate(18 {:.0f}) rotate(-90)" text-anchor="middle">achieved TFLOP/s (log scale)</text>)~"
      "\n",
      (kTop + kBottom) / 2);

  // Roofs: the DRAM slope up to the highest ridge, each compute roof from its ridge.
  s += fmt::format(R"~(<g clip-path="url(#{}-plot)">)~" "\n", c.id);
  const double x_left = std::pow(10.0, xs.lo()), x_right = std::pow(10.0, xs.hi());
  if (roofs.bandwidth > 0 && !roofs.compute.empty()) {
    const double ridge = roofs.ridge(roofs.compute.front());
    s += fmt::format(
        R"(<line class="roof memory" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333" stroke-width="2.2"/>)"
        "\n",
        X(x_left), Y(roofs.bandwidth * x_left), X(ridge), Y(roofs.compute.front().flops));
  }
  for (const auto& r : roofs.compute)
    s += fmt::format(
        R"(<line class="roof compute{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="{}"{}/>)"
        "\n",
        r.used ? " used" : "", X(roofs.ridge(r)), Y(r.flops), X(x_right), Y(r.flops),
        r.used ? "#333" : "#9a9a9a", r.used ? "2.2" : "1.2",
        r.used ? "" : R"( stroke-dasharray="5 4")");
  s += "</g>\n";

  // Roof labels: the DRAM roof along its slope, compute roofs right of the plot
  // (moved apart where peaks are close).
  if (roofs.bandwidth > 0) {
    // A third of a decade in from the left edge, above the line (points are on or below it).
    const double xl = x_left * std::pow(10.0, 0.35);
    const double angle =
        std::atan(ys.px_per_decade() / xs.px_per_decade()) * 180 / std::numbers::pi;
    s += fmt::format(
        R"~(<text class="roof-label memory" transform="translate({:.1f} {:.1f}) rotate({:.1f})">DRAM {:g} GB/s</text>)~"
        "\n",
        X(xl), Y(roofs.bandwidth * xl) - 14, angle, roofs.bandwidth / 1e9);
  }
  double last_y = -1e9;
  for (const auto& r : roofs.compute) {
    const double y = std::max(Y(r.flops) + 4, last_y + 13);
    last_y = y;
    s += fmt::format(R"(<text class="roof-label{}" x="{}" y="{:.1f}">{} {:g}</text>)" "\n",
                     r.used ? " used" : "", kRight + 6, y, escape(r.name), r.flops / 1e12);
  }
  s += fmt::format(R"(<text class="roof-unit" x="{}" y="{}">peak TFLOP/s ({})</text>)" "\n",
                   kRight + 6, kTop - 10, escape(roofs.hardware));

  // Points: T_SOL, the baseline and the reference first, the solutions on top.
  for (PointKind kind : {PointKind::Sol, PointKind::Baseline, PointKind::ReferenceMeasured,
                         PointKind::Measured, PointKind::Solution})
    for (const auto& p : c.points) {
      if (p.kind != kind) continue;
      s += fmt::format(R"(<a href="#{}"><title>{}</title>{}</a>)" "\n", p.target, escape(p.label),
                       marker(p.kind, p.series, X(p.intensity), Y(p.flops_per_s)));
    }

  if (c.points.empty())
    s += fmt::format(
        R"(<text class="empty" x="{:.0f}" y="{:.0f}" text-anchor="middle">No point could be placed: the reasons are listed below the chart.</text>)"
        "\n",
        (kLeft + kRight) / 2, (kTop + kBottom) / 2);

  // Legend.
  std::vector<std::pair<std::string, std::string>> items = {
      {marker(PointKind::Sol, -1, 0, 0, true), "T_SOL (the bound)"},
      {marker(PointKind::Baseline, -1, 0, 0, true), "baseline T_b"}};
  for (size_t i = 0; i < c.series.size(); ++i)
    items.push_back({marker(PointKind::Solution, int(i), 0, 0, true), c.series[i]});
  if (measured)
    items.push_back({marker(PointKind::Measured, -1, 0, 0, true),
                     "as measured (eval --profile)"});
  if (reference_measured)
    items.push_back({marker(PointKind::ReferenceMeasured, -1, 0, 0, true),
                     "reference, as measured (over T_ref)"});
  for (size_t i = 0; i < items.size(); ++i) {
    const double x = kLeft + double(i % kLegendPerRow) * kLegendColumn;
    const double y = kLegendTop + double(i / kLegendPerRow) * kLegendRow;
    s += fmt::format(
        R"~(<g class="legend" transform="translate({:.0f} {:.0f})">{}<text x="12" y="4">{}</text></g>)~"
        "\n",
        x, y, items[i].first, escape(items[i].second));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace solbench::report
