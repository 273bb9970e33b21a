#include "runset/shard.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "core/json.h"

namespace solbench::runset {

namespace fs = std::filesystem;

ShardSpec parse_shard(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return InputError("", 0, "--shard",
                      fmt::format("\"{}\": {} (expected I/N with 0 <= I < N, e.g. 0/4; I is "
                                  "0-based like SLURM_ARRAY_TASK_ID with --array=0-(N-1))",
                                  text, why));
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) throw bad("no '/'");
  const auto number = [&](std::string_view s, const char* what) {
    int v = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      throw bad(fmt::format("{} is not a whole number", what));
    return v;
  };
  ShardSpec s;
  s.index = number(text.substr(0, slash), "I");
  s.count = number(text.substr(slash + 1), "N");
  if (s.count < 1) throw bad("N must be at least 1");
  if (s.index < 0 || s.index >= s.count) throw bad(fmt::format("I must be in 0..{}", s.count - 1));
  return s;
}

std::map<size_t, double> published_sol_ms(const fs::path& problem_dir, const Problem& p,
                                          std::vector<std::string>& notes) {
  std::map<size_t, double> out;
  const fs::path file = problem_dir / "metadata.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return out;
  const auto note = [&](const std::string& where, const std::string& what) {
    notes.push_back(fmt::format("{}: {}: {}; the predicted cost uses bytes / bandwidth instead",
                                file.string(), where, what));
  };
  json doc;
  try {
    doc = load_json_file(file);
  } catch (const InputError& e) {
    notes.push_back(fmt::format("{}; the predicted cost uses bytes / bandwidth instead", e.what()));
    return out;
  }
  // The file is optional data beside the problem: anything unexpected is a
  // note (the run goes on), never an error.
  if (!doc.is_object() || !doc.contains("sol")) return out;
  const json& sol = doc["sol"];
  if (!sol.is_object()) {
    note("sol", "expected an object");
    return out;
  }
  if (!sol.value("available", true) || sol.value("sol_is_dummy", false)) return out;
  if (!sol.contains("per_workload") || !sol["per_workload"].is_array()) {
    note("sol.per_workload", "expected an array");
    return out;
  }
  const json& per = sol["per_workload"];
  // A file of another revision of the data set: its indices would name other workloads.
  if (per.size() != p.workloads.size()) {
    note("sol.per_workload", fmt::format("{} entries for {} workloads in workload.jsonl",
                                         per.size(), p.workloads.size()));
    return out;
  }
  for (size_t i = 0; i < per.size(); ++i) {
    const json& e = per[i];
    const std::string where = fmt::format("sol.per_workload[{}]", i);
    if (!e.is_object() || !e.contains("sol_ms") || !e["sol_ms"].is_number() ||
        !(e["sol_ms"].get<double>() > 0)) {
      note(where + ".sol_ms", "expected a number > 0");
      continue;
    }
    const size_t index = e.contains("index") && e["index"].is_number_unsigned()
                             ? e["index"].get<size_t>()
                             : i;
    if (index >= p.workloads.size()) {
      note(where + ".index", fmt::format("expected an index below {}", p.workloads.size()));
      continue;
    }
    // The axes it gives must be the workload's, or it is about another workload.
    bool same = true;
    if (e.contains("axes") && e["axes"].is_object())
      for (const auto& [name, value] : p.workloads[index].axes) {
        auto it = e["axes"].find(name);
        if (it != e["axes"].end() && (!it->is_number_integer() || it->get<int64_t>() != value))
          same = false;
      }
    if (!same) {
      note(where + ".axes", fmt::format("expected the axes of workload {} ({})", index,
                                        p.workloads[index].uuid));
      continue;
    }
    out[index] = e["sol_ms"].get<double>();
  }
  return out;
}

size_t reference_calls(const std::string& source) {
  static const std::set<std::string> kNotCalls = {
      "and",   "as",    "assert", "class", "def",  "del",    "elif", "else", "except", "for",
      "from",  "if",    "import", "in",    "is",   "lambda", "not",  "or",   "return", "while",
      "with",  "yield", "await",  "print"};
  size_t calls = 0;
  std::string previous;  // the word before the current one ("def" makes a name no call)
  for (size_t i = 0; i < source.size();) {
    const char c = source[i];
    if (c == '#') {  // a comment, to its line's end
      while (i < source.size() && source[i] != '\n') ++i;
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < source.size() &&
           (std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_' ||
            source[end] == '.'))
      ++end;
    const std::string word = source.substr(i, end - i);
    size_t next = end;
    while (next < source.size() && (source[next] == ' ' || source[next] == '\t')) ++next;
    if (next < source.size() && source[next] == '(' && previous != "def" &&
        previous != "class" && !kNotCalls.count(word))
      ++calls;
    previous = word;
    i = end;
  }
  return calls;
}

