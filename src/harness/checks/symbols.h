// Imported symbols of a built shared object, and the policy that refuses the ones
// a kernel has no business calling (threads, processes, network, dynamic loading,
// timer and profiler tampering). A first line of defence and a clear report; the
// worker sandbox (sandbox.h) is what actually enforces.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::harness {

class ElfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ElfSymbols {
  std::vector<std::string> imported;  // undefined dynamic symbols (sorted, unique)
  std::vector<std::string> exported;  // defined global/weak dynamic symbols (sorted, unique)
  std::vector<std::string> needed;    // DT_NEEDED libraries in order
};

// Parses an ELF64 little-endian shared object's dynamic symbol table, from both the
// section headers (.dynsym/.dynstr) and the PT_DYNAMIC segment (what the loader
// uses; works on objects whose section headers were stripped), every offset
// bounds-checked. Throws ElfError on a malformed or non-ELF64 file.
ElfSymbols read_elf_symbols(const std::filesystem::path& so_path);

enum class RuleAction { Deny, Warn };

struct ImportRule {
  std::string pattern;  // exact name, or a prefix when it ends with '*'
  std::string reason;   // e.g. "creates threads"
  RuleAction action = RuleAction::Deny;
  bool matches(const std::string& symbol) const;
};

struct ImportViolation {
  std::string symbol;     // as in the symbol table (mangled)
  std::string demangled;  // readable name for C++ symbols, else == symbol
  std::string reason;
  RuleAction action = RuleAction::Deny;
  std::string str() const;  // "pthread_create: creates threads"
};

struct ImportPolicy {
  std::vector<ImportRule> rules;
  // DT_NEEDED libraries allowed (prefix of the file name, e.g. "libcudart.so");
  // anything else is a Deny violation ("links an unexpected library").
  std::vector<std::string> allowed_libraries;
  bool check_libraries = true;

  // The default policy (see docs/sandbox.md for the list and the reasons).
  static ImportPolicy defaults();
};

// Violations (Deny and Warn) of `so_path`'s imports; an unreadable file yields a
// single Deny violation with symbol "<elf>" and the parse error as reason.
std::vector<ImportViolation> check_imports(const std::filesystem::path& so_path,
                                           const ImportPolicy& policy = ImportPolicy::defaults());
std::vector<ImportViolation> check_imports(const ElfSymbols& syms, const ImportPolicy& policy);

// True when any violation is a Deny.
bool has_denied(const std::vector<ImportViolation>& v);
json to_json(const std::vector<ImportViolation>& v);

}  // namespace solbench::harness
