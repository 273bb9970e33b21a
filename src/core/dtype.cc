#include "core/dtype.h"

#include <array>
#include <cstdint>
#include <limits>

namespace solbench {

namespace {

// kernel_code is the SB_DTYPE_* value of include/solbench/kernel.h, part of the
// native kernel ABI, so it must never be renumbered:
//   F64=0 F32=1 F16=2 BF16=3 F8E4M3=4 F8E5M2=5 F4E2M1=6 F4E2M1X2=7
//   I64=8 I32=9 I16=10 I8=11 U8=12 BOOL=13
//
// safetensors names follow the safetensors format. Its "F4" is a 4-bit E2M1
// element whose shape counts FP4 values, which is exactly float4_e2m1. torch's
// float4_e2m1fn_x2 (two values per byte, shape counts bytes) has no own name in
// the format: the safetensors torch binding stores it as "F4" with the last
// dimension counted in values (doubled). We do the same (see write_safetensors),
// so "F4" reads back as float4_e2m1 and callers match an x2 definition against
// an "F4" tensor whose last dimension is twice the definition's.
//
// Rows are in DType enum order so dtype_info() can index the table directly.
constexpr std::array<DTypeInfo, 14> kTable = {{
    // id                     name                 st         bits vpe float  int   code
    {DType::Float64,        "float64",          "F64",      64, 1, true,  false, 0},
    {DType::Float32,        "float32",          "F32",      32, 1, true,  false, 1},
    {DType::Float16,        "float16",          "F16",      16, 1, true,  false, 2},
    {DType::BFloat16,       "bfloat16",         "BF16",     16, 1, true,  false, 3},
    {DType::Float8E4M3FN,   "float8_e4m3fn",    "F8_E4M3",   8, 1, true,  false, 4},
    {DType::Float8E5M2,     "float8_e5m2",      "F8_E5M2",   8, 1, true,  false, 5},
    {DType::Float4E2M1,     "float4_e2m1",      "F4",        4, 1, true,  false, 6},
    {DType::Float4E2M1FNx2, "float4_e2m1fn_x2", "F4",        8, 2, true,  false, 7},
    {DType::Int64,          "int64",            "I64",      64, 1, false, true,  8},
    {DType::Int32,          "int32",            "I32",      32, 1, false, true,  9},
    {DType::Int16,          "int16",            "I16",      16, 1, false, true,  10},
    {DType::Int8,           "int8",             "I8",        8, 1, false, true,  11},
    {DType::UInt8,          "uint8",            "U8",        8, 1, false, true,  12},
    {DType::Bool,           "bool",             "BOOL",      8, 1, false, false, 13},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].id) != i) return false;
    if (kTable[i].kernel_code != static_cast<int>(i)) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "dtype table must follow the DType enum order");

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  return kTable[static_cast<size_t>(t)];
}

std::span<const DTypeInfo> all_dtypes() { return kTable; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& info : kTable)
    if (info.name == name) return info.id;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  // First match wins: "F4" resolves to float4_e2m1, the type whose shape
  // convention the safetensors header uses (see the table comment).
  for (const auto& info : kTable)
    if (info.safetensors == name) return info.id;
  return std::nullopt;
}

uint64_t storage_bytes(DType t, uint64_t elements) {
  const uint64_t bits = static_cast<uint64_t>(dtype_info(t).storage_bits);
  // Split the count so elements * bits cannot overflow for any count whose byte
  // size fits; a size that does not fit saturates, so a bounds check against a
  // real file size still fails instead of passing on a wrapped value.
  const uint64_t whole = elements / 8;
  const uint64_t rest_bits = (elements % 8) * bits;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, bits, &bytes) ||
      __builtin_add_overflow(bytes, (rest_bits + 7) / 8, &bytes))
    return std::numeric_limits<uint64_t>::max();
  return bytes;
}

bool is_low_precision_float(DType t) {
  switch (t) {
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      return true;
    default:
      return false;
  }
}

}  // namespace solbench
