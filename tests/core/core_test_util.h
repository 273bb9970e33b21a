// Helpers shared by the core tests: those of tests/test_support.h (a temporary
// folder, writing files into it) and a substring expectation that prints the whole
// text when it fails.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "../test_support.h"  // EXPECT_HAS, TempDir, write, read
