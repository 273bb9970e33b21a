// The distribution of workload SOL Scores as an inline SVG bar chart: one bar
// for the workloads that failed (scored 0), then ten bins of 0.1.
#pragma once

#include <string>

#include "report/model.h"

namespace solbench::report {

// `id`: the <svg>'s id (an anchor_id); `title`: its accessible name (escaped here).
std::string histogram_svg(const ScoreHistogram& h, const std::string& id, const std::string& title);

}  // namespace solbench::report
