// The solbench binary as the SOL tests run it (SOLBENCH_BINARY): a command with the
// cache in a folder of the test's own, stdout and stderr apart.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace solbench::sol::testing {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// `solbench ARGS` with SOLBENCH_CACHE_DIR=`work`/cache.
inline CliRun solbench(const std::string& args, const std::filesystem::path& work) {
  const std::filesystem::path out = work / "stdout.txt", err = work / "stderr.txt";
  const std::string cmd = "SOLBENCH_CACHE_DIR='" + (work / "cache").string() + "' '" SOLBENCH_BINARY "' " +
                          args + " > '" + out.string() + "' 2> '" + err.string() + "'";
  const int st = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = solbench::testing::read(out);
  r.err = solbench::testing::read(err);
  return r;
}

}  // namespace solbench::sol::testing
