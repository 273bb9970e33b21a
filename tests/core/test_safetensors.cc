#include "core/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/json.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// Builds a file by hand: 8-byte LE length, header text, data.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("solbench_test_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path put(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    write_text_file(p, content);
    return p;
  }

  // Opens `content` and returns the InputError text ("" when it opened).
  std::string open_error(const std::string& content) {
    const fs::path p = put("bad.safetensors", content);
    try {
      SafetensorsFile::open(p);
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(p.string() + ": ", 0), 0u) << "message must name the file: " << msg;
      return msg;
    }
    return "";
  }

  fs::path dir_;
};

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST_F(Safetensors, WriteThenReadBack) {
  const std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f};
  const std::vector<int64_t> idx = {7, -3, 1LL << 40};
  const std::vector<uint8_t> mask = {1, 0, 1, 1};
  const std::vector<uint8_t> fp4 = {0x12, 0x34};  // 3 FP4 values, rounded up to 2 bytes
  const fs::path p = dir_ / "sub" / "t.safetensors";
  write_safetensors(p,
                    {{"weight", DType::Float32, {2, 3}, bytes_of(w)},
                     {"idx", DType::Int64, {3}, bytes_of(idx)},
                     {"mask", DType::Bool, {2, 2}, bytes_of(mask)},
                     {"empty", DType::BFloat16, {0, 4}, {}},
                     {"scalar", DType::Int64, {}, std::span(bytes_of(idx)).first(8)},
                     {"q", DType::Float4E2M1, {3}, bytes_of(fp4)}},
                    {{"format", "pt"}, {"source", "test"}});

  // The on-disk layout: LE length, space-padded header, 8-aligned data.
  const std::string raw = read_text_file(p);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(raw[i]);
  EXPECT_EQ((8 + header_len) % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + header_len + 24 + 24 + 4 + 0 + 8 + 2);
  const json header = json::parse(raw.substr(8, header_len));
  EXPECT_EQ(header["weight"]["dtype"], "F32");
  EXPECT_EQ(header["weight"]["data_offsets"], json::parse("[0, 24]"));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");

  SafetensorsFile f = SafetensorsFile::open(p);
  ASSERT_EQ(f.tensors().size(), 6u);
  EXPECT_EQ(f.tensors()[0].name, "weight");  // header order
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"source", "test"}}));

  const auto* wt = f.find("weight");
  ASSERT_NE(wt, nullptr);
  EXPECT_EQ(wt->dtype, DType::Float32);
  EXPECT_EQ(wt->dtype_name, "F32");
  EXPECT_EQ(wt->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(wt->data.size(), 24u);
  std::vector<float> back(6);
  std::memcpy(back.data(), wt->data.data(), 24);
  EXPECT_EQ(back, w);

  const auto* it = f.find("idx");
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(it->dtype, DType::Int64);
  int64_t third = 0;
  std::memcpy(&third, it->data.data() + 16, 8);
  EXPECT_EQ(third, 1LL << 40);

  EXPECT_EQ(f.find("mask")->dtype, DType::Bool);
  EXPECT_EQ(std::memcmp(f.find("mask")->data.data(), mask.data(), 4), 0);
  EXPECT_EQ(f.find("empty")->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(f.find("empty")->data.empty());
  EXPECT_TRUE(f.find("scalar")->shape.empty());
  EXPECT_EQ(f.find("scalar")->data.size(), 8u);
  EXPECT_EQ(f.find("q")->dtype, DType::Float4E2M1);
  EXPECT_EQ(f.find("q")->data.size(), 2u);
  EXPECT_EQ(f.find("nope"), nullptr);

  // Moving keeps the views valid; the moved-from object is empty.
  SafetensorsFile g = std::move(f);
  EXPECT_TRUE(f.tensors().empty());  // NOLINT(bugprone-use-after-move)
  ASSERT_NE(g.find("weight"), nullptr);
  std::memcpy(back.data(), g.find("weight")->data.data(), 24);
  EXPECT_EQ(back, w);
  SafetensorsFile h = SafetensorsFile::open(p);
  h = std::move(g);
  EXPECT_EQ(h.find("idx")->shape, (std::vector<int64_t>{3}));
}

TEST_F(Safetensors, PackedFp4IsWrittenAsF4Values) {
  // float4_e2m1fn_x2 counts bytes; the file counts FP4 values ("F4", last dim doubled).
  const std::vector<uint8_t> packed = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba};
  const fs::path p = dir_ / "fp4.safetensors";
  write_safetensors(p, {{"x", DType::Float4E2M1FNx2, {2, 3}, bytes_of(packed)}});
  const SafetensorsFile f = SafetensorsFile::open(p);
  const auto* x = f.find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype_name, "F4");
  EXPECT_EQ(x->dtype, DType::Float4E2M1);
  EXPECT_EQ(x->shape, (std::vector<int64_t>{2, 6}));
  ASSERT_EQ(x->data.size(), 6u);
  EXPECT_EQ(std::memcmp(x->data.data(), packed.data(), 6), 0);
}

