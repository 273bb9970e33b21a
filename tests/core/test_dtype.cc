#include "core/dtype.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

namespace solbench {
namespace {

struct Expected {
  DType id;
  const char* name;
  const char* safetensors;
  int bits;
  int values_per_element;
  bool is_float;
  bool is_integer;
  int kernel_code;
  uint64_t bytes_for_3;  // storage_bytes(id, 3)
};

// The table as the problem format and include/solbench/kernel.h define it.
const Expected kExpected[] = {
    {DType::Float64, "float64", "F64", 64, 1, true, false, 0, 24},
    {DType::Float32, "float32", "F32", 32, 1, true, false, 1, 12},
    {DType::Float16, "float16", "F16", 16, 1, true, false, 2, 6},
    {DType::BFloat16, "bfloat16", "BF16", 16, 1, true, false, 3, 6},
    {DType::Float8E4M3FN, "float8_e4m3fn", "F8_E4M3", 8, 1, true, false, 4, 3},
    {DType::Float8E5M2, "float8_e5m2", "F8_E5M2", 8, 1, true, false, 5, 3},
    {DType::Float4E2M1, "float4_e2m1", "F4", 4, 1, true, false, 6, 2},
    {DType::Float4E2M1FNx2, "float4_e2m1fn_x2", "F4", 8, 2, true, false, 7, 3},
    {DType::Int64, "int64", "I64", 64, 1, false, true, 8, 24},
    {DType::Int32, "int32", "I32", 32, 1, false, true, 9, 12},
    {DType::Int16, "int16", "I16", 16, 1, false, true, 10, 6},
    {DType::Int8, "int8", "I8", 8, 1, false, true, 11, 3},
    {DType::UInt8, "uint8", "U8", 8, 1, false, true, 12, 3},
    {DType::Bool, "bool", "BOOL", 8, 1, false, false, 13, 3},
};

TEST(DType, TableMatchesFormat) {
  ASSERT_EQ(all_dtypes().size(), std::size(kExpected));
  for (const auto& e : kExpected) {
    SCOPED_TRACE(e.name);
    const DTypeInfo& info = dtype_info(e.id);
    EXPECT_EQ(info.id, e.id);
    EXPECT_EQ(info.name, e.name);
    EXPECT_EQ(dtype_name(e.id), e.name);
    EXPECT_EQ(info.safetensors, e.safetensors);
    EXPECT_EQ(info.storage_bits, e.bits);
    EXPECT_EQ(info.values_per_element, e.values_per_element);
    EXPECT_EQ(info.is_float, e.is_float);
    EXPECT_EQ(info.is_integer, e.is_integer);
    EXPECT_EQ(info.kernel_code, e.kernel_code);
    EXPECT_EQ(storage_bytes(e.id, 3), e.bytes_for_3);
    EXPECT_EQ(storage_bytes(e.id, 0), 0u);
    EXPECT_EQ(storage_bytes(e.id, 1000), 1000u * static_cast<uint64_t>(e.bits) / 8);
  }
}

TEST(DType, KernelCodesAreDistinct) {
  std::set<int> codes;
  for (const auto& d : all_dtypes()) codes.insert(d.kernel_code);
  EXPECT_EQ(codes.size(), all_dtypes().size());
}

TEST(DType, SubByteRoundsUp) {
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 1), 1u);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 2), 1u);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 3), 2u);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 4), 2u);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 17), 9u);
  // The packed type's shape counts bytes.
  EXPECT_EQ(storage_bytes(DType::Float4E2M1FNx2, 3), 3u);
}

TEST(DType, StorageBytesSaturatesInsteadOfWrapping) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(storage_bytes(DType::Float64, kMax / 4), kMax);
  EXPECT_EQ(storage_bytes(DType::UInt8, kMax), kMax);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, kMax), kMax / 2 + 1);
  EXPECT_EQ(storage_bytes(DType::Float64, kMax / 8), (kMax / 8) * 8);
}

TEST(DType, ParseNames) {
  for (const auto& d : all_dtypes()) {
    ASSERT_TRUE(parse_dtype(d.name).has_value()) << d.name;
    EXPECT_EQ(*parse_dtype(d.name), d.id);
  }
  EXPECT_FALSE(parse_dtype("float").has_value());
  EXPECT_FALSE(parse_dtype("Float32").has_value());  // names are case-sensitive
  EXPECT_FALSE(parse_dtype("torch.float32").has_value());
  EXPECT_FALSE(parse_dtype("F32").has_value());  // a safetensors name, not a format name
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(DType, SafetensorsNames) {
  EXPECT_EQ(dtype_from_safetensors("F64"), DType::Float64);
  EXPECT_EQ(dtype_from_safetensors("F32"), DType::Float32);
  EXPECT_EQ(dtype_from_safetensors("F16"), DType::Float16);
  EXPECT_EQ(dtype_from_safetensors("BF16"), DType::BFloat16);
  EXPECT_EQ(dtype_from_safetensors("F8_E4M3"), DType::Float8E4M3FN);
  EXPECT_EQ(dtype_from_safetensors("F8_E5M2"), DType::Float8E5M2);
  // "F4" counts FP4 values, which is float4_e2m1 (see dtype.cc).
  EXPECT_EQ(dtype_from_safetensors("F4"), DType::Float4E2M1);
  EXPECT_EQ(dtype_from_safetensors("I64"), DType::Int64);
  EXPECT_EQ(dtype_from_safetensors("I32"), DType::Int32);
  EXPECT_EQ(dtype_from_safetensors("I16"), DType::Int16);
  EXPECT_EQ(dtype_from_safetensors("I8"), DType::Int8);
  EXPECT_EQ(dtype_from_safetensors("U8"), DType::UInt8);
  EXPECT_EQ(dtype_from_safetensors("BOOL"), DType::Bool);
  EXPECT_FALSE(dtype_from_safetensors("U16").has_value());
  EXPECT_FALSE(dtype_from_safetensors("f32").has_value());
  EXPECT_FALSE(dtype_from_safetensors("float32").has_value());
}

TEST(DType, LowPrecision) {
  std::set<DType> low;
  for (const auto& d : all_dtypes())
    if (is_low_precision_float(d.id)) low.insert(d.id);
  EXPECT_EQ(low, (std::set<DType>{DType::Float8E4M3FN, DType::Float8E5M2, DType::Float4E2M1,
                                  DType::Float4E2M1FNx2}));
}

}  // namespace
}  // namespace solbench
