// File-system rules the kernel enforces on the worker and every process it starts
// (Landlock, Linux 5.13+): where it may write, and which programs it may execute.
//
// Landlock rules are inherited by children and threads created afterwards and
// cannot be lifted, so a Python runtime that starts toolchains (Triton's ptxas and
// launcher build, Inductor's C++ compiler) can be given process creation while
// the solution still cannot run /bin/sh, curl or anything else outside the list,
// nor change files outside its scratch folder and compile caches.
//
// Apply while single-threaded (landlock_restrict_self restricts the calling thread
// and what it starts later), after PR_SET_NO_NEW_PRIVS. Reading stays unrestricted
// (see docs/sandbox.md for why and what that leaves open).
#pragma once

#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::harness {

struct FsRules {
  // Folders (or files) below which everything may be created, written and removed:
  // the worker's scratch folder, the solution's compile caches.
  std::vector<std::string> writable;
  // Existing files below these may be opened for writing, nothing created or
  // removed: /dev (the GPU's device nodes are opened read-write, /dev/null).
  std::vector<std::string> device_files;
  // Files, or folders whose files, may be executed (and used as ELF interpreter).
  std::vector<std::string> executable;
  bool restrict_writes = true;
  bool restrict_exec = true;
};

struct FsRulesReport {
  int abi = 0;                      // Landlock ABI version in force (0: not applied)
  bool writes_restricted = false;
  bool exec_restricted = false;
  std::vector<std::string> writable;    // the rules actually added
  std::vector<std::string> executable;
  std::vector<std::string> notes;       // skipped paths, what was not applied and why
  json to_json() const;
};

// The kernel's Landlock ABI version; 0 when Landlock is unavailable or disabled.
int landlock_abi();

// Builds and enforces the rules on the calling thread (and its future children).
// Paths that do not exist are skipped with a note. Never throws; what could not be
// applied is in the report's notes.
FsRulesReport apply_fs_rules(const FsRules& rules);

}  // namespace solbench::harness
