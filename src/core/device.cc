#include "core/device.h"

namespace solbench {

std::optional<Device> Device::try_parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return Device(Kind::Cuda, 0, true);
  constexpr std::string_view prefix = "cuda:";
  if (text.substr(0, prefix.size()) != prefix || text.size() == prefix.size()) return std::nullopt;
  int n = 0;
  for (const char c : text.substr(prefix.size())) {
    if (c < '0' || c > '9' || n > 1000) return std::nullopt;  // the bound keeps n an int
    n = n * 10 + (c - '0');
  }
  return cuda(n);
}

Device Device::parse(std::string_view text) {
  if (auto d = try_parse(text)) return *d;
  throw DeviceError("\"" + std::string(text) + "\" is not a device (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return bare_ ? "cuda" : "cuda:" + std::to_string(ordinal_);
}

void to_json(json& j, const Device& d) { j = d.str(); }

void from_json(const json& j, Device& d) {
  if (!j.is_string()) throw DeviceError("a device is a string (cpu or cuda:N), got " + j.dump());
  d = Device::parse(j.get<std::string>());
}

}  // namespace solbench
