#include "harness/worker/code_seal.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace solbench::harness {
namespace {

#ifndef __NR_mseal
#define __NR_mseal 462  // the same number on every architecture (Linux 6.10)
#endif

struct Range {
  uintptr_t start, end;
};

struct Collect {
  uintptr_t page;
  std::vector<std::vector<Range>> objects;
};

int collect(dl_phdr_info* info, size_t, void* data) {
  auto* c = static_cast<Collect*>(data);
  std::vector<Range> ranges;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    const uintptr_t hi = lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && !(ph.p_flags & PF_W) && ph.p_memsz > 0) {
      ranges.push_back({lo & ~(c->page - 1), (hi + c->page - 1) & ~(c->page - 1)});
    } else if (ph.p_type == PT_GNU_RELRO) {
      // The loader made [lo, hi rounded down) read-only after relocation.
      const Range r{lo & ~(c->page - 1), hi & ~(c->page - 1)};
      if (r.end > r.start) ranges.push_back(r);
    }
  }
  c->objects.push_back(std::move(ranges));
  return 0;
}

}  // namespace

SealReport seal_loaded_code() {
  SealReport r;
  Collect c{static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), {}};
  ::dl_iterate_phdr(collect, &c);
  // Probe: a zero-length seal is a no-op that tells whether the call exists.
  if (::syscall(__NR_mseal, c.page, 0, 0) != 0 && errno == ENOSYS) {
    r.error = "mseal is not available (Linux 6.10+ on 64-bit)";
    return r;
  }
  r.available = true;
  for (const auto& ranges : c.objects) {
    bool any = false;
    for (const Range& g : ranges) {
      if (::syscall(__NR_mseal, g.start, g.end - g.start, 0) == 0) {
        ++r.ranges;
        any = true;
      } else {
        if (r.failed++ == 0) r.error = std::string("mseal refused a range: ") + std::strerror(errno);
      }
    }
    if (any) ++r.objects;
  }
  return r;
}

}  // namespace solbench::harness
