// The dtype table of the problem format: names, storage sizes, kinds, and the
// codes the native kernel binding (include/solbench/kernel.h) uses.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace solbench {

enum class DType : uint8_t {
  Float64,
  Float32,
  Float16,
  BFloat16,
  Float8E4M3FN,
  Float8E5M2,
  Float4E2M1,      // one FP4 value; storage half a byte
  Float4E2M1FNx2,  // two FP4 values packed per byte; the shape counts bytes
  Int64,
  Int32,
  Int16,
  Int8,
  UInt8,
  Bool,
};

struct DTypeInfo {
  DType id;
  std::string_view name;        // as written in definition.json, e.g. "bfloat16"
  std::string_view safetensors; // safetensors header name, e.g. "BF16"
  int storage_bits;             // bits of storage per element of the shape
  int values_per_element;       // 2 for packed FP4x2, else 1
  bool is_float;                // any floating format, incl. FP8/FP4
  bool is_integer;              // signed or unsigned integers (not bool)
  int kernel_code;              // SB_DTYPE_* in include/solbench/kernel.h
};

const DTypeInfo& dtype_info(DType t);
std::span<const DTypeInfo> all_dtypes();
std::optional<DType> parse_dtype(std::string_view name);
std::optional<DType> dtype_from_safetensors(std::string_view name);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }

// Bytes to store `elements` elements of the shape (rounded up for sub-byte types).
uint64_t storage_bytes(DType t, uint64_t elements);

// True for FP8 and FP4 formats (they need torch >= 2.1 and special generators).
bool is_low_precision_float(DType t);

}  // namespace solbench
