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
