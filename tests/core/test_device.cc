#include "core/device.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace solbench {
namespace {

TEST(Device, ParsesTheThreeForms) {
  EXPECT_TRUE(Device::parse("cpu").is_cpu());
  EXPECT_EQ(Device::parse("cpu").ordinal(), -1);
  EXPECT_EQ(Device::parse("cuda").ordinal(), 0);  // CUDA's current device
  EXPECT_EQ(Device::parse("cuda:0"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3").ordinal(), 3);
  EXPECT_TRUE(Device::parse("cuda:12").is_cuda());
  EXPECT_EQ(Device::parse("cuda:12").kind(), Device::Kind::Cuda);
  EXPECT_EQ(Device(), Device::cpu());
}

TEST(Device, RefusesOtherTextsNamingWhatItExpected) {
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1a", "cuda0",
                          "cudafoo", " cpu", "cuda:99999999999", "tpu:0"}) {
    EXPECT_FALSE(Device::try_parse(bad)) << bad;
    EXPECT_THROW(Device::parse(bad), DeviceError) << bad;
  }
  try {
    Device::parse("gpu0");
    FAIL();
  } catch (const std::runtime_error& e) {  // DeviceError is one
    EXPECT_EQ(std::string(e.what()), "\"gpu0\" is not a device (expected cpu, cuda or cuda:N)");
  }
}

TEST(Device, TextRoundTrips) {
  for (const char* text : {"cpu", "cuda", "cuda:0", "cuda:7", "cuda:15"})
    EXPECT_EQ(Device::parse(text).str(), text);
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  // "cuda" stays as written: it is not the same text as "cuda:0".
  EXPECT_NE(Device::parse("cuda"), Device::parse("cuda:0"));
  EXPECT_EQ(Device::parse("cuda:007").str(), "cuda:7");
}

TEST(Device, JsonIsTheText) {
  json j = Device::cuda(1);
  EXPECT_EQ(j, "cuda:1");
  EXPECT_EQ(json("cpu").get<Device>(), Device::cpu());
  EXPECT_EQ(json("cuda").get<Device>().str(), "cuda");
  json plan = {{"device", Device::cuda(4)}};
  EXPECT_EQ(plan.dump(), R"({"device":"cuda:4"})");
  EXPECT_EQ(plan["device"].get<Device>(), Device::cuda(4));
  EXPECT_THROW(json("tpu").get<Device>(), DeviceError);
  EXPECT_THROW(json(3).get<Device>(), DeviceError);
}

TEST(Device, OrdersByKindThenOrdinal) {
  const std::set<Device> s = {Device::cuda(10), Device::cuda(2), Device::cpu(), Device::cuda(2)};
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(*s.begin(), Device::cpu());
  EXPECT_EQ(*std::next(s.begin()), Device::cuda(2));
  EXPECT_LT(Device::cuda(2), Device::cuda(10));
}

}  // namespace
}  // namespace solbench
