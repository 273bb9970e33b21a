// A `solbench <subcommand>` process that answers one frame per request (its side is
// framing.h serve_frames): `sol`'s tracer, `validate`'s tolerance probe. Started on
// first use; killed with its process group when a request passes its limit or the
// child dies, and started afresh for the next request.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/json.h"
#include "harness/process.h"

namespace solbench::harness {

class ServiceChild {
 public:
  struct Naming {
    std::string subcommand;  // "__sol-trace"
    std::string process;     // "tracer process": in every failure's text
    std::string request;     // "the trace " or "": what did not finish
    std::string limit_flag;  // "--timeout": the option that set the limit
    // The zygote entry point (worker/zygote.h) that serves as this child: where
    // this process keeps a zygote, the child is forked from it, with torch already
    // imported, instead of exec'd ("": always exec'd).
    std::string zygote_entry = {};
  };
  // `timeout_s` bounds each request (0: none); starting (Python, torch) has
  // `startup_s` of its own.
  ServiceChild(Naming naming, double timeout_s, int startup_s = 300);
  ~ServiceChild();
  ServiceChild(const ServiceChild&) = delete;
  ServiceChild& operator=(const ServiceChild&) = delete;

  // The child's answer, or nullopt with `error` saying why there is none.
  std::optional<json> ask(const json& request, std::string& error);
  // How the last child started: {"launch": "zygote" | "exec", "note": why not the
  // zygote, where one was asked}; null before any start.
  json launch() const { return launch_; }

 private:
  bool start(std::string& error);
  void stop();

  Naming naming_;
  double timeout_s_;
  int startup_s_;
  std::optional<Child> child_;
  std::unique_ptr<FrameReader> reader_;
  json launch_ = nullptr;
};

}  // namespace solbench::harness
