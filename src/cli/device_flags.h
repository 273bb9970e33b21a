// Checks shared by the subcommands that take --device and --timer (eval, baseline).
#pragma once

#include <cstdio>
#include <string>

#include "core/device.h"

namespace solbench::cli {

// 0 when `device` is cpu or cuda:N and `timer` fits it; else prints why and returns
// the usage exit code 2.
inline int check_device_and_timer(const std::string& device, const std::string& timer) {
  const auto d = Device::try_parse(device);
  if (!d) {
    std::fprintf(stderr, "error: --device: \"%s\" is not cpu or cuda:N\n", device.c_str());
    return 2;
  }
  if (timer != "auto" && d->is_cpu()) {
    std::fprintf(stderr, "error: --timer %s: GPU timers apply to --device cuda:N\n", timer.c_str());
    return 2;
  }
  return 0;
}

}  // namespace solbench::cli
