#include "harness/checks/symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

#include "core/text.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxElfBytes = 4ull << 30;  // refuse absurd files

// Bounds-checked view of the file's bytes.
class Image {
 public:
  explicit Image(std::string bytes) : b_(std::move(bytes)) {}
  uint64_t size() const { return b_.size(); }

  template <class T>
  T get(uint64_t off, const char* what) const {
    if (off > b_.size() || b_.size() - off < sizeof(T))
      throw ElfError(std::string("truncated ELF: ") + what + " at offset " + std::to_string(off));
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));
    return v;
  }
  // NUL-terminated string at `off` within [base, base + limit).
  std::string str(uint64_t base, uint64_t limit, uint64_t off) const {
    if (base > b_.size() || limit > b_.size() - base || off >= limit)
      throw ElfError("ELF string offset out of bounds");
    const char* p = b_.data() + base + off;
    const char* end = b_.data() + base + limit;
    const char* nul = static_cast<const char*>(std::memchr(p, '\0', static_cast<size_t>(end - p)));
    if (!nul) throw ElfError("unterminated ELF string");
    return std::string(p, nul);
  }
  bool range_ok(uint64_t off, uint64_t len) const {
    return off <= b_.size() && len <= b_.size() - off;
  }

 private:
  std::string b_;
};

struct Collected {
  std::set<std::string> imported, exported;
  std::vector<std::string> needed;
};

void add_symbol(const Elf64_Sym& s, const std::string& name, Collected& out) {
  if (name.empty()) return;
  const unsigned bind = ELF64_ST_BIND(s.st_info);
  if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return;
  if (s.st_shndx == SHN_UNDEF) {
    out.imported.insert(name);
  } else {
    const unsigned vis = ELF64_ST_VISIBILITY(s.st_other);
    if (vis == STV_DEFAULT || vis == STV_PROTECTED) out.exported.insert(name);
  }
}

// From the section headers (.dynsym and the string table it links to).
void read_sections(const Image& img, const Elf64_Ehdr& eh, Collected& out) {
  if (eh.e_shoff == 0) return;
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) throw ElfError("unexpected section header size");
  uint64_t shnum = eh.e_shnum;
  if (shnum == 0) shnum = img.get<Elf64_Shdr>(eh.e_shoff, "section header 0").sh_size;
  if (shnum > 1u << 20) throw ElfError("too many sections");
  if (!img.range_ok(eh.e_shoff, shnum * sizeof(Elf64_Shdr))) throw ElfError("section headers out of bounds");
  auto shdr = [&](uint64_t i) {
    return img.get<Elf64_Shdr>(eh.e_shoff + i * sizeof(Elf64_Shdr), "section header");
  };
  for (uint64_t i = 0; i < shnum; ++i) {
    const Elf64_Shdr sym = shdr(i);
    if (sym.sh_type != SHT_DYNSYM) continue;
    if (sym.sh_entsize != sizeof(Elf64_Sym)) throw ElfError(".dynsym has an unexpected entry size");
    if (sym.sh_link >= shnum) throw ElfError(".dynsym links to a missing string table");
    const Elf64_Shdr strs = shdr(sym.sh_link);
    if (!img.range_ok(sym.sh_offset, sym.sh_size) || !img.range_ok(strs.sh_offset, strs.sh_size))
      throw ElfError(".dynsym or .dynstr out of bounds");
    const uint64_t count = sym.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 1; k < count; ++k) {
      const auto s = img.get<Elf64_Sym>(sym.sh_offset + k * sizeof(Elf64_Sym), "symbol");
      add_symbol(s, img.str(strs.sh_offset, strs.sh_size, s.st_name), out);
    }
  }
}

