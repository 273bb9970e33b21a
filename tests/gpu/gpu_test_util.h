// Shared by the GPU tests: skip cleanly where no CUDA device exists.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "harness/timing/gpu/device.h"

#define SB_REQUIRE_GPU()                                              \
  do {                                                                \
    std::string sb_why_;                                              \
    if (!::solbench::gpu::gpu_available(&sb_why_))                    \
      GTEST_SKIP() << "no CUDA device: " << sb_why_;                  \
  } while (0)
