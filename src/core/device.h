// Device: where an evaluation runs, parsed once from its text ("cpu", "cuda",
// "cuda:N") and passed around as a value.
//
//   Device::parse(text) / try_parse(text)   the text a user gives (--device, plans)
//   Device::cpu(), Device::cuda(n)          made in code
//   is_cpu(), is_cuda(), ordinal(), str()   str() is the text solbench has always written
//   to_json / from_json                     the same text as a JSON string
#pragma once

#include <compare>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/json.h"

namespace solbench {

// A device text that is not cpu, cuda or cuda:N.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Device {
 public:
  enum class Kind { Cpu, Cuda };

  Device() = default;  // the CPU
  static Device cpu() { return Device(); }
  static Device cuda(int ordinal) { return Device(Kind::Cuda, ordinal, false); }
  // "cpu", "cuda" (CUDA's current device, ordinal 0) or "cuda:N" (N decimal digits);
  // anything else throws DeviceError naming the text and what was expected.
  static Device parse(std::string_view text);
  // The same, nullopt instead of the error.
  static std::optional<Device> try_parse(std::string_view text);

  Kind kind() const { return kind_; }
  bool is_cpu() const { return kind_ == Kind::Cpu; }
  bool is_cuda() const { return kind_ == Kind::Cuda; }
  // The CUDA ordinal ("cuda" is 0); -1 for the CPU.
  int ordinal() const { return is_cuda() ? ordinal_ : -1; }
  // "cpu", "cuda:N"; "cuda" where it was written so (kept: it reaches torch and the traces).
  std::string str() const;

  // Equal when the texts are equal; ordered by kind, then ordinal.
  friend bool operator==(const Device&, const Device&) = default;
  friend std::strong_ordering operator<=>(const Device&, const Device&) = default;

 private:
  Device(Kind kind, int ordinal, bool bare) : kind_(kind), ordinal_(ordinal), bare_(bare) {}
  Kind kind_ = Kind::Cpu;
  int ordinal_ = 0;
  bool bare_ = false;  // "cuda" without ":N"
};

void to_json(json& j, const Device& d);
void from_json(const json& j, Device& d);  // throws DeviceError for a text parse refuses

}  // namespace solbench
