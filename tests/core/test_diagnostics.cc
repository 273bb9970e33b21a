// Diagnostics formatting, and the JSON/file helpers whose errors they carry.
#include "core/diagnostics.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/json.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

TEST(Diagnostic, FormatsAllParts) {
  EXPECT_EQ((Diagnostic{"defs/gemm.json", 0, "axes.M", "expected an object"}).str(),
            "defs/gemm.json: axes.M: expected an object");
  EXPECT_EQ((Diagnostic{"w.jsonl", 3, "inputs.x", "unknown input"}).str(),
            "w.jsonl:3: inputs.x: unknown input");
  EXPECT_EQ((Diagnostic{"w.jsonl", 3, "", "bad"}).str(), "w.jsonl:3: bad");
  EXPECT_EQ((Diagnostic{"", 0, "axes", "bad"}).str(), "axes: bad");
  EXPECT_EQ((Diagnostic{"", 0, "", "bad"}).str(), "bad");
  // A line without a file still says what the number is.
  EXPECT_EQ((Diagnostic{"", 7, "", "bad"}).str(), "line 7: bad");
  // Negative lines count as "not applicable".
  EXPECT_EQ((Diagnostic{"f", -1, "", "bad"}).str(), "f: bad");
}

TEST(Diagnostics, CollectsInOrder) {
  Diagnostics d;
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.str(), "");
  d.add("a.json", 0, "name", "missing");
  d.add(Diagnostic{"b.jsonl", 2, "uuid", "duplicate"});
  Diagnostics more;
  more.add("c.json", 0, "", "empty");
  d.append(more);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.items()[1].line, 2);
  EXPECT_EQ(d.str(), "a.json: name: missing\nb.jsonl:2: uuid: duplicate\nc.json: empty");
}

TEST(Diagnostics, WarningsAreKeptApartFromErrors) {
  Diagnostics d;
  d.warn("w.jsonl", 2, "inputs.bias", "ignored");
  // A warning alone leaves the errors empty, so "did this add an error?" checks hold.
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.size(), 0u);
  ASSERT_EQ(d.warnings().size(), 1u);
  EXPECT_EQ(d.warnings()[0].line, 2);
  EXPECT_EQ(d.str(), "warning: w.jsonl:2: inputs.bias: ignored");
  d.add("a.json", 0, "name", "missing");
  d.warn(Diagnostic{"w.jsonl", 5, "inputs.c", "also ignored"});
  // Errors first, then the warnings, each marked.
  EXPECT_EQ(d.str(),
            "a.json: name: missing\nwarning: w.jsonl:2: inputs.bias: ignored\n"
            "warning: w.jsonl:5: inputs.c: also ignored");

  Diagnostics all;
  all.append(d);
  EXPECT_EQ(all.size(), 1u);
  EXPECT_EQ(all.warnings().size(), 2u);

  // --strict: warnings become errors with the same text, in order.
  all.promote_warnings();
  EXPECT_TRUE(all.warnings().empty());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.items()[1].str(), "w.jsonl:2: inputs.bias: ignored");
  EXPECT_EQ(all.str(),
            "a.json: name: missing\nw.jsonl:2: inputs.bias: ignored\nw.jsonl:5: inputs.c: also ignored");
}

TEST(InputError, WhatIsTheDiagnosticsText) {
  Diagnostics d;
  d.add("a.json", 0, "x", "first");
  d.add("a.json", 0, "y", "second");
  const InputError e(d);
  EXPECT_STREQ(e.what(), "a.json: x: first\na.json: y: second");
  EXPECT_EQ(e.diagnostics().size(), 2u);

  const InputError single("f.jsonl", 4, "axes.M", "not an integer");
  EXPECT_STREQ(single.what(), "f.jsonl:4: axes.M: not an integer");
  ASSERT_EQ(single.diagnostics().size(), 1u);
  EXPECT_EQ(single.diagnostics().items()[0].path, "axes.M");
  // Catchable as the standard exception type.
  try {
    throw InputError("f", 0, "", "boom");
  } catch (const std::runtime_error& r) {
    EXPECT_STREQ(r.what(), "f: boom");
  }
}

