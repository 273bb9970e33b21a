// What a worker's sandbox allows, decided by the parent (which knows the solution,
// the caches and the installed toolchains) and sent in WorkerPlan::sandbox:
//
//   processes   native and torch-extension solutions: none; Python-family ones may
//               start processes, but the kernel (Landlock) lets them execute only
//               the toolchains GPU runtimes use: the C compiler chain (Triton's
//               launcher, Inductor's C++), ptxas and its siblings (Triton's bundled
//               ones, the CUDA toolkit's), ldconfig. No shell, no interpreter.
//   writes      the worker's scratch folder (added by the worker, which knows it),
//               its own /dev/shm and $TMPDIR (a tmpfs of limits.tmp_bytes in its
//               mount namespace, where one can be made); existing device files.
//   caches      Triton, Inductor, the CUDA JIT and XDG caches are kept under
//               <cache>/jit/<content key>/ and lent to the worker: the parent moves
//               their entries into <scratch>/jit/ before the worker gets its plan and
//               back once it is done (rename(2), no copy). A second evaluation of the
//               same solution reuses them, no solution can plant entries another one
//               loads, and the plan names nothing of the solution (a spare worker
//               prepared ahead serves any solution of its kind). They are kept
//               within limits.jit_cache_bytes (take_back_caches).
//
// docs/sandbox.md states the policy and what it leaves open.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/json.h"
#include "harness/protocol.h"
#include "harness/toolchain.h"  // find_toolchains: what Python workers may execute

namespace solbench::harness {

// What a worker may write, in bytes: the one place these limits are set
// (docs/sandbox.md, "What a worker leaves behind"). Solution and reference workers
// alike get them through worker_sandbox_plan ("limits").
struct WorkerLimits {
  // The private tmpfs that holds the worker's $TMPDIR and /dev/shm (memory, gone
  // with the worker). $SOLBENCH_WORKER_TMP_LIMIT.
  uint64_t tmp_bytes = uint64_t{1} << 30;
  // Its compile caches, all toolchains together: checked after every workload
  // (over: the workload fails) and when they are taken back (over: none kept).
  // $SOLBENCH_JIT_CACHE_LIMIT.
  uint64_t jit_cache_bytes = uint64_t{1} << 30;
};

// The defaults, or the variables above (bytes, or a number with a K, M, G or T
// suffix, powers of 1024). Throws std::runtime_error naming the variable, its
// value and what was expected when one is not such a size.
WorkerLimits worker_limits();

// "512M" -> 536870912, "2G", "1GiB", "4096"; nullopt for anything else or 0.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// 1073741824 -> "1 GiB", 1610612736 -> "1.5 GiB", 5000 -> "4.9 KiB".
std::string byte_size_text(uint64_t bytes);

struct WorkerPolicyRequest {
  EntryKind kind = EntryKind::Python;
  Device device;  // the CPU by default
  // Content key of what runs (the solution's JSON, or the definition for the
  // reference): names the compile-cache folder.
  std::string content;
  // Root of the compile caches; empty: <default build cache>/../jit.
  std::filesystem::path jit_root;
  std::string python;  // interpreter whose packages hold Triton; empty: the configured one
};

// The WorkerPlan::sandbox object for a request: {"deny_process_creation",
// "restrict_fs", "writable", "device_files", "executable", "env", "jit": "scratch",
// "jit_cache", "limits": {"tmp_bytes", "jit_cache_bytes"}}. Creates the
// content-keyed cache folder (jit_cache). Throws as worker_limits does.
json worker_sandbox_plan(const WorkerPolicyRequest& request);

// The environment a worker sets for its runtimes before Python starts: the compile
// caches under `jit_dir` (with "jit": "scratch", <scratch>/jit), compile threads in
// process (Inductor's worker pool would run the interpreter, which is not on the list).
std::vector<std::pair<std::string, std::string>> runtime_cache_env(
    const std::filesystem::path& jit_dir);
inline constexpr const char* kScratchJitFolder = "jit";
// The folders of <scratch>/jit that runtime_cache_env names, one per toolchain
// (Triton, Inductor, the CUDA driver, XDG_CACHE_HOME): all that is ever kept.
inline constexpr const char* kCacheFolders[] = {"triton", "inductor", "cuda", "xdg"};

// The sandbox as the worker applies it: without the parent's jit_cache path.
json without_jit_cache(json sandbox);

// Lends a plan's caches (sandbox jit_cache) to the worker whose scratch folder is
// `scratch`: moves its kCacheFolders into <scratch>/jit/; take_back_caches moves
// them back. A folder whose place is taken (another worker of the same content
// holds the caches) is left where it is: that worker compiles afresh. A folder of
// the same name the worker already filled (a spare's warm-up) is moved aside to
// <scratch>/jit/<name>.before-lend, which is never taken back. Returns the folders
// moved.
//
// What is taken back (docs/sandbox.md): <scratch>/jit is first moved out of the
// worker's writable domain (beside its scratch folder), so that what is checked is
// what is kept; then only the kCacheFolders, and in them only folders (at most
// kMaxCacheDepth deep) and regular files with a single link: symbolic links, hard
// links, devices, pipes and sockets are dropped. If what is left exceeds the
// plan's limits.jit_cache_bytes (each file counted at its size rounded up to
// 4 KiB, each folder 4 KiB), nothing is kept: the next evaluation of that content
// starts with empty caches.
int lend_caches(const json& sandbox, const std::filesystem::path& scratch);
int take_back_caches(const json& sandbox, const std::filesystem::path& scratch);
inline constexpr int kMaxCacheDepth = 32;

// The parent's look at what a worker wrote, when it reports workload `o` (before
// the outcome is reported; the worker's scratch folder is still there):
//   - compile caches (all of <scratch>/jit, counted as above) over the plan's
//     limits.jit_cache_bytes fail the workload (RUNTIME_ERROR unless REWARD_HACK),
//     with a message naming the folder, its size and the limit;
//   - a log that says a write found no space ("No space left on device", ENOSPC)
//     from a worker whose sandbox report (`report`) says its $TMPDIR and /dev/shm
//     are a private tmpfs gets a line naming them and that tmpfs's size.
void check_worker_writes(const json& sandbox, const json& report,
                         const std::filesystem::path& scratch, WorkloadOutcome& o);

}  // namespace solbench::harness
