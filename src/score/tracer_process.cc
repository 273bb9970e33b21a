#include "score/tracer_process.h"

#include <exception>
#include <optional>
#include <string>

namespace solbench::score {

namespace {

sol::OpGraph failed(const std::string& reason) {
  sol::OpGraph g;
  g.status = "error";
  g.reason = reason;
  return g;
}

}  // namespace

TracerProcess::TracerProcess(double timeout_s)
    : child_({"__sol-trace", "tracer process", "the trace ", "--timeout", "sol-trace"}, timeout_s),
      timeout_s_(timeout_s) {}

sol::OpGraph TracerProcess::trace(const json& request) {
  json sent = request;
  if (timeout_s_ > 0) {
    const double most = 0.75 * timeout_s_;
    const double asked = request.value("budget_s", 0.0);
    if (asked <= 0 || asked > most) sent["budget_s"] = most;
  }
  std::string error;
  const std::optional<json> m = child_.ask(sent, error);
  if (!m) return failed(error);
  if (m->contains("graph")) {
    try {
      return sol::parse_op_graph((*m)["graph"], "tracer process answer");
    } catch (const std::exception& e) {
      return failed(e.what());
    }
  }
  return failed(m->value("error", std::string("tracer process answered without a graph")));
}

}  // namespace solbench::score
