#include "harness/service_child.h"

#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "harness/worker/zygote.h"

namespace solbench::harness {

namespace {
// The end of a child's log for a message: trailing blanks dropped, at most n bytes.
std::string trimmed_tail(std::string s, size_t n) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}
}  // namespace

ServiceChild::ServiceChild(Naming naming, double timeout_s, int startup_s)
    : naming_(std::move(naming)), timeout_s_(timeout_s), startup_s_(startup_s) {}

ServiceChild::~ServiceChild() { stop(); }

void ServiceChild::stop() {
  reader_.reset();
  if (child_) {
    child_->close_channel();  // the child reads EOF and exits
    child_->wait(deadline_after(std::chrono::seconds(2)));
    child_.reset();  // kills the group if it is still there
  }
}

bool ServiceChild::start(std::string& error) {
  try {
    SpawnOptions so;
    so.argv = {self_exe().string(), naming_.subcommand};
    so.channel = true;
    so.output = OutputMode::Capture;  // the reference's prints stay out of our output
    so.log_limit_bytes = 16 << 10;
    if (!naming_.zygote_entry.empty()) {
      if (const std::string address = existing_zygote_address(); !address.empty()) {
        // Within the same limit as an exec'd child's start (its "ready" below).
        json request = {{"entry", naming_.zygote_entry},
                        {"channel_fd", 3},
                        {"new_pid_namespace", false},
                        {"no_core_dumps", true},
                        {"preload", json::array()},
                        {"cwd", std::filesystem::current_path().string()}};
        so.starter = zygote_starter(address, request, std::chrono::seconds(startup_s_));
      }
    }
    child_ = Child::spawn(so);
    launch_ = {{"launch", child_->launch() == "external" ? "zygote" : "exec"}};
    if (!child_->launch_note().empty()) launch_["note"] = child_->launch_note();
    reader_ = std::make_unique<FrameReader>(child_->channel_fd());
  } catch (const std::exception& e) {
    child_.reset();
    error = "cannot start the " + naming_.process + ": " + e.what();
    return false;
  }
  // Python's and torch's start is no request's time: the child says "ready" once
  // imported.
  FrameResult hello = reader_->read(deadline_after(std::chrono::seconds(startup_s_)));
  if (hello.ok() && hello.message.value("ready", false)) return true;
  const std::string tail = trimmed_tail(child_->log(), 600);
  error = fmt::format("the {} did not start within {} s ({}){}", naming_.process, startup_s_,
                      hello.status == FrameStatus::Timeout ? "timed out" : hello.error,
                      tail.empty() ? "" : ": " + tail);
  stop();
  return false;
}

std::optional<json> ServiceChild::ask(const json& request, std::string& error) {
  if (!child_ && !start(error)) return std::nullopt;
  const Deadline deadline =
      timeout_s_ > 0 ? deadline_after(std::chrono::duration<double>(timeout_s_)) : kNoDeadline;
  const uint64_t log_from = child_->log_bytes();
  FrameResult sent = write_frame(child_->channel_fd(), request, deadline);
  FrameResult got = sent.ok() ? reader_->read(deadline) : sent;
  if (got.ok()) return got.message;
  if (got.status == FrameStatus::Timeout) {
    child_->kill_group();
    child_->wait();
    error = fmt::format("{}did not finish within {:g} s ({}); the {} was killed", naming_.request,
                        timeout_s_, naming_.limit_flag, naming_.process);
  } else {
    ExitStatus st = child_->wait(deadline_after(std::chrono::seconds(5)));
    const std::string tail = trimmed_tail(child_->log_since(log_from), 600);
    error = "the " + naming_.process + " ended (" + st.describe() + ")" +
            (tail.empty() ? "" : ": " + tail);
  }
  stop();
  return std::nullopt;
}

}  // namespace solbench::harness
