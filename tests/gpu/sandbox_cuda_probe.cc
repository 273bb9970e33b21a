// Applies the worker sandbox with some pieces turned off (named on the command
// line; `cuda` applies it as CUDA workers do), then initialises the CUDA driver (cuInit, a context, a 1 MiB allocation)
// and NVML, and prints what happened as JSON. Used on GPU machines to check that
// the sandbox leaves CUDA working, and to find the piece at fault when it does not.
//
// `trap` makes the seccomp filter raise SIGSYS instead of failing refused calls;
// the handler here records each refused call (number, first two arguments) and
// then fails it with EPERM (ENOSYS for clone3) exactly as the real filter would,
// so one run lists every refused call the driver makes.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/worker/sandbox.h"

#ifdef SOLBENCH_HAVE_SECCOMP
#include <seccomp.h>
#endif

namespace {

struct Refusal {
  long nr, arg0, arg1;
};
constexpr int kMaxRefusals = 256;
Refusal g_refusals[kMaxRefusals];
std::atomic<int> g_refusal_count{0};

void on_sigsys(int, siginfo_t* info, void* raw) {
  auto* uc = static_cast<ucontext_t*>(raw);
  const long nr = info->si_syscall;
  long a0 = 0, a1 = 0;
  long* ret = nullptr;
#if defined(__x86_64__)
  a0 = uc->uc_mcontext.gregs[REG_RDI];
  a1 = uc->uc_mcontext.gregs[REG_RSI];
  ret = reinterpret_cast<long*>(&uc->uc_mcontext.gregs[REG_RAX]);
#elif defined(__aarch64__)
  a0 = static_cast<long>(uc->uc_mcontext.regs[0]);
  a1 = static_cast<long>(uc->uc_mcontext.regs[1]);
  ret = reinterpret_cast<long*>(&uc->uc_mcontext.regs[0]);
#endif
  const int i = g_refusal_count.fetch_add(1);
  if (i < kMaxRefusals) g_refusals[i] = {nr, a0, a1};
#ifdef SYS_clone3
  if (ret) *ret = nr == SYS_clone3 ? -ENOSYS : -EPERM;
#else
  if (ret) *ret = -EPERM;
#endif
}

std::string syscall_name(long nr) {
#ifdef SOLBENCH_HAVE_SECCOMP
  if (char* n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, static_cast<int>(nr))) {
    std::string s = n;
    ::free(n);
    return s;
  }
#endif
  return std::to_string(nr);
}

template <typename Fn>
Fn sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<Fn>(::dlsym(lib, name)) : nullptr;
}

}  // namespace

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
    else if (a == "unixsockets") o.allow_unix_sockets = false;
    else if (a == "trap") o.trap_refusals = true;
    else if (a == "cuda") o.allow_unix_ipc = true;  // what CUDA workers use
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
  if (o.trap_refusals) {
    struct sigaction sa = {};
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    ::sigaction(SIGSYS, &sa, nullptr);
  }
  const bool apply = !(argc == 2 && std::string(argv[1]) == "all");
  solbench::json report;
  if (apply) report = solbench::harness::apply_worker_sandbox(o).to_json();
  // The driver API through dlopen: no link dependency, and the probe still runs
  // (reporting "no driver") where there is no GPU.
  int rc = -1, count = -1, ctx_rc = -1, alloc_rc = -1, nvml_rc = -1;
  void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (auto init = sym<int (*)(unsigned)>(cuda, "cuInit")) rc = init(0);
  if (rc == 0) {
    if (auto get_count = sym<int (*)(int*)>(cuda, "cuDeviceGetCount")) get_count(&count);
    void* ctx = nullptr;
    auto retain = sym<int (*)(void**, int)>(cuda, "cuDevicePrimaryCtxRetain");
    auto set = sym<int (*)(void*)>(cuda, "cuCtxSetCurrent");
    auto alloc = sym<int (*)(unsigned long long*, size_t)>(cuda, "cuMemAlloc_v2");
    auto release = sym<int (*)(unsigned long long)>(cuda, "cuMemFree_v2");
    if (retain && set && alloc && release && count > 0) {
      ctx_rc = retain(&ctx, 0);
      if (ctx_rc == 0) ctx_rc = set(ctx);
      unsigned long long p = 0;
      if (ctx_rc == 0) alloc_rc = alloc(&p, 1 << 20);
      if (alloc_rc == 0) release(p);
    }
  }
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (auto init = sym<int (*)()>(nvml, "nvmlInit_v2")) nvml_rc = init();
  solbench::json refused = solbench::json::array();
  const int n = std::min(g_refusal_count.load(), kMaxRefusals);
  for (int i = 0; i < n; ++i)
    refused.push_back({{"syscall", syscall_name(g_refusals[i].nr)},
                       {"arg0", g_refusals[i].arg0}, {"arg1", g_refusals[i].arg1}});
  solbench::json out = {{"off", off},         {"cuInit", rc},       {"devices", count},
                        {"context", ctx_rc},  {"alloc", alloc_rc},  {"nvmlInit", nvml_rc},
                        {"refused", refused}, {"sandbox", report}};
  std::printf("%s\n", out.dump().c_str());
  return rc == 0 && (count <= 0 || alloc_rc == 0) ? 0 : 1;
}
