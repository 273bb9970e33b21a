// Shared by the GPU tests: skip cleanly where no CUDA device exists.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "harness/timing/gpu/device.h"
#include "test_support.h"

#define SB_REQUIRE_GPU()                                              \
  do {                                                                \
    std::string sb_why_;                                              \
    if (!::solbench::gpu::gpu_available(&sb_why_))                    \
      GTEST_SKIP() << "no CUDA device: " << sb_why_;                  \
  } while (0)

namespace solbench::gpu {

// `solbench eval` of the bundled RMSNorm problem's CUDA solution on cuda:0 with
// `env` before the command and `flags` after it (no store, its own cache under
// `dir`); eval's JSON document, or a null json (and a test failure) when it did not
// exit 0 with one.
inline json eval_cuda_rmsnorm(const std::filesystem::path& dir, const std::string& env,
                              const std::string& flags) {
  const std::filesystem::path problem =
      std::filesystem::path(SOLBENCH_SOURCE_DIR) / "problems/001_rmsnorm_llama3_8b_h4096";
  const std::filesystem::path out = dir / "out.json";
  const std::string cmd = env + " SOLBENCH_CACHE_DIR='" + (dir / "cache").string() + "' '" +
                          SOLBENCH_BINARY + "' eval '" + problem.string() + "' --solution '" +
                          (problem / "solutions/cuda_rmsnorm.json").string() + "' " + flags +
                          " --device cuda:0 --no-db --json >'" + out.string() + "'";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  json doc = json::parse(solbench::testing::read(out), nullptr, false);
  EXPECT_TRUE(doc.is_object()) << cmd;
  return doc.is_object() ? doc : json();
}

}  // namespace solbench::gpu
