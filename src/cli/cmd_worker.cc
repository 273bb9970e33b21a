// `solbench __worker --channel-fd N`: the evaluation worker (src/harness/worker/worker.h),
// started only by `solbench eval` through the runner. Hidden from --help: it
// speaks the framed protocol on fd N, not to a person.
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "harness/worker/worker.h"
#include "harness/worker/zygote.h"

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

  // `solbench __zygote --address NAME [--exit-on-stdin-eof]`: the warm worker
  // template (src/harness/worker/zygote.h), started by eval, run, baseline or the
  // Python module; workers are forked from it.
  auto* zy = app.add_subcommand("__zygote", "worker template (internal; started by eval)");
  zy->group("");  // hidden
  auto address = std::make_shared<std::string>();
  auto stdin_eof = std::make_shared<bool>(false);
  zy->add_option("--address", *address, "abstract socket name to listen on")->required();
  zy->add_flag("--exit-on-stdin-eof", *stdin_eof, "exit when standard input reaches end of file");
  zy->callback([address, stdin_eof] { exit_code() = harness::zygote_main(*address, *stdin_eof); });
}

}  // namespace solbench::cli
