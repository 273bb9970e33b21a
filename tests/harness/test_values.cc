// The seeds of the values (values.h): derivation, the parent's order of requests,
// its picks of the calls to keep, and its check of what a worker reports.
#include <gtest/gtest.h>

#include <set>

#include "harness/values.h"

namespace solbench::harness {
namespace {

TEST(Values, SeedsDependOnEverythingAndStayBelow2To63) {
  const uint64_t a = value_seed(7, "u", ValueKind::Round, 0);
  EXPECT_EQ(a, value_seed(7, "u", ValueKind::Round, 0));
  EXPECT_NE(a, value_seed(8, "u", ValueKind::Round, 0));
  EXPECT_NE(a, value_seed(7, "v", ValueKind::Round, 0));
  EXPECT_NE(a, value_seed(7, "u", ValueKind::Call, 0));
  EXPECT_NE(a, value_seed(7, "u", ValueKind::Round, 1));
  for (int i = 0; i < 100; ++i) EXPECT_LT(value_seed(~0ull, "u", ValueKind::Call, i), 1ull << 63);
}

// What the harness asks for one workload: rounds, then calls, then the end.
struct Loop {
  ValueIssuer issuer{42, 6, 100};
  int64_t now = 1'000'000'000;
  std::vector<int> kept_at;  // per call: the slot the previous call took
  json ask(json r, int64_t after_ns = 1'000'000) {
    r["type"] = "values";
    now += after_ns;
    return issuer.answer(r, now);
  }
};

TEST(Values, TheParentAnswersOnlyTheNextRequestOnce) {
  Loop l;
  l.issuer.begin("u", 2);
  EXPECT_EQ(l.ask({{"what", "round"}, {"round", 0}})["seed"].get<uint64_t>(),
            value_seed(42, "u", ValueKind::Round, 0));
  EXPECT_THROW(l.ask({{"what", "round"}, {"round", 0}}), ValueViolation);  // twice
  EXPECT_THROW(l.ask({{"what", "round"}, {"round", 2}}), ValueViolation);  // ahead
  l.ask({{"what", "round"}, {"round", 1}});
  EXPECT_THROW(l.ask({{"what", "call"}, {"call", 1}}), ValueViolation);  // call 1 before 0
  const json c0 = l.ask({{"what", "call"}, {"call", 0}});
  EXPECT_EQ(c0["seed"].get<uint64_t>(), value_seed(42, "u", ValueKind::Call, 0));
  EXPECT_EQ(c0["keep"].get<int>(), -1);
  EXPECT_EQ(l.ask({{"what", "call"}, {"call", 1}})["keep"].get<int>(), 0);  // call 0 kept
  // A round after the calls began, or the next call asked twice: not the harness.
  EXPECT_THROW(l.ask({{"what", "round"}, {"round", 2}}), ValueViolation);
  EXPECT_THROW(l.ask({{"what", "call"}, {"call", 1}}), ValueViolation);
  EXPECT_THROW(l.ask({{"what", "calls_end"}, {"calls", 5}}), ValueViolation);
  EXPECT_EQ(l.ask({{"what", "calls_end"}, {"calls", 2}})["keep"].get<int>(), 1);
  EXPECT_THROW(l.ask({{"what", "call"}, {"call", 2}}), ValueViolation);  // after the end
  ValueIssuer idle(1, 6, 100);
  EXPECT_THROW(idle.answer({{"what", "round"}, {"round", 0}}, 0), ValueViolation);
}

TEST(Values, KeptCallsAreAUniformSampleOfEveryCall) {
  // Over many workloads, each of 40 calls is kept about 8/40 of the time.
  std::vector<int> kept(40, 0);
  for (int w = 0; w < 2000; ++w) {
    Loop l;
    l.issuer.begin("u" + std::to_string(w), 8);
    std::vector<int> slot_of(8, -1);
    for (int c = 0; c < 40; ++c) {
      const int slot = l.ask({{"what", "call"}, {"call", c}})["keep"].get<int>();
      if (c > 0 && slot >= 0) slot_of[slot] = c - 1;
    }
    const int slot = l.ask({{"what", "calls_end"}, {"calls", 40}})["keep"].get<int>();
    if (slot >= 0) slot_of[slot] = 39;
    std::set<int> distinct(slot_of.begin(), slot_of.end());
    EXPECT_EQ(distinct.size(), 8u);
    for (int c : slot_of) ++kept[c];
  }
  for (int c = 0; c < 40; ++c) {
    EXPECT_GT(kept[c], 300) << "call " << c;  // expected 400
    EXPECT_LT(kept[c], 500) << "call " << c;
  }
}

// A workload of 2 warm-up and 4 timed calls, each `wall_ms` apart on the parent's
// clock, and the outcome an honest worker reports for it.
struct Reported {
  Loop l;
  WorkloadOutcome o;
  std::vector<int> slot_of = std::vector<int>(3, -1);
  explicit Reported(double wall_ms = 2.0) {
    l.issuer.begin("u", 3);
    const auto step = static_cast<int64_t>(wall_ms * 1e6);
    for (int c = 0; c < 6; ++c) {
      const int slot = l.ask({{"what", "call"}, {"call", c}}, step)["keep"].get<int>();
      if (c > 0 && slot >= 0) slot_of[slot] = c - 1;
    }
    const int slot = l.ask({{"what", "calls_end"}, {"calls", 6}}, step)["keep"].get<int>();
    if (slot >= 0) slot_of[slot] = 5;
    TimingResult t;
    t.warmup_calls = 2;
    t.samples_ms = {1.0, 1.5, 1.2, 1.1};
    t.stats = summarize(t.samples_ms);
    o.status = Status::Passed;
    o.timing = t;
    CallRecord r;
    r.timed = true;
    for (int k = 0; k < 3; ++k)
      r.samples.push_back({-1, slot_of[k] >= 2 ? slot_of[k] - 2 : -1, slot_of[k],
                           "s" + std::to_string(k) + ".rec", std::string(64, 'a')});
    o.record = r;
  }
};

TEST(Values, AnHonestReportIsBelievedAndItsStatisticsAreTheSamples) {
  Reported h;
  h.o.timing->stats.median_ms = 0.001;  // a median its samples do not have
  EXPECT_EQ(h.l.issuer.check(h.o), "");
  EXPECT_NEAR(h.o.timing->stats.median_ms, 1.15, 1e-9);
  EXPECT_NEAR(h.o.extra["parent_clock"]["call_wall_median_ms"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(h.o.extra["parent_clock"]["calls"].get<int>(), 6);
}

TEST(Values, AReportTheParentsClockOrCountsContradictIsNotBelieved) {
  {
    Reported h(1.0);  // each call had 1 ms on the parent's clock; 1.5 ms is reported
    EXPECT_NE(h.l.issuer.check(h.o).find("timed call 2"), std::string::npos);
  }
  {
    Reported h;
    h.o.timing->samples_ms.pop_back();  // fewer calls than were handed out
    EXPECT_NE(h.l.issuer.check(h.o).find("handed out the values of 6 calls"), std::string::npos);
  }
  {
    Reported h;
    h.o.timing->warmup_calls = 1;  // the counts disagree
    EXPECT_NE(h.l.issuer.check(h.o), "");
  }
  {
    Reported h;
    // A call the parent did not pick, recorded in place of one it did.
    std::set<int> picked(h.slot_of.begin(), h.slot_of.end());
    int other = 0;
    while (picked.count(other)) ++other;
    h.o.record->samples[0].pool_call = other;
    h.o.record->samples[0].call = other >= 2 ? other - 2 : -1;
    EXPECT_NE(h.l.issuer.check(h.o).find("not the 3 the parent picked"), std::string::npos);
  }
  {
    Reported h;
    h.o.timing->samples_ms[0] = -1;  // not a time
    EXPECT_NE(h.l.issuer.check(h.o), "");
  }
}

}  // namespace
}  // namespace solbench::harness
