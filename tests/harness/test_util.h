// Small helpers shared by the harness tests.
#pragma once

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/process.h"

namespace solbench::harness {

// RunOptions with a timeout (and a log bound), without designated initialisers
// (which warn about the members left out).
inline RunOptions with_timeout(std::chrono::duration<double> t, size_t log_limit = 64 << 10) {
  RunOptions o;
  o.timeout = t;
  o.log_limit_bytes = log_limit;
  return o;
}

// Sets (or unsets, with nullptr) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace solbench::harness
