// The results store's side of one evaluation (docs/store.md): a run, the
// solution, every trace with its T_SOL, T_b and S (one transaction per trace),
// and measured baselines. A store that cannot be opened or written is a
// warning: the evaluation, its traces file and its output never depend on it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/trace.h"
#include "eval/report.h"
#include "eval/request.h"
#include "store/store.h"

namespace solbench::eval {

class StoreRecorder {
 public:
  // `predicted_env`: where a trace no worker reported on would have run (a
  // failed build or load), asked for only then.
  StoreRecorder(const Request& request, const store::SolutionRecord& solution,
                std::function<json()> predicted_env);

  store::Store* db() { return db_ ? &*db_ : nullptr; }
  void record(const Trace& t, const ScoreState& st);
  void put_baseline(const store::Baseline& b);
  void finish();

  // Warnings wait until the live progress line is gone.
  const std::vector<std::string>& warnings() const { return warnings_; }
  void warn(const std::string& w) { warnings_.push_back(w); }

  json to_json() const;             // {path, recorded, errors, run, error?}; null: no store
  std::string summary_line() const; // "store: PATH (run N, K trace(s) recorded)"; "" without

 private:
  std::function<json()> predicted_env_;
  std::optional<store::Store> db_;
  std::string path_, open_error_, solution_hash_;
  int64_t run_ = -1;
  bool run_env_set_ = false;
  int recorded_ = 0, errors_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace solbench::eval
