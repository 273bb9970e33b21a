// The records' device fingerprint kernel (gpu/fingerprint.h) against its
// definition computed here on the host, and against the known answer that
// tests/harness/test_record.py checks record.py's torch operators with.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/device_buffer.h"
#include "harness/timing/gpu/fingerprint.h"

namespace solbench::gpu {
namespace {

uint64_t shr(uint64_t x, int n) { return static_cast<uint64_t>(static_cast<int64_t>(x) >> n); }

std::array<int64_t, 2> by_definition(const std::vector<uint8_t>& bytes) {
  uint64_t s1 = 0, s2 = 0;
  for (size_t i = 0; 4 * i < bytes.size(); ++i) {
    uint32_t word = 0;
    for (size_t b = 0; b < 4 && 4 * i + b < bytes.size(); ++b)
      word |= static_cast<uint32_t>(bytes[4 * i + b]) << (8 * b);
    const uint64_t w = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(word)));
    uint64_t k = i;
    k ^= shr(k, 30);
    k *= 0xBF58476D1CE4E5B9ull;
    k ^= shr(k, 27);
    k *= 0x94D049BB133111EBull;
    k ^= shr(k, 31);
    s1 += w * k;
    s2 += w * w * (k | 1);
  }
  return {static_cast<int64_t>(s1), static_cast<int64_t>(s2)};
}

std::array<int64_t, 2> on_device(const std::vector<uint8_t>& bytes) {
  DeviceBuffer data(bytes.size() + 16), sums(16);
  if (!bytes.empty())
    SB_CUDA_CHECK(cudaMemcpy(data.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  fingerprint(reinterpret_cast<uintptr_t>(data.get()), bytes.size(),
              reinterpret_cast<uintptr_t>(sums.get()), 0);
  std::array<int64_t, 2> got{};
  SB_CUDA_CHECK(cudaMemcpy(got.data(), sums.get(), sizeof(got), cudaMemcpyDeviceToHost));
  return got;
}

TEST(DeviceFingerprint, IsItsDefinitionAndTheKnownAnswer) {
  SB_REQUIRE_GPU();
  ASSERT_TRUE(can_fingerprint());
  std::vector<uint8_t> known(103);
  for (size_t i = 0; i < known.size(); ++i) known[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  const std::array<int64_t, 2> answer{-3804806806805524125LL, 6957446008639672006LL};
  EXPECT_EQ(by_definition(known), answer);
  EXPECT_EQ(on_device(known), answer);
  // Sizes around a word and a 16-byte vector, and one of several blocks' work.
  std::mt19937 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{15}, size_t{16}, size_t{17},
                   size_t{31}, size_t{1} << 20, (size_t{3} << 22) + 13}) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    EXPECT_EQ(on_device(b), by_definition(b)) << n << " bytes";
    if (n > 8) {  // one bit anywhere changes them
      b[n / 2] ^= 0x10;
      const auto flipped = on_device(b);
      b[n / 2] ^= 0x10;
      EXPECT_NE(flipped, on_device(b)) << n << " bytes";
    }
  }
}

}  // namespace
}  // namespace solbench::gpu
