// Seals the code the harness runs on before solution code is loaded.
//
// Native code in the worker's address space could otherwise rewrite the timer's
// code (mprotect the page writable, write a jump: tests/hacks/cpp_patch_steady_clock).
// mseal (Linux 6.10+) makes the kernel refuse, for the rest of the process's
// life, every mprotect, munmap, mremap or MAP_FIXED mmap over a sealed range. The
// worker seals every non-writable segment of every object loaded at that point
// (code, read-only data, and the RELRO part with the resolved GOT) plus the vDSO:
// the worker binary, libc, libstdc++, torch, the CUDA driver and runtime. New
// mappings (the solution's own library, JIT code of Triton or oneDNN) are not
// affected. What is still writable (heap, stacks, the GOT of objects linked
// without BIND_NOW) stays writable: sealing protects code, not data
// (docs/sandbox.md, "The harness's own memory").
#pragma once

#include <string>

namespace solbench::harness {

struct SealReport {
  bool available = false;  // the kernel has mseal
  int objects = 0;         // loaded objects with at least one sealed range
  int ranges = 0;          // ranges sealed
  int failed = 0;          // ranges the kernel refused (first reason in `error`)
  std::string error;       // why nothing was sealed, or the first refusal
};

// Seals the non-writable segments of every loaded object (dl_iterate_phdr).
SealReport seal_loaded_code();

}  // namespace solbench::harness
