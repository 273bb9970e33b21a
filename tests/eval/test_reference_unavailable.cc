// When a reference's failure means "cannot be evaluated here" (skipped, with the
// reason) rather than a failure of the evaluation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/worker/worker_session.h"

namespace solbench::harness {
namespace {

const std::vector<std::string> kFp4 = {"float4_e2m1fn_x2", "float8_e4m3fn", "float32"};
const std::vector<std::string> kBf16 = {"bfloat16"};

TEST(ReferenceUnavailable, UnsupportedCublasOnTheGpuIsSkippedWithTheFp4Hint) {
  const std::string err =
      "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmulAlgoGetHeuristic(...)`";
  auto why = reference_unavailable_here(err, Device::cuda(0), kFp4);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("compute capability 10.0"), std::string::npos) << *why;
  why = reference_unavailable_here(err, Device::cuda(0), kBf16);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->find("FP4"), std::string::npos) << *why;
}

TEST(ReferenceUnavailable, OtherGpuFailuresAreGenuine) {
  EXPECT_FALSE(reference_unavailable_here("CUDA out of memory. Tried to allocate 8.00 GiB", Device::cuda(0), kBf16));
  EXPECT_FALSE(reference_unavailable_here("AssertionError: hidden_size == 4096", Device::cuda(0), kBf16));
}

TEST(ReferenceUnavailable, CpuRunsSkipWhatNeedsAGpuOrANewerTorch) {
  EXPECT_EQ(reference_unavailable_here("Torch not compiled with CUDA enabled", Device::cpu(), kBf16).value_or(""),
            "the reference needs a GPU: Torch not compiled with CUDA enabled");
  auto why = reference_unavailable_here("\"addmm_impl_cpu_\" not implemented for 'Half'", Device::cpu(), kBf16);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("the reference needs an operator this torch lacks on the CPU", 0), 0u) << *why;
  EXPECT_FALSE(reference_unavailable_here("ValueError: shapes do not match", Device::cpu(), kBf16));
}

}  // namespace
}  // namespace solbench::harness
