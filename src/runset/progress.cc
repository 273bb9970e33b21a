#include "runset/progress.h"

#include <fmt/format.h>

namespace solbench::runset {

namespace {

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
}

}  // namespace

Progress::Progress(std::FILE* out, bool tty, size_t total) : out_(out), tty_(tty), total_(total) {
  if (!out_ || !tty_) return;
  ticker_ = std::thread([this] {
    std::unique_lock lock(m_);
    while (!stopping_) {
      tick_.wait_for(lock, std::chrono::seconds(1));
      if (!stopping_) redraw();
    }
  });
}

Progress::~Progress() { clear(); }

std::string Progress::eta() const {
  // Elapsed time per finished evaluation, scaled to what is left; resumed-only
  // evaluations take no time and do not count.
  if (evaluated_ == 0 || done_ >= total_) return "?";
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per = elapsed / static_cast<double>(evaluated_);
  return duration_text(per * static_cast<double>(total_ - done_));
}

void Progress::redraw() {
  if (!out_ || !tty_ || stopping_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string running;
  for (const auto& [task, what] : running_) running += (running.empty() ? "" : ", ") + what;
  std::string line = fmt::format("[{}/{}] {} elapsed, ETA {}, {} failed{}{}", done_, total_,
                                 duration_text(elapsed), eta(), failures_,
                                 running.empty() ? "" : " | ", running);
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  std::fprintf(out_, "\r\033[K%s", line.c_str());
  std::fflush(out_);
}

void Progress::started(size_t task, const std::string& what, const std::string& device) {
  std::lock_guard lock(m_);
  running_[task] = what + " (" + device + ")";
  redraw();
}

void Progress::finished(size_t task, const std::string& what, const std::string& device,
                        const std::string& result, bool failed, bool resumed_only,
                        double seconds) {
  std::lock_guard lock(m_);
  running_.erase(task);
  ++done_;
  if (!resumed_only) ++evaluated_;
  if (failed) ++failures_;
  if (!out_) return;
  if (tty_) {
    redraw();
    return;
  }
  std::fprintf(out_, "[%zu/%zu] %s: %s (%s, %s)\n", done_, total_, what.c_str(), result.c_str(),
               device.c_str(), resumed_only ? "from the store" : duration_text(seconds).c_str());
  std::fflush(out_);
}

void Progress::note(const std::string& line) {
  std::lock_guard lock(m_);
  if (!out_) return;
  if (tty_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  redraw();
  std::fflush(out_);
}

void Progress::clear() {
  {
    std::lock_guard lock(m_);
    if (stopping_) return;
    stopping_ = true;
    if (out_ && tty_) {
      std::fprintf(out_, "\r\033[K");
      std::fflush(out_);
    }
  }
  tick_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace solbench::runset
