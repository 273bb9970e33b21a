// A solution's shared object loaded into the worker (dlopen) and its entry
// function (include/solbench/kernel.h). Only the worker loads one, after its
// sandbox is in place; the parent never does.
#pragma once

#include <filesystem>
#include <string>

#define SB_NO_ABI_SYMBOL
#include "solbench/kernel.h"

namespace solbench::harness {

class NativeLibrary {
 public:
  // dlopen(RTLD_NOW | RTLD_LOCAL) and dlsym(entry); checks sb_abi_version when the
  // object exports it. Throws std::runtime_error with dlerror()'s text.
  static NativeLibrary open(const std::filesystem::path& path, const std::string& entry);

  NativeLibrary() = default;
  NativeLibrary(NativeLibrary&& o) noexcept : handle_(o.handle_), fn_(o.fn_) {
    o.handle_ = nullptr;
    o.fn_ = nullptr;
  }
  NativeLibrary& operator=(NativeLibrary&& o) noexcept;
  NativeLibrary(const NativeLibrary&) = delete;  // owns one dlopen reference
  NativeLibrary& operator=(const NativeLibrary&) = delete;
  // Deliberately does not dlclose: code of the solution may still be referenced
  // (atexit handlers, thread-local destructors); the worker exits soon after.
  ~NativeLibrary() = default;

  sb_entry_fn entry() const { return fn_; }
  explicit operator bool() const { return fn_ != nullptr; }

 private:
  void* handle_ = nullptr;
  sb_entry_fn fn_ = nullptr;
};

}  // namespace solbench::harness
