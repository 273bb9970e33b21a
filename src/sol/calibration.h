// Measured hardware models: `solbench hw calibrate` measures this machine's
// attainable ceilings (DRAM bandwidth, tensor-core GEMM rates, FP32 FMA, SFU, the
// shortest kernel; on a CPU memory bandwidth and FMA rates) and writes them as a
// hardware model in the bundled format, under <cache>/hardware/, one file per
// device: gpu_<UUID>.json or cpu_<host>.json. T_attainable (attainable_bound) is
// the roofline on such a model plus one launch; the public score keeps T_SOL.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "sol/hardware.h"
#include "sol/roofline.h"

namespace solbench::sol {

// What one calibration measured, in the units of the model files.
struct MeasuredCeilings {
  std::string kind;          // "gpu" or "cpu"
  std::string key;           // GPU UUID ("GPU-...") or the host's name
  std::string display_name;  // "NVIDIA H100 80GB HBM3", the CPU's model name
  std::string architecture;  // "hopper", "x86_64"
  const HardwareModel* datasheet = nullptr;  // the bundled model of this chip, if any
  int units = 0;             // SMs, or CPU threads
  double clock_mhz = 0;      // maximum SM / core clock
  double l2_mb = 0;          // L2 (GPU) or last-level cache (CPU), MiB
  double memory_gb = 0;
  double dram_gbs = 0;
  std::map<std::string, double> tensor_tflops;     // measured GEMM rates by class
  std::map<std::string, double> cuda_core_tflops;  // measured FMA rates (fp32, fp64)
  double sfu_tops = 0;       // 0: not measured (a CPU counts SFU ops at its FP32 rate)
  double launch_us = 0;
  json provenance = json::object();  // date, driver, clocks, sizes, per-measurement detail
};

// The model's name (also its file stem): "gpu_<uuid>" / "cpu_<host>", lower case,
// characters other than [a-z0-9_-] replaced by '_'.
std::string calibration_name(const std::string& kind, const std::string& key);
// <cache>/hardware (settings().cache_home()), where calibrations are written.
std::filesystem::path calibration_dir();
// The model file for `ceilings` (not written yet): the bundled format with a
// "calibration" provenance object. Fields not measured (a GPU's FP64 or INT8 rate,
// its SM count) come from the datasheet model with their URLs, so `hw show` tells
// measured from copied.
json calibration_json(const MeasuredCeilings& ceilings);
// Writes the model (atomically) into `dir` and loads it back (which validates it).
HardwareModel write_calibration(const MeasuredCeilings& ceilings,
                                const std::filesystem::path& dir = calibration_dir());
// Every measured model in `dir`; a file that does not parse is skipped with a
// warning on stderr (a stale cache never stops an evaluation).
std::vector<HardwareModel> load_calibrations(const std::filesystem::path& dir = calibration_dir());
// The calibration of GPU `uuid` or of host `host`, if one was written.
std::optional<HardwareModel> find_gpu_calibration(const std::string& uuid,
                                                  const std::filesystem::path& dir = calibration_dir());
// This host's name (gethostname), the key of its CPU calibration.
std::string local_host_name();
std::optional<HardwareModel> find_cpu_calibration(const std::string& host = local_host_name(),
                                                  const std::filesystem::path& dir = calibration_dir());

// T_attainable: the roofline on the measured model `measured` plus one launch
// (measured.launch_us). Same work and bytes as T_SOL's bound `sol`.
double attainable_seconds(const Bound& sol, const HardwareModel& measured);
// The same from an analysis result (analyse_workload's JSON: its "work" and
// "bytes.dram_mb"), so no second trace or cache entry is needed; nullopt where
// the analysis has no bound.
std::optional<double> attainable_from_analysis(const json& analysis, const HardwareModel& measured);

}  // namespace solbench::sol
