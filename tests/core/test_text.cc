// The text helpers every table and message uses (core/text.h).
#include <gtest/gtest.h>

#include "core/text.h"

namespace solbench {
namespace {

TEST(QuantityText, FourSignificantDigitsInFixedNotation) {
  EXPECT_EQ(quantity_text(12345.6), "12350");
  EXPECT_EQ(quantity_text(1234.6), "1235");  // rounded, no decimals at 1000 and above
  EXPECT_EQ(quantity_text(123.45), "123.5");
  EXPECT_EQ(quantity_text(1.2345), "1.234");
  EXPECT_EQ(quantity_text(0.017123), "0.01712");  // never 1.712e-02
  EXPECT_EQ(quantity_text(9.9996), "10.00");      // rounded first: 4 digits, not 5
  EXPECT_EQ(quantity_text(5e-5), "5.000e-05");    // scientific only below 1e-4
  EXPECT_EQ(quantity_text(0.0), "-");
  EXPECT_EQ(quantity_text(0.0, "0"), "0");
  EXPECT_EQ(quantity_text(-1.0), "-");
}

TEST(Fit, CutsInTheMiddleToTheWidth) {
  EXPECT_EQ(fit("short", 10), "short");
  const std::string cut = fit("gemm_bf16_m4096_n4096_k4096_tiled", 16);
  EXPECT_EQ(cut.size(), 16u);
  EXPECT_EQ(cut.substr(0, 5), "gemm_");
  EXPECT_EQ(cut.substr(cut.size() - 5), "tiled");
  EXPECT_NE(cut.find("..."), std::string::npos);
}

TEST(ClosestMatch, SuggestsOnlyWhatIsClose) {
  const std::vector<std::string> options = {"--smallest", "--max-workloads", "--seed", "--solution"};
  EXPECT_EQ(closest_match("--smalest", options), "--smallest");
  EXPECT_EQ(closest_match("--sed", options), "--seed");
  EXPECT_FALSE(closest_match("--frobnicate", options));
  EXPECT_EQ(closest_match("evl", {"eval", "sol", "run"}), "eval");
  EXPECT_FALSE(closest_match("xy", {"sol", "run"}));  // too short to guess
}

}  // namespace
}  // namespace solbench
