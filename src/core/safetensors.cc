#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <system_error>
#include <utility>

#include "core/diagnostics.h"
#include "core/json.h"

namespace solbench {

namespace {

// The reference implementation refuses headers above 100 MB; a larger length
// field is a corrupt or hostile file, and we would parse it in memory.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

std::string errno_text(int err) { return std::generic_category().message(err); }

[[noreturn]] void fail(const std::string& file, const std::string& where,
                       const std::string& what) {
  throw InputError(file, 0, where, what);
}

std::string known_safetensors_names() {
  std::string out;
  std::set<std::string_view> seen;
  for (const auto& d : all_dtypes()) {
    if (!seen.insert(d.safetensors).second) continue;
    if (!out.empty()) out += ", ";
    out += d.safetensors;
  }
  return out;
}

// A JSON value as a non-negative integer (shape dims, offsets), or nullopt.
std::optional<uint64_t> as_index(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= 0) return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(file, "", "cannot read: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(file, "", "cannot read: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(file, "", "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail(file, "", "truncated safetensors file: " + std::to_string(size) +
                 " bytes, expected at least the 8-byte header length");
  }

  SafetensorsFile f;
  // The object owns the mapping from here on, so every later throw unmaps it.
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) fail(file, "", "cannot map: " + errno_text(map_err));
  f.map_ = map;
  f.size_ = size;

  const auto* bytes = static_cast<const unsigned char*>(map);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > size - 8)
    fail(file, "", "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    fail(file, "", "header length " + std::to_string(header_len) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes");

  const char* header_begin = static_cast<const char*>(map) + 8;
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_len);
  } catch (const json::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep its reason.
    std::string why = e.what();
    if (auto tag = why.find("] "); why.rfind("[json.exception.", 0) == 0 && tag != std::string::npos)
      why = why.substr(tag + 2);
    fail(file, "", "header is not valid JSON: " + why);
  }
  if (!header.is_object()) fail(file, "", "header is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  const auto* data = static_cast<const std::byte*>(map) + data_start;

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(file, name, "expected an object of string values");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail(file, name + "." + key, "expected a string value");
        f.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object())
      fail(file, name, "expected a tensor entry {dtype, shape, data_offsets}");

    Tensor t;
    t.name = name;

    const auto dt = entry.find("dtype");
    if (dt == entry.end() || !dt->is_string()) fail(file, name, "missing dtype (a string)");
    t.dtype_name = dt->get<std::string>();
    const auto parsed = dtype_from_safetensors(t.dtype_name);
    if (!parsed)
      fail(file, name, "unknown dtype '" + t.dtype_name + "', expected one of " +
                     known_safetensors_names());
    t.dtype = *parsed;

    const auto sh = entry.find("shape");
    if (sh == entry.end() || !sh->is_array())
      fail(file, name, "missing shape (an array of non-negative integers)");
    uint64_t elements = 1;
    bool count_overflow = false;
    for (const auto& dim : *sh) {
      const auto d = as_index(dim);
      if (!d || *d > static_cast<uint64_t>(INT64_MAX))
        fail(file, name, "shape " + sh->dump() + " must hold non-negative integers");
      t.shape.push_back(static_cast<int64_t>(*d));
      count_overflow |= __builtin_mul_overflow(elements, *d, &elements);
    }

    const auto off = entry.find("data_offsets");
    if (off == entry.end() || !off->is_array() || off->size() != 2)
      fail(file, name, "missing data_offsets (an array [begin, end])");
    const auto begin = as_index((*off)[0]);
    const auto end = as_index((*off)[1]);
    if (!begin || !end) fail(file, name, "data_offsets " + off->dump() + " must be non-negative integers");
    if (*begin > *end)
      fail(file, name, "data_offsets " + off->dump() + ": begin is past end");
    if (*end > data_size)
      fail(file, name, "data_offsets " + off->dump() + " out of bounds: the data section holds " +
                     std::to_string(data_size) + " bytes");

    const uint64_t have = *end - *begin;
    if (count_overflow)
      fail(file, name, "shape " + sh->dump() + " has more elements than fit in 64 bits");
    const uint64_t want = storage_bytes(t.dtype, elements);
    if (have != want)
      fail(file, name, "data size mismatch: data_offsets " + off->dump() + " span " +
                     std::to_string(have) + " bytes, but " + t.dtype_name + " with shape " +
                     sh->dump() + " needs " + std::to_string(want) + " bytes");

    t.data = std::span<const std::byte>(data + *begin, have);
    f.tensors_.push_back(std::move(t));
  }
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      tensors_(std::move(o.tensors_)),
      metadata_(std::move(o.metadata_)) {
  // The spans in tensors_ point into the mapping, whose address does not
  // change, so they stay valid in the new owner.
  o.tensors_.clear();
  o.metadata_.clear();
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    tensors_ = std::move(o.tensors_);
    metadata_ = std::move(o.metadata_);
    o.tensors_.clear();
    o.metadata_.clear();
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

const SafetensorsFile::Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void write_safetensors(const std::filesystem::path& path,
                       const std::vector<SafetensorsWriteEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string file = path.string();

  // Header first, validating every entry, so that nothing is written for bad input.
  json header = json::object();
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__") throw InputError(file, 0, t.name, "reserved tensor name");
    if (header.contains(t.name)) throw InputError(file, 0, t.name, "duplicate tensor name");
    uint64_t elements = 1;
    json shape = json::array();
    for (int64_t d : t.shape) {
      if (d < 0) throw InputError(file, 0, t.name, "negative dimension in shape");
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements))
        throw InputError(file, 0, t.name, "shape has more elements than fit in 64 bits");
      shape.push_back(d);
    }
    const uint64_t bytes = storage_bytes(t.dtype, elements);
    if (bytes != t.data.size())
      throw InputError(file, 0, t.name,
                       "data holds " + std::to_string(t.data.size()) + " bytes, but " +
                           std::string(dtype_name(t.dtype)) + " with this shape needs " +
                           std::to_string(bytes));
    // float4_e2m1fn_x2 counts bytes; safetensors' "F4" counts FP4 values, so
    // the last dimension doubles (what the safetensors torch binding writes).
    if (t.dtype == DType::Float4E2M1FNx2) {
      if (t.shape.empty())
        throw InputError(file, 0, t.name, "a float4_e2m1fn_x2 tensor needs at least one dimension");
      shape.back() = t.shape.back() * 2;
    }
    json entry = json::object();
    entry["dtype"] = dtype_info(t.dtype).safetensors;
    entry["shape"] = std::move(shape);
    entry["data_offsets"] = json::array({offset, offset + bytes});
    header[t.name] = std::move(entry);
    offset += bytes;
  }

  std::string head = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte aligned,
  // as the format recommends, letting readers view it as any element type.
  while ((8 + head.size()) % 8 != 0) head.push_back(' ');

  // One buffer through the shared atomic writer: files written here are test
  // and tool inputs, small enough that a second copy in memory is harmless.
  std::string out;
  out.reserve(8 + head.size() + offset);
  uint64_t len = head.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += head;
  for (const auto& t : tensors)
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  write_text_file(path, out);
}

}  // namespace solbench
