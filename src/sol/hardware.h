// Hardware models: the peak rates of one GPU, read from data/hardware/*.json.
// Every number in those files carries a source (a key of the file's "sources"
// map, i.e. a URL); the loader rejects a number without one. See docs/sol.md.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::sol {

// Operand classes of the tensor cores (and of the CUDA-core pipes). The order
// is also the fallback order used when a chip lacks a class (see tensor_rate).
enum class MathClass { FP64, TF32, FP32, FP16, BF16, FP8, INT8, FP4, Count };
const char* math_class_name(MathClass c);  // "fp64", "tf32", ...

struct HardwareModel {
  std::string name;          // file stem, e.g. "h100_sxm"
  std::string display_name;  // "NVIDIA H100 SXM5 80GB"
  std::string architecture;
  std::vector<std::string> aliases;  // CUDA/NVML device names and short names
  int sm_count = 0;
  double boost_clock_mhz = 0;
  std::map<std::string, double> tensor_tflops;     // dense, by class name
  std::map<std::string, double> cuda_core_tflops;  // fp64, fp32, fp16, bf16
  double sfu_ops_per_clock_per_sm = 0;
  double dram_bandwidth_gbs = 0;
  double l2_mb = 0;
  double memory_gb = 0;
  std::map<std::string, std::string> field_sources;  // "tensor_tflops.bf16" -> URL
  std::filesystem::path file;
  std::string content;  // the file's text: part of cache keys
  // A measured model (`solbench hw calibrate`, sol/calibration.h) carries its
  // provenance here (date, device, UUID, driver, clocks seen); null for a
  // datasheet model. Its numbers' sources may then be "measured:..." instead of URLs.
  json calibration;
  std::string datasheet;  // measured: the bundled model of the same chip ("" if none)
  double launch_us = 0;   // measured: the shortest kernel (empty kernel, GPU time); 0 if none
  bool measured() const { return !calibration.is_null(); }

  // Peak rates in operations per second. A class the chip lacks falls back to
  // the next wider one it has (FP4 -> FP8 -> FP16; INT8 -> FP16; FP8 -> FP16);
  // FP64 without FP64 tensor cores uses the CUDA-core FP64 rate. 0 if none.
  double tensor_flops(MathClass c) const;   // FLOP/s (2 per MAC)
  double cuda_core_flops(MathClass c) const;  // FLOP/s for fp64/fp32/fp16/bf16
  double sfu_ops() const { return sfu_ops_per_clock_per_sm * sm_count * boost_clock_mhz * 1e6; }
  double dram_bytes() const { return dram_bandwidth_gbs * 1e9; }
};

// Parses one model; errors name the file and the JSON field (InputError).
HardwareModel parse_hardware(const json& j, const std::filesystem::path& file);
HardwareModel load_hardware(const std::filesystem::path& file);

// $SOLBENCH_HARDWARE_DIR, else <source>/data/hardware, else <exe>/../share/solbench/hardware.
std::filesystem::path hardware_dir();
// Every model in `dir`, sorted by name.
std::vector<HardwareModel> load_all_hardware(const std::filesystem::path& dir = hardware_dir());

// Case-insensitive match on the name, the display name or an alias; also
// accepts "H100-SXM"-style spellings (separators ignored). nullopt if none.
std::optional<HardwareModel> find_hardware(const std::vector<HardwareModel>& all,
                                           const std::string& name);

// The local GPU's name via NVML (dlopen'ed at run time; no link dependency).
// nullopt when NVML or a GPU is absent.
std::optional<std::string> detect_gpu_name();

// A hardware model that cannot be chosen: an unknown name, or none given and no
// model for the local GPU. Naming a known model fixes it, so every command
// reports it as a usage error (exit 2) before any work.
class HardwareChoiceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The model names close to `name` (a small edit distance to a model's name,
// display name or an alias, or the start of its name), closest first, at most
// three: the "did you mean" candidates.
std::vector<std::string> similar_hardware_names(const std::vector<HardwareModel>& all,
                                                const std::string& name);

// The one message for an unknown model, where `where` is how the user gave the
// name ("--arch", "hw show"):
//   --arch h300: unknown hardware model; did you mean h100_sxm or h200_sxm? known: a100_sxm_80gb, ...
std::string unknown_hardware_message(const std::vector<HardwareModel>& all,
                                     const std::string& name, const std::string& where);

// The model named `name` when given, else the detected GPU's (`detected_gpu`:
// detect_gpu_name()'s answer, which a caller that needs it too asks for once).
// Throws HardwareChoiceError; its messages name `where`.
HardwareModel select_hardware(const std::string& name, const std::optional<std::string>& detected_gpu,
                              const std::string& where = "--arch");
// The same for --arch NAME, asking NVML only when no name is given.
HardwareModel select_hardware(const std::string& arch_override);

}  // namespace solbench::sol
