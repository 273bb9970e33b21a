// Reference times (schema version 4): T_ref kept per workload and environment,
// the latest one found by its key, refused when malformed, and the migration
// that adds the table.
#include <gtest/gtest.h>

#include "store_test_util.h"

namespace solbench::store {
namespace {

using namespace testing;

const BaselineKey kKey{std::string(64, 'd'), "w1", "NVIDIA H100 80GB HBM3", "580.159.04",
                       "2.11.0", "cupti"};

ReferenceTime reference_time(double ms, const std::string& recorded = "") {
  return ReferenceTime{kKey, ms, {{"median_ms", ms}, {"count", 40}, {"converged", true}}, recorded};
}

TEST_F(StoreTest, AReferenceTimeRoundTripsAndTheLatestOfAKeyIsFound) {
  EXPECT_FALSE(store_->reference_time(kKey));
  store_->put_reference_time(reference_time(0.25, "2026-01-01T00:00:00.000Z"));
  store_->put_reference_time(reference_time(0.3));
  const std::optional<ReferenceTime> got = store_->reference_time(kKey);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->t_ref_ms, 0.3);
  EXPECT_EQ(got->timing.value("count", 0), 40);
  EXPECT_FALSE(got->recorded.empty());  // now, when put without one
  EXPECT_NE(got->recorded, "2026-01-01T00:00:00.000Z");
  // Each field of the key is part of it: another torch, timer, driver or GPU misses.
  for (std::string BaselineKey::*field :
       {&BaselineKey::definition_hash, &BaselineKey::workload_uuid, &BaselineKey::gpu_model,
        &BaselineKey::driver, &BaselineKey::torch, &BaselineKey::timer}) {
    BaselineKey other = kKey;
    other.*field += "x";
    EXPECT_FALSE(store_->reference_time(other)) << other.*field;
  }
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM reference_times"), "2");
}

TEST_F(StoreTest, AReferenceTimeThatIsNoTimeOrHasNoKeyIsRefused) {
  for (double bad : {0.0, -1.0, std::nan("")})
    EXPECT_HAS(store_error([&] { store_->put_reference_time(reference_time(bad)); }),
               "T_ref is");
  ReferenceTime no_uuid = reference_time(1.0);
  no_uuid.key.workload_uuid.clear();
  EXPECT_HAS(store_error([&] { store_->put_reference_time(no_uuid); }), "workload uuid");
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM reference_times"), "0");
}

// A row whose timing is not a JSON object (another client wrote it) is no hit.
TEST_F(StoreTest, AReferenceTimeWhoseTimingDoesNotParseIsNoHit) {
  store_->put_reference_time(reference_time(0.5));
  sql_value(db_, "UPDATE reference_times SET timing_json = 'not json'");
  EXPECT_FALSE(store_->reference_time(kKey));
}

// A version 3 store (before reference times) opens as the current version with the
// table, and keeps its baselines.
TEST(StoreReferenceTimesSchema, AVersion3StoreGainsTheReferenceTimesTable) {
  TempDir dir;
  const auto db = dir.path() / "v3.db";
  {
    Store s = Store::open(db);
    s.put_baseline(Baseline{kKey, 2.0, BaselineMethod::TorchCompile, "", ""});
  }
  sql_value(db, "DROP TABLE reference_times");
  sql_value(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
  Store s = Store::open(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  ASSERT_TRUE(s.baseline(kKey));
  EXPECT_FALSE(s.reference_time(kKey));
  s.put_reference_time(reference_time(0.125));
  ASSERT_TRUE(s.reference_time(kKey));
  EXPECT_EQ(s.reference_time(kKey)->t_ref_ms, 0.125);
}

}  // namespace
}  // namespace solbench::store
