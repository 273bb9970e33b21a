// Progress of a run on stderr. On a terminal: one line redrawn in place
// (evaluations done/total, elapsed, ETA, failures so far, what is running);
// otherwise one plain line per finished evaluation. Thread-safe: slots report
// from their own threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace solbench::runset {

class Progress {
 public:
  // `out` null: silent. `tty`: redraw one line (else plain lines).
  Progress(std::FILE* out, bool tty, size_t total);
  ~Progress();
  Progress(const Progress&) = delete;  // owns the ticker thread
  Progress& operator=(const Progress&) = delete;
  void started(size_t task, const std::string& what, const std::string& device);
  // `result` e.g. "2 PASSED, 1 TIMEOUT"; `failed`: the evaluation had a failure.
  void finished(size_t task, const std::string& what, const std::string& device,
                const std::string& result, bool failed, bool resumed_only, double seconds);
  void note(const std::string& line);  // a message that must not be overdrawn
  void clear();                        // stops the ticker, removes the live line

 private:
  void redraw();  // with the lock held
  std::string eta() const;
  std::FILE* out_;
  bool tty_;
  size_t total_;
  size_t done_ = 0;
  size_t evaluated_ = 0;  // finished tasks that ran a child (the ETA's basis)
  size_t failures_ = 0;
  std::map<size_t, std::string> running_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex m_;
  // On a terminal, redraws once a second so that elapsed time and ETA move
  // during long evaluations.
  std::condition_variable tick_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace solbench::runset