// From PT_DYNAMIC, as the dynamic loader sees the object.
void read_dynamic(const Image& img, const Elf64_Ehdr& eh, Collected& out) {
  if (eh.e_phoff == 0 || eh.e_phnum == 0) return;
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) throw ElfError("unexpected program header size");
  if (!img.range_ok(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
    throw ElfError("program headers out of bounds");
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  for (unsigned i = 0; i < eh.e_phnum; ++i)
    ph[i] = img.get<Elf64_Phdr>(eh.e_phoff + i * sizeof(Elf64_Phdr), "program header");

  // Virtual address → file offset through the PT_LOAD segments.
  auto to_offset = [&](uint64_t vaddr) -> std::optional<uint64_t> {
    for (const auto& p : ph) {
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz)
        return p.p_offset + (vaddr - p.p_vaddr);
    }
    return std::nullopt;
  };

  const Elf64_Phdr* dyn = nullptr;
  for (const auto& p : ph)
    if (p.p_type == PT_DYNAMIC) dyn = &p;
  if (!dyn) return;
  if (!img.range_ok(dyn->p_offset, dyn->p_filesz)) throw ElfError("PT_DYNAMIC out of bounds");

  uint64_t symtab = 0, strtab = 0, strsz = 0, syment = sizeof(Elf64_Sym), hash = 0, gnu_hash = 0;
  std::vector<uint64_t> needed_offsets;
  for (uint64_t off = dyn->p_offset; off + sizeof(Elf64_Dyn) <= dyn->p_offset + dyn->p_filesz;
       off += sizeof(Elf64_Dyn)) {
    const auto d = img.get<Elf64_Dyn>(off, "dynamic entry");
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_SYMTAB: symtab = d.d_un.d_ptr; break;
      case DT_STRTAB: strtab = d.d_un.d_ptr; break;
      case DT_STRSZ: strsz = d.d_un.d_val; break;
      case DT_SYMENT: syment = d.d_un.d_val; break;
      case DT_HASH: hash = d.d_un.d_ptr; break;
      case DT_GNU_HASH: gnu_hash = d.d_un.d_ptr; break;
      case DT_NEEDED: needed_offsets.push_back(d.d_un.d_val); break;
      default: break;
    }
  }
  if (!strtab || !symtab) {
    if (!needed_offsets.empty()) throw ElfError("PT_DYNAMIC without DT_STRTAB/DT_SYMTAB");
    return;
  }
  if (syment != sizeof(Elf64_Sym)) throw ElfError("DT_SYMENT has an unexpected size");
  const auto str_off = to_offset(strtab);
  const auto sym_off = to_offset(symtab);
  if (!str_off || !sym_off || !img.range_ok(*str_off, strsz))
    throw ElfError("dynamic string or symbol table outside the file");
  for (uint64_t n : needed_offsets) out.needed.push_back(img.str(*str_off, strsz, n));

  // Number of dynamic symbols: DT_HASH's nchain, else walk DT_GNU_HASH's chains.
  uint64_t count = 0;
  if (hash) {
    auto h = to_offset(hash);
    if (!h) throw ElfError("DT_HASH outside the file");
    count = img.get<uint32_t>(*h + 4, "DT_HASH nchain");
  } else if (gnu_hash) {
    auto g = to_offset(gnu_hash);
    if (!g) throw ElfError("DT_GNU_HASH outside the file");
    const uint32_t nbuckets = img.get<uint32_t>(*g, "gnu hash");
    const uint32_t symoffset = img.get<uint32_t>(*g + 4, "gnu hash");
    const uint32_t bloom_size = img.get<uint32_t>(*g + 8, "gnu hash");
    const uint64_t buckets = *g + 16 + uint64_t(bloom_size) * 8;
    const uint64_t chains = buckets + uint64_t(nbuckets) * 4;
    if (!img.range_ok(buckets, uint64_t(nbuckets) * 4)) throw ElfError("DT_GNU_HASH out of bounds");
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; ++b) last = std::max(last, img.get<uint32_t>(buckets + 4ull * b, "bucket"));
    if (last < symoffset) {
      count = symoffset;
    } else {
      uint64_t i = last;
      for (;; ++i) {
        if (i - symoffset > (1u << 24)) throw ElfError("DT_GNU_HASH chain too long");
        if (img.get<uint32_t>(chains + 4 * (i - symoffset), "chain") & 1u) break;
      }
      count = i + 1;
    }
  } else if (strtab > symtab) {
    count = (strtab - symtab) / sizeof(Elf64_Sym);  // the usual layout: .dynstr after .dynsym
  } else {
    throw ElfError("cannot size the dynamic symbol table (no DT_HASH or DT_GNU_HASH)");
  }
  if (count > (1u << 24) || !img.range_ok(*sym_off, count * sizeof(Elf64_Sym)))
    throw ElfError("dynamic symbol table out of bounds");
  for (uint64_t k = 1; k < count; ++k) {
    const auto s = img.get<Elf64_Sym>(*sym_off + k * sizeof(Elf64_Sym), "symbol");
    add_symbol(s, img.str(*str_off, strsz, s.st_name), out);
  }
}

}  // namespace

