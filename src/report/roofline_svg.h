// The roofline chart of one problem as inline SVG: log-log axes (intensity in
// FLOP/byte, achieved TFLOP/s), the DRAM roof, one compute roof per peak rate
// (those the problem's work uses drawn solid), and the points of T_SOL, the
// baseline and each solution, each a link to its table row; with `eval --profile`
// also rings where each solution's call and the reference's really stand.
#pragma once

#include <string>
#include <vector>

#include "report/model.h"
#include "report/roofs.h"

namespace solbench::report {

// The colour of a solution's series (the table uses the same).
std::string series_colour(int series);

struct RooflineChart {
  std::string id;                   // the <svg>'s id (an anchor_id)
  std::string title;                // its accessible name (escaped here)
  Roofs roofs;
  std::vector<ChartPoint> points;
  std::vector<std::string> series;  // solution names by series index (escaped here)
};

std::string roofline_svg(const RooflineChart& chart);

}  // namespace solbench::report
