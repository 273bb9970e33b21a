#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bridge/python.h"

using namespace solbench;

TEST(Bridge, EchoRoundTripsJson) {
  if (!bridge::python_available()) GTEST_SKIP() << "built without embedded Python";
  auto out = nlohmann::json::parse(bridge::call_json("selftest", "echo", R"({"a": [1, 2]})"));
  EXPECT_EQ(out["echo"]["a"][1], 2);
  EXPECT_FALSE(out["python"].get<std::string>().empty());
}

TEST(Bridge, PythonExceptionBecomesRuntimeErrorWithMessage) {
  if (!bridge::python_available()) GTEST_SKIP() << "built without embedded Python";
  try {
    bridge::call_json("selftest", "fail", "boom");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("requested failure: boom"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("selftest.fail"), std::string::npos);
  }
}

TEST(Bridge, UnknownModuleIsAnError) {
  if (!bridge::python_available()) GTEST_SKIP() << "built without embedded Python";
  EXPECT_THROW(bridge::call_json("no_such_module", "x", "{}"), std::runtime_error);
}

// Outputs of several GB are compared slice by slice (correctness.CHUNK): the
// verdicts and numbers must not depend on where the slices fall.
TEST(Bridge, ComparisonInSlicesMatchesTheWholeTensor) {
  if (!bridge::python_available()) GTEST_SKIP() << "built without embedded Python";
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(bridge::call_json("selftest", "compare_in_slices", R"({"seed": 3})"));
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("No module named 'torch'") != std::string::npos)
      GTEST_SKIP() << "no torch in this Python";
    throw;
  }
  for (const auto& [name, c] : out.items()) {
    SCOPED_TRACE(name);
    for (const char* key : {"ok", "reason", "has_nan", "has_inf"})
      EXPECT_EQ(c["whole"][key], c["slices"][key]) << key;
    for (const char* key : {"max_absolute_error", "max_relative_error", "matched_ratio"})
      EXPECT_NEAR(c["whole"][key].get<double>(), c["slices"][key].get<double>(), 1e-9) << key;
    EXPECT_EQ(c["ref_problem"][0], c["ref_problem"][1]);
  }
  EXPECT_TRUE(out["equal"]["slices"]["ok"].get<bool>());
  EXPECT_FALSE(out["five_percent_off"]["slices"]["ok"].get<bool>());
  EXPECT_NEAR(out["five_percent_off"]["slices"]["matched_ratio"].get<double>(), 0.95, 1e-9);
  EXPECT_TRUE(out["nan_in_last_slice"]["slices"]["has_nan"].get<bool>());
  EXPECT_TRUE(out["matching_neg_inf"]["slices"]["ok"].get<bool>());
  EXPECT_TRUE(out["matching_neg_inf"]["ref_problem"][1].is_null());
  EXPECT_NE(out["zeros"]["slices"]["reason"].get<std::string>().find("all zeros"), std::string::npos);
  EXPECT_NE(out["over_cap"]["slices"]["reason"].get<std::string>().find("max_error_cap"), std::string::npos);
  EXPECT_TRUE(out["bf16"]["slices"]["ok"].get<bool>());
}