ElfSymbols read_elf_symbols(const fs::path& so_path) {
  std::ifstream in(so_path, std::ios::binary);
  if (!in) throw ElfError("cannot open " + so_path.string());
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size > kMaxElfBytes) throw ElfError(so_path.string() + " is too large");
  in.seekg(0);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw ElfError("cannot read " + so_path.string());
  Image img(std::move(bytes));

  const auto eh = img.get<Elf64_Ehdr>(0, "ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) throw ElfError(so_path.string() + " is not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) throw ElfError(so_path.string() + " is not ELF64");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) throw ElfError(so_path.string() + " is not little-endian");
  if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC)
    throw ElfError(so_path.string() + " is not a shared object or executable");

  Collected c;
  read_sections(img, eh, c);
  read_dynamic(img, eh, c);
  ElfSymbols out;
  out.imported.assign(c.imported.begin(), c.imported.end());
  out.exported.assign(c.exported.begin(), c.exported.end());
  out.needed = std::move(c.needed);
  return out;
}

bool ImportRule::matches(const std::string& symbol) const {
  if (!pattern.empty() && pattern.back() == '*')
    return symbol.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0 &&
           symbol.size() >= pattern.size() - 1;
  return symbol == pattern;
}

std::string ImportViolation::str() const {
  std::string s = demangled;
  if (demangled != symbol) s += " (" + symbol + ")";
  return s + ": " + reason + (action == RuleAction::Warn ? " [warning]" : "");
}

