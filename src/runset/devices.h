// The slots a run evaluates on, one device string per slot: "cpu", "cuda:N".
//
//   --device cpu | cuda:N   one slot on that device (the default: cpu)
//   --gpus 0,2              one slot per listed GPU: cuda:0, cuda:2
//   --gpus all              one slot per visible GPU: CUDA_VISIBLE_DEVICES when
//                           set (its entries, renumbered 0..k-1 as CUDA does),
//                           else the GPUs `nvidia-smi -L` lists
//   --cpu-slots N (hidden)  N slots all named "cpu" (tests of the scheduler)
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace solbench::runset {

// "0,1,3" -> cuda:0, cuda:1, cuda:3. Throws InputError for an empty list, an entry
// that is not a non-negative integer, or a repeated GPU.
std::vector<std::string> parse_gpu_list(const std::string& list);

// The ordinals CUDA will show for a CUDA_VISIBLE_DEVICES value: one per
// comma-separated entry up to the first invalid one (as CUDA reads it); nullopt
// when the variable is unset (`value` null).
std::optional<std::vector<std::string>> gpus_from_visible_devices(const char* value);
// One slot per "GPU N: ..." line of `nvidia-smi -L`.
std::vector<std::string> gpus_from_nvidia_smi(const std::string& output);

// --gpus all: CUDA_VISIBLE_DEVICES, else nvidia-smi -L. Throws InputError when no
// GPU is found (saying where it looked).
std::vector<std::string> discover_gpus();

// The run's slots from the three options (at most one of gpus / cpu_slots given;
// the CLI checks that). Throws InputError for a device that is not cpu or cuda:N.
std::vector<std::string> resolve_slots(const std::string& device, const std::string& gpus,
                                       int cpu_slots);

// --jobs-per-gpu N: every GPU slot N times (cuda:0, cuda:0, ..., cuda:1, ...), so that
// N evaluations share each GPU; their timed loops take turns through the GPU's
// timing lock (harness/timing/device_lock.h). CPU slots are returned unchanged: a
// CPU evaluation times on the cores the others would use.
std::vector<std::string> repeat_gpu_slots(const std::vector<std::string>& slots, int jobs_per_gpu);

}  // namespace solbench::runset
