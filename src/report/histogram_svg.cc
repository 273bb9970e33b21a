#include "report/histogram_svg.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/html.h"

namespace solbench::report {

namespace {
constexpr double kWidth = 440, kHeight = 190, kLeft = 34, kRight = 430, kTop = 18, kBottom = 150;
}

std::string histogram_svg(const ScoreHistogram& h, const std::string& id, const std::string& title) {
  struct Bar {
    std::string label, tip, colour;
    int count;
  };
  std::vector<Bar> bars = {{"fail", "not PASSED (counted as S = 0)", "#c0392b", h.failed}};
  for (size_t i = 0; i < h.bins.size(); ++i)
    bars.push_back({fmt::format(".{}", i),
                    fmt::format("S in [{:.1f}, {:.1f}{}", i / 10.0, (i + 1) / 10.0,
                                i + 1 == h.bins.size() ? "]" : ")"),
                    "#3b7dd8", h.bins[i]});
  int max_count = 1;
  for (const auto& b : bars) max_count = std::max(max_count, b.count);

  std::string s = fmt::format(
      R"(<svg class="histogram" id="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">)" "\n", id,
      kWidth, kHeight, escape(title));
  s += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#999"/>)" "\n", kLeft,
                   kBottom, kRight);
  const double slot = (kRight - kLeft) / double(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double hgt = (kBottom - kTop) * b.count / max_count;
    const double x = kLeft + slot * double(i) + 3;
    s += fmt::format(
        R"(<g class="bin"><title>{}: {} workload(s)</title><rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"/>)",
        escape(b.tip), b.count, x, kBottom - hgt, slot - 6, hgt, b.colour);
    if (b.count > 0)
      s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
                       x + (slot - 6) / 2, kBottom - hgt - 4, b.count);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text></g>)" "\n",
                     x + (slot - 6) / 2, kBottom + 14, b.label);
  }
  s += fmt::format(
      R"(<text class="axis-title" x="{:.0f}" y="{}" text-anchor="middle">SOL Score (bins of 0.1; 1 = speed of light, 0.5 = baseline)</text>)"
      "\n",
      (kLeft + kRight) / 2, kBottom + 34);
  s += "</svg>\n";
  return s;
}

}  // namespace solbench::report
