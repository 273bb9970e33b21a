#include "harness/runner_inbox.h"

#include <fmt/format.h>

#include "harness/runner_internal.h"

namespace solbench::harness::runner_detail {

namespace {
// How long a worker may take to accept the answer to a values request.
constexpr auto kReplyLimit = std::chrono::seconds(10);
}  // namespace

void ChannelInbox::loop() {
  FrameReader reader(fd_);
  bool in_workload = false;
  while (!stopping_) {
    Item it;
    it.frame = reader.read(deadline_after(std::chrono::milliseconds(100)));
    if (it.frame.status == FrameStatus::Timeout) continue;  // nothing lost
    if (!it.frame.ok()) {
      push(std::move(it));
      return;
    }
    const json& m = it.frame.message;
    const std::optional<FrameType> type = frame_type(m);
    if (type != FrameType::Hello && m.value("seal", "") != seal_) {
      it.violation = fmt::format(
          "a \"{}\" frame on the worker's channel without the harness's seal: something in "
          "the worker other than the harness wrote it",
          m.value("type", "").substr(0, 20));
      push(std::move(it));
      return;
    }
    if (type == FrameType::Values) {
      json reply;
      try {
        if (!answers_ || !in_workload) throw ValueViolation("a values request outside a workload");
        reply = issuer_.answer(m, monotonic_ns());
      } catch (const ValueViolation& e) {
        it.violation = std::string("the worker asked for values the harness never asks for (") +
                       e.what() + "): something in it other than the harness used its channel";
        push(std::move(it));
        return;
      }
      seal_ = new_seal();  // the next frames carry this one
      reply["seal"] = seal_;
      std::lock_guard<std::mutex> lock(write_mu_);
      if (!write_frame(fd_, reply, deadline_after(kReplyLimit)).ok()) {
        it.frame.status = FrameStatus::Error;
        it.frame.error = "the worker did not take the seed of its values";
        push(std::move(it));
        return;
      }
      continue;
    }
    if (type == FrameType::Begin) {
      const auto w = workload_(m.value("index", -1));
      in_workload = w.has_value();
      if (w) issuer_.begin(w->first, w->second);
    } else if (type == FrameType::Result) {
      it.at_result = issuer_;
      in_workload = false;
    }
    push(std::move(it));
    // A worker sends nothing after "done": reading on would only make stop() wait
    // out the poll above (up to 0.1 s, after every Judge's last result).
    if (type == FrameType::Done) return;
  }
}

}  // namespace solbench::harness::runner_detail
