// Slots: --gpus lists, CUDA_VISIBLE_DEVICES and nvidia-smi -L parsing, --device.
#include <gtest/gtest.h>

#include "core/diagnostics.h"
#include "runset/devices.h"
#include "runset_test_util.h"

namespace solbench::runset {
namespace {

using V = std::vector<std::string>;

TEST(Devices, GpuList) {
  EXPECT_EQ(parse_gpu_list("0,1"), (V{"cuda:0", "cuda:1"}));
  EXPECT_EQ(parse_gpu_list(" 2, 0 "), (V{"cuda:2", "cuda:0"}));
  for (const char* bad : {"", "a", "0,0", "1,-1", "0,,1"})
    EXPECT_THROW(parse_gpu_list(bad), InputError) << bad;
  try {
    parse_gpu_list("0,x");
  } catch (const InputError& e) {
    EXPECT_HAS(e.what(), "\"x\" is not a GPU number");
  }
}

TEST(Devices, VisibleDevicesAreRenumbered) {
  EXPECT_FALSE(gpus_from_visible_devices(nullptr));
  EXPECT_EQ(*gpus_from_visible_devices("3,5"), (V{"cuda:0", "cuda:1"}));
  EXPECT_EQ(*gpus_from_visible_devices("GPU-abc,MIG-def"), (V{"cuda:0", "cuda:1"}));
  EXPECT_EQ(*gpus_from_visible_devices("1,-1,2"), (V{"cuda:0"}));  // CUDA stops at -1
  EXPECT_TRUE(gpus_from_visible_devices("")->empty());
}

TEST(Devices, NvidiaSmiList) {
  const std::string out =
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
      "  MIG 1g.10gb Device 0: (UUID: MIG-2)\n"
      "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-3)\n";
  EXPECT_EQ(gpus_from_nvidia_smi(out), (V{"cuda:0", "cuda:1"}));
  EXPECT_TRUE(gpus_from_nvidia_smi("No devices found.\n").empty());
}

TEST(Devices, Slots) {
  EXPECT_EQ(resolve_slots("cpu", "", 0), (V{"cpu"}));
  EXPECT_EQ(resolve_slots("cuda:1", "", 0), (V{"cuda:1"}));
  EXPECT_EQ(resolve_slots("cpu", "", 3), (V{"cpu", "cpu", "cpu"}));
  EXPECT_EQ(resolve_slots("cpu", "0,1", 0), (V{"cuda:0", "cuda:1"}));
  EXPECT_THROW(resolve_slots("gpu0", "", 0), InputError);
}

TEST(Devices, JobsPerGpuRepeatOnlyGpuSlots) {
  EXPECT_EQ(repeat_gpu_slots({"cuda:0", "cuda:2"}, 2), (V{"cuda:0", "cuda:0", "cuda:2", "cuda:2"}));
  EXPECT_EQ(repeat_gpu_slots({"cuda:0"}, 1), (V{"cuda:0"}));
  EXPECT_EQ(repeat_gpu_slots({"cpu"}, 3), (V{"cpu"}));  // CPU timing has no lock to share
}

}  // namespace
}  // namespace solbench::runset
