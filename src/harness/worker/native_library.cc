#include "harness/worker/native_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace solbench::harness {

NativeLibrary& NativeLibrary::operator=(NativeLibrary&& o) noexcept {
  handle_ = o.handle_;
  fn_ = o.fn_;
  o.handle_ = nullptr;
  o.fn_ = nullptr;
  return *this;
}

NativeLibrary NativeLibrary::open(const std::filesystem::path& path, const std::string& entry) {
  ::dlerror();
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw std::runtime_error("cannot load " + path.string() + ": " + (e ? e : "dlopen failed"));
  }
  if (const void* abi = ::dlsym(h, "sb_abi_version")) {
    const int32_t v = *static_cast<const int32_t*>(abi);
    if (v != SB_ABI_VERSION) {
      ::dlclose(h);
      throw std::runtime_error("the solution was built against kernel ABI version " +
                               std::to_string(v) + "; this solbench uses " +
                               std::to_string(SB_ABI_VERSION));
    }
  }
  ::dlerror();
  void* sym = ::dlsym(h, entry.c_str());
  if (!sym) {
    const char* e = ::dlerror();
    const std::string why = e ? std::string(" (") + e + ")" : std::string();
    ::dlclose(h);
    throw std::runtime_error("entry function " + entry + " not found in the solution" + why);
  }
  NativeLibrary lib;
  lib.handle_ = h;
  lib.fn_ = reinterpret_cast<sb_entry_fn>(sym);
  return lib;
}

}  // namespace solbench::harness
