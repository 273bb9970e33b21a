// Hack (native): timer patching from inside the worker. On its first call it
// rewrites the first bytes of libstdc++'s std::chrono::steady_clock::now (which the
// CPU timer reads) into a jump to its own clock: real time, except that the first
// reading after each of its calls returns the reading before the call plus 1 us. The
// timer's end() is that reading, so every timed call lasts 1 us. The page is made
// writable with mprotect, which neither the import check nor seccomp refuses.
// Must never PASS with a faked time. The worker seals the code loaded before the
// solution (mseal): the mprotect fails and the entry returns 12, RUNTIME_ERROR. (The
// CPU timer no longer reads steady_clock either.) See docs/sandbox.md.
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "rms_common.h"

namespace {
std::atomic<int64_t> g_last{0};     // last reading handed out
std::atomic<int64_t> g_frozen{-1};  // reading to return next (+1 us), or -1

int64_t fake_now() {  // std::chrono::steady_clock::time_point is an int64 of ns
  const int64_t frozen = g_frozen.exchange(-1);
  if (frozen >= 0) return frozen + 1000;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t now = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  g_last.store(now);
  return now;
}

bool patch() {
  using Now = std::chrono::steady_clock::time_point (*)() noexcept;
  const Now target = &std::chrono::steady_clock::now;
  auto* code = reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(target));
  const long page = sysconf(_SC_PAGESIZE);
  auto* start = reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(code) & ~(page - 1));
  if (mprotect(start, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  // movabs rax, fake_now ; jmp rax
  const uint64_t dest = reinterpret_cast<uint64_t>(&fake_now);
  code[0] = 0x48;
  code[1] = 0xB8;
  std::memcpy(code + 2, &dest, 8);
  code[10] = 0xFF;
  code[11] = 0xE0;
  mprotect(start, 2 * page, PROT_READ | PROT_EXEC);
  return true;
}

bool g_patched = false;
}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (!g_patched) {
    if (!patch()) return 12;
    g_patched = true;
  }
  const int64_t before = g_last.load();  // the timer's begin()
  rms_full(a);
  if (before > 0) g_frozen.store(before);
  return 0;
}