std::vector<PairCost> predict_costs(const std::vector<LoadedProblem>& problems,
                                    const std::vector<size_t>& evaluations, const CostModel& m,
                                    std::vector<std::string>& notes) {
  std::vector<PairCost> out;
  for (size_t i = 0; i < problems.size(); ++i) {
    const LoadedProblem& lp = problems[i];
    if (!lp.problem || i >= evaluations.size() || evaluations[i] == 0) continue;
    const auto published = published_sol_ms(lp.where.dir, *lp.problem, notes);
    const size_t calls = reference_calls(lp.problem->definition.reference);
    for (size_t k = 0; k < lp.selected.size(); ++k) {
      const size_t w = lp.selected[k];
      PairCost c;
      c.problem = i;
      c.workload = k;
      if (const auto& r = lp.problem->resolved[w]) c.bytes = r->input_bytes + r->output_bytes;
      if (auto it = published.find(w); it != published.end()) {
        c.t_sol_ms = it->second;
        c.t_sol_published = true;
      } else {
        c.t_sol_ms = double(c.bytes) / m.fallback_bytes_per_s * 1e3;
      }
      c.evaluations = evaluations[i];
      c.reference_calls = calls;
      const double per_evaluation =
          m.workload_s +
          m.rounds * (double(c.bytes) / m.bytes_per_s + m.sol_multiple * c.t_sol_ms * 1e-3);
      // T_b once per pair: the evaluations after the first find it in the store.
      c.seconds = double(c.evaluations) * per_evaluation + m.compile_s_per_call * double(calls);
      out.push_back(c);
    }
  }
  return out;
}

double ShardPlan::max_over_mean() const {
  if (load_s.empty()) return 1;
  const double total = std::accumulate(load_s.begin(), load_s.end(), 0.0);
  if (total <= 0) return 1;
  return *std::max_element(load_s.begin(), load_s.end()) / (total / double(load_s.size()));
}

ShardPlan plan_shards(const std::vector<PairCost>& pairs, int count, const CostModel& m) {
  ShardPlan plan;
  plan.count = std::max(1, count);
  const size_t n = static_cast<size_t>(plan.count);
  plan.shard_of.assign(pairs.size(), 0);
  plan.load_s.assign(n, 0.0);
  plan.pairs.assign(n, 0);
  plan.setups.assign(n, 0);

  // Per problem: its pairs and its whole cost (one set-up included).
  std::map<size_t, std::vector<size_t>> by_problem;
  std::map<size_t, double> whole;
  double total = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairCost& p = pairs[i];
    if (by_problem[p.problem].empty()) {
      whole[p.problem] += double(p.evaluations) * m.child_setup_s;
      total += double(p.evaluations) * m.child_setup_s;
    }
    by_problem[p.problem].push_back(i);
    whole[p.problem] += p.seconds;
    total += p.seconds;
  }
  // Each shard's fair share: a problem stays on a shard while the shard is
  // below it, and only spills over (paying another set-up) beyond it.
  const double target = total / double(n);

  // Dearest problems first, their dearest pairs first; ties keep the order
  // the pairs come in (stable sorts), so the plan is a function of the pairs.
  std::vector<size_t> problems;
  for (const auto& [prob, _] : by_problem) problems.push_back(prob);
  std::stable_sort(problems.begin(), problems.end(),
                   [&](size_t a, size_t b) { return whole[a] > whole[b]; });
  for (size_t prob : problems) {
    std::vector<size_t>& mine = by_problem[prob];
    std::stable_sort(mine.begin(), mine.end(),
                     [&](size_t a, size_t b) { return pairs[a].seconds > pairs[b].seconds; });
    std::vector<bool> on(n, false);  // shards holding some of this problem
    for (size_t i : mine) {
      const PairCost& p = pairs[i];
      const double setup = double(p.evaluations) * m.child_setup_s;
      std::optional<size_t> best;
      // A shard that already holds the problem, while it stays within its share.
      for (size_t s = 0; s < n; ++s)
        if (on[s] && plan.load_s[s] + p.seconds <= target &&
            (!best || plan.load_s[s] < plan.load_s[*best]))
          best = s;
      // Else the shard whose load would be lowest with it.
      if (!best) {
        double best_load = 0;
        for (size_t s = 0; s < n; ++s) {
          const double load = plan.load_s[s] + p.seconds + (on[s] ? 0.0 : setup);
          if (!best || load < best_load) {
            best = s;
            best_load = load;
          }
        }
      }
      const size_t s = *best;
      if (!on[s]) {
        plan.load_s[s] += setup;
        plan.setups[s] += p.evaluations;
        on[s] = true;
      }
      plan.load_s[s] += p.seconds;
      plan.pairs[s] += 1;
      plan.shard_of[i] = static_cast<int>(s);
    }
  }
  return plan;
}

}  // namespace solbench::runset
