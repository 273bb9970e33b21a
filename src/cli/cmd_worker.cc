// `solbench __worker --channel-fd N`: the evaluation worker (src/harness/worker/worker.h),
// started only by `solbench eval` through the runner. Hidden from --help: it
// speaks the framed protocol on fd N, not to a person.
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "harness/worker/worker.h"

namespace solbench::cli {

void add_worker_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("__worker", "evaluation worker (internal; started by eval)");
  cmd->group("");  // hidden
  auto fd = std::make_shared<int>(-1);
  cmd->add_option("--channel-fd", *fd, "file descriptor of the framed channel to the parent")
      ->required();
  cmd->callback([fd] {
    if (*fd < 0) {
      std::fprintf(stderr, "solbench __worker: --channel-fd must be >= 0\n");
      exit_code() = 2;
      return;
    }
    exit_code() = harness::worker_main(*fd);
  });
}

}  // namespace solbench::cli
