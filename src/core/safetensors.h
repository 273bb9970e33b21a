// Read-only, memory-mapped .safetensors files: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__"},
// then the data. Every offset and size is bounds-checked; no data is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace solbench {

class SafetensorsFile {
 public:
  struct Tensor {
    std::string name;
    DType dtype;
    std::string dtype_name;            // as written in the header
    std::vector<int64_t> shape;
    std::span<const std::byte> data;   // view into the mapping
  };

  // Throws InputError naming the file and what is wrong.
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&& o) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& o) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;  // owns one mapping
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes a safetensors file (used by tests and by tools that save inputs).
struct SafetensorsWriteEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<SafetensorsWriteEntry>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace solbench