// ------------------------------------------------------------------ json.h

class JsonFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("solbench_test_json_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(Json, ParsesInOrder) {
  const json j = parse_json_text(R"({"z": 1, "a": [true, null], "m": "s"})", "f.json");
  ASSERT_TRUE(j.is_object());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));  // insertion order kept
  EXPECT_EQ(j["z"].get<int>(), 1);
}

TEST(Json, SyntaxErrorHasLineAndColumn) {
  // The error is at the 'x' on line 3, column 8.
  const std::string text = "{\n  \"a\": 1,\n  \"b\": x\n}\n";
  const std::string msg = error_text([&] { parse_json_text(text, "def.json"); });
  EXPECT_EQ(msg.rfind("def.json:3: invalid JSON at column 8: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;

  // A JSONL record reports the caller's file line.
  const std::string rec = error_text([] { parse_json_text("{\"uuid\": }", "w.jsonl", 12); });
  EXPECT_EQ(rec.rfind("w.jsonl:12: invalid JSON at column 10", 0), 0u) << rec;

  const std::string empty = error_text([] { parse_json_text("", "e.json"); });
  EXPECT_EQ(empty.rfind("e.json:1: invalid JSON at column 1", 0), 0u) << empty;

  const std::string trailing = error_text([] { parse_json_text("{} {}", "t.json"); });
  EXPECT_EQ(trailing.rfind("t.json:1: invalid JSON at column 4", 0), 0u) << trailing;
}

TEST_F(JsonFiles, ReadErrorsNameTheFile) {
  const fs::path missing = dir_ / "missing.json";
  const std::string msg = error_text([&] { read_text_file(missing); });
  EXPECT_EQ(msg, missing.string() + ": cannot read: No such file or directory");
  const std::string dir_msg = error_text([&] { read_text_file(dir_); });
  EXPECT_NE(dir_msg.find("cannot read: Is a directory"), std::string::npos) << dir_msg;
  EXPECT_NE(error_text([&] { load_json_file(missing); }).find("cannot read"), std::string::npos);
}

TEST_F(JsonFiles, WriteIsAtomicAndCreatesFolders) {
  const fs::path p = dir_ / "a" / "b" / "out.json";
  write_text_file(p, "{\"k\": [1, 2]}\n");
  EXPECT_EQ(read_text_file(p), "{\"k\": [1, 2]}\n");
  EXPECT_EQ(load_json_file(p)["k"][1].get<int>(), 2);

  // Overwrite replaces the content and leaves no temporary file behind.
  write_text_file(p, "second");
  EXPECT_EQ(read_text_file(p), "second");
  int files = 0;
  for (const auto& e : fs::directory_iterator(p.parent_path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);

  // Binary content with NUL bytes survives.
  const std::string bin("a\0b\xff", 4);
  write_text_file(p, bin);
  EXPECT_EQ(read_text_file(p), bin);

  // A syntax error in a file names it with the line.
  write_text_file(dir_ / "bad.json", "[1,\n2,,]");
  const std::string msg = error_text([&] { load_json_file(dir_ / "bad.json"); });
  EXPECT_EQ(msg.rfind((dir_ / "bad.json").string() + ":2: invalid JSON at column 3", 0), 0u)
      << msg;
}

TEST_F(JsonFiles, WriteFailureNamesTheFile) {
  // A regular file where a folder is needed.
  write_text_file(dir_ / "plain", "x");
  const std::string msg = error_text([&] { write_text_file(dir_ / "plain" / "f.json", "y"); });
  EXPECT_EQ(msg.rfind((dir_ / "plain" / "f.json").string() + ": cannot create folder", 0), 0u)
      << msg;
}

}  // namespace
}  // namespace solbench
