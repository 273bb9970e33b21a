// Applies the worker sandbox with some pieces turned off (named on the command
// line), then initialises the CUDA driver and prints what happened as JSON. Used
// on GPU machines to check that the sandbox leaves CUDA working, and to find the
// piece at fault when it does not.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "harness/sandbox.h"

int main(int argc, char** argv) {
  solbench::harness::SandboxOptions o;
  solbench::json off = solbench::json::array();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    off.push_back(a);
    if (a == "netns") o.private_network = false;
    else if (a == "caps") o.drop_capabilities = false;
    else if (a == "seccomp") o.seccomp = false;
    else if (a == "procs") o.deny_process_creation = false;
    else if (a == "signals") o.signals_to_self_only = false;
    else if (a == "dumpable") o.not_dumpable = false;
    else if (a.rfind("allow=", 0) == 0) o.allow_syscalls.push_back(a.substr(6));
    else if (a == "all") {
      o = {};
      o.private_network = o.drop_capabilities = o.seccomp = o.deny_process_creation = false;
      o.signals_to_self_only = o.not_dumpable = o.no_new_privs = false;
    } else {
      std::fprintf(stderr, "unknown piece %s\n", a.c_str());
      return 2;
    }
  }
  const bool apply = !(argc == 2 && std::string(argv[1]) == "all");
  solbench::json report;
  if (apply) report = solbench::harness::apply_worker_sandbox(o).to_json();
  // The driver API through dlopen: no link dependency, and the probe still runs
  // (reporting "no driver") where there is no GPU.
  int rc = -1, count = -1;
  if (void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int*);
    auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
    auto get_count = reinterpret_cast<CountFn>(::dlsym(lib, "cuDeviceGetCount"));
    if (init) rc = init(0);
    if (rc == 0 && get_count) get_count(&count);
  }
  solbench::json out = {{"off", off}, {"cuInit", rc}, {"devices", count}, {"sandbox", report}};
  std::printf("%s\n", out.dump().c_str());
  return rc == 0 ? 0 : 1;
}