TEST_F(Safetensors, WriterRejectsBadEntries) {
  const std::vector<float> three = {1, 2, 3};
  auto write_error = [&](std::vector<SafetensorsWriteEntry> entries) -> std::string {
    try {
      write_safetensors(dir_ / "w.safetensors", entries);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_CONTAINS(write_error({{"a", DType::Float32, {2, 2}, bytes_of(three)}}),
                  "a: data holds 12 bytes, but float32 with this shape needs 16");
  EXPECT_CONTAINS(write_error({{"a", DType::Float32, {-3}, bytes_of(three)}}), "negative");
  EXPECT_CONTAINS(write_error({{"a", DType::Float32, {3}, bytes_of(three)},
                               {"a", DType::Float32, {3}, bytes_of(three)}}),
                  "duplicate");
  EXPECT_FALSE(fs::exists(dir_ / "w.safetensors"));
}

TEST_F(Safetensors, RejectsTruncatedFile) {
  EXPECT_CONTAINS(open_error(""), "truncated safetensors file: 0 bytes");
  EXPECT_CONTAINS(open_error("abc"), "truncated safetensors file: 3 bytes");
}

TEST_F(Safetensors, RejectsHeaderLengthPastEof) {
  std::string f = raw_file("{}", "");
  f[0] = 100;  // claims a 100-byte header in a 10-byte file
  EXPECT_CONTAINS(open_error(f), "header length 100 runs past the end of the file (10 bytes)");
  std::string huge(8, '\xff');
  EXPECT_CONTAINS(open_error(huge + "{}"), "runs past the end of the file");
}

TEST_F(Safetensors, RejectsNonJsonHeader) {
  EXPECT_CONTAINS(open_error(raw_file("{\"a\": ", "")), "header is not valid JSON");
  EXPECT_CONTAINS(open_error(raw_file("not json", "")), "header is not valid JSON");
  EXPECT_CONTAINS(open_error(raw_file("[1, 2]", "")), "header is not a JSON object");
}

TEST_F(Safetensors, RejectsOffsetsOutOfBounds) {
  const std::string msg = open_error(
      raw_file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
               std::string(12, '\0')));
  EXPECT_CONTAINS(msg, ": w: data_offsets [0,16] out of bounds: the data section holds 12 bytes");
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})",
                      std::string(12, '\0'))),
                  "w: data_offsets [8,4]: begin is past end");
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})",
                      std::string(12, '\0'))),
                  "must be non-negative integers");
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})",
                      std::string(12, '\0'))),
                  "w: missing data_offsets");
}

TEST_F(Safetensors, RejectsSizeMismatch) {
  const std::string msg = open_error(
      raw_file(R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 8]}})",
               std::string(8, '\0')));
  EXPECT_CONTAINS(msg, "w: data size mismatch: data_offsets [0,8] span 8 bytes, but BF16 with "
                       "shape [2,3] needs 12 bytes");
  // FP4 values round up: 3 values need 2 bytes, not 1.
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"q": {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}})",
                      std::string(8, '\0'))),
                  "needs 2 bytes");
  // An element count that overflows 64 bits.
  EXPECT_CONTAINS(
      open_error(raw_file(
          R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})",
          "")),
      "more elements than fit in 64 bits");
}

TEST_F(Safetensors, RejectsBadDtypeAndShape) {
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}})",
                      std::string(8, '\0'))),
                  "w: unknown dtype 'Q7', expected one of F64, F32");
  EXPECT_CONTAINS(open_error(raw_file(R"({"w": {"shape": [1], "data_offsets": [0, 1]}})",
                                      std::string(8, '\0'))),
                  "w: missing dtype");
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})",
                      std::string(8, '\0'))),
                  "w: shape [-1] must hold non-negative integers");
  EXPECT_CONTAINS(open_error(raw_file(
                      R"({"w": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 1]}})",
                      std::string(8, '\0'))),
                  "must hold non-negative integers");
  EXPECT_CONTAINS(open_error(raw_file(R"({"w": [1, 2]})", "")), "w: expected a tensor entry");
}

TEST_F(Safetensors, RejectsBadMetadata) {
  EXPECT_CONTAINS(open_error(raw_file(R"({"__metadata__": {"k": 1}})", "")),
                  "__metadata__.k: expected a string value");
  EXPECT_CONTAINS(open_error(raw_file(R"({"__metadata__": "x"})", "")),
                  "__metadata__: expected an object");
}

TEST_F(Safetensors, MissingFile) {
  try {
    SafetensorsFile::open(dir_ / "none.safetensors");
    FAIL() << "opened a missing file";
  } catch (const InputError& e) {
    EXPECT_CONTAINS(e.what(), "none.safetensors: cannot read: No such file or directory");
  }
}

}  // namespace
}  // namespace solbench