ImportPolicy ImportPolicy::defaults() {
  ImportPolicy p;
  auto deny = [&](std::initializer_list<const char*> names, const char* reason) {
    for (const char* n : names) p.rules.push_back({n, reason, RuleAction::Deny});
  };
  auto warn = [&](std::initializer_list<const char*> names, const char* reason) {
    for (const char* n : names) p.rules.push_back({n, reason, RuleAction::Warn});
  };
  deny({"pthread_create", "thrd_create", "clone", "clone3",
        "_ZNSt6thread15_M_start_thread*", "GOMP_*", "__kmpc_*"},
       "creates threads");
  deny({"fork", "vfork", "_Fork", "__fork", "execve", "execv", "execvp", "execvpe", "execl",
        "execlp", "execle", "fexecve", "execveat", "system", "popen", "posix_spawn", "posix_spawnp",
        "daemon", "wordexp"},
       "starts processes");
  deny({"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo",
        "gethostbyname", "gethostbyname2", "gethostbyname_r", "gethostbyaddr"},
       "uses the network");
  deny({"dlopen", "dlmopen", "dlsym", "dlvsym", "__libc_dlopen_mode", "__libc_dlsym",
        "_dl_sym"},
       "loads code or resolves symbols at run time");
  deny({"ptrace", "process_vm_readv", "process_vm_writev"}, "accesses other processes' memory");
  deny({"syscall"}, "makes raw system calls (bypasses this check)");
  deny({"signal", "sigaction", "__sysv_signal", "sysv_signal", "bsd_signal", "sigset",
        "kill", "tgkill", "pthread_kill", "sigqueue", "setitimer", "alarm", "ualarm",
        "timer_create"},
       "installs signal handlers, timers or signals other threads (hooking)");
  deny({"clock_settime", "settimeofday", "adjtime", "adjtimex", "clock_adjtime", "stime"},
       "changes the system clock");
  deny({"prctl", "unshare", "setns", "mount", "umount", "umount2", "chroot"},
       "changes process or namespace state");
  deny({"cupti*", "cuProfilerStart", "cuProfilerStop", "cudaProfilerStart", "cudaProfilerStop"},
       "tampers with profiling (the timer)");
  deny({"cudaDeviceReset", "cuDevicePrimaryCtxReset*", "cuDevicePrimaryCtxRelease*",
        "cuCtxDestroy*", "cuDevicePrimaryCtxSetFlags*"},
       "resets or destroys the harness's CUDA context");
  deny({"nvml*"}, "controls the device (clocks, power)");
  warn({"cudaGetDriverEntryPoint*", "cuGetProcAddress*"},
       "looks up driver functions by name at run time (bypasses this check)");
  warn({"cudaLaunchHostFunc", "cuLaunchHostFunc", "cudaStreamAddCallback", "cuStreamAddCallback"},
       "runs host code on a driver thread");
  warn({"dl_iterate_phdr", "dladdr", "dladdr1", "dlinfo"}, "inspects loaded objects");
  warn({"cuCtxCreate*", "cudaSetDeviceFlags", "cuCtxSetCurrent", "cuCtxPushCurrent*"},
       "switches CUDA contexts");

  p.allowed_libraries = {
      "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "libpthread.so", "libdl.so",
      "librt.so", "libatomic.so", "ld-linux", "libcuda.so", "libcudart.so", "libcublas.so",
      "libcublasLt.so", "libcudnn", "libcufft.so", "libcurand.so", "libcusparse.so",
      "libcusolver.so", "libnvrtc.so", "libnvrtc-builtins", "libnvToolsExt.so", "libnvtx",
      "libnvJitLink.so", "libc10.so", "libc10_cuda.so", "libtorch.so", "libtorch_cpu.so",
      "libtorch_cuda.so", "libtorch_python.so", "libshm.so",
  };
  return p;
}

std::vector<ImportViolation> check_imports(const ElfSymbols& syms, const ImportPolicy& policy) {
  std::vector<ImportViolation> out;
  for (const auto& name : syms.imported) {
    for (const auto& rule : policy.rules) {
      if (rule.matches(name)) {
        out.push_back({name, demangle(name), rule.reason, rule.action});
        break;
      }
    }
  }
  if (policy.check_libraries) {
    for (const auto& lib : syms.needed) {
      const std::string base = fs::path(lib).filename().string();
      bool ok = std::any_of(policy.allowed_libraries.begin(), policy.allowed_libraries.end(),
                            [&](const std::string& prefix) { return base.rfind(prefix, 0) == 0; });
      if (!ok) out.push_back({lib, lib, "links an unexpected library", RuleAction::Deny});
    }
  }
  return out;
}

std::vector<ImportViolation> check_imports(const fs::path& so_path, const ImportPolicy& policy) {
  try {
    return check_imports(read_elf_symbols(so_path), policy);
  } catch (const ElfError& e) {
    return {{"<elf>", "<elf>", std::string("cannot read the shared object: ") + e.what(),
             RuleAction::Deny}};
  }
}

bool has_denied(const std::vector<ImportViolation>& v) {
  return std::any_of(v.begin(), v.end(),
                     [](const ImportViolation& x) { return x.action == RuleAction::Deny; });
}

json to_json(const std::vector<ImportViolation>& v) {
  json a = json::array();
  for (const auto& x : v) {
    a.push_back({{"symbol", x.symbol},
                 {"demangled", x.demangled},
                 {"reason", x.reason},
                 {"action", x.action == RuleAction::Deny ? "deny" : "warn"}});
  }
  return a;
}

}  // namespace solbench::harness
