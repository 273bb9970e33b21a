// Writing a solution's sources into a staging folder: safe relative paths only,
// never through a symlink; plus SHA-256 and the build cache's publication rules.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "harness/build/build.h"
#include "harness/build/build_cache.h"
#include "harness/sha256.h"
#include "harness/staging.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;

Solution with_sources(std::vector<SourceFile> files) {
  Solution s;
  s.name = "staging_test";
  s.sources = std::move(files);
  return s;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(WriteSources, WritesNestedFiles) {
  StagingDir d = StagingDir::create();
  auto why = write_sources(with_sources({{"kernel.cc", "int x;"}, {"inc/a/b.h", "#pragma once\n"}}),
                           d.path());
  ASSERT_FALSE(why.has_value()) << *why;
  EXPECT_EQ(slurp(d.path() / "kernel.cc"), "int x;");
  EXPECT_EQ(slurp(d.path() / "inc/a/b.h"), "#pragma once\n");
}

TEST(WriteSources, RejectsParentEscapes) {
  StagingDir d = StagingDir::create();
  for (const char* bad : {"../x.cc", "a/../../x.cc", "/abs/x.cc", "/etc/passwd", "", "a//b.cc",
                          "./x.cc", "a\\b.cc"}) {
    auto why = write_sources(with_sources({{bad, "int y;"}}), d.path());
    ASSERT_TRUE(why.has_value()) << "accepted '" << bad << "'";
    EXPECT_NE(why->find("sources: path '" + std::string(bad) + "'"), std::string::npos) << *why;
  }
  EXPECT_TRUE(fs::is_empty(d.path()));
  EXPECT_FALSE(fs::exists(d.path().parent_path() / "x.cc"));
}

TEST(WriteSources, NeverWritesThroughSymlinks) {
  StagingDir d = StagingDir::create();
  StagingDir outside = StagingDir::create();
  fs::create_directory_symlink(outside.path(), d.path() / "link");
  fs::create_symlink(outside.path() / "target.cc", d.path() / "file.cc");
  auto via_dir = write_sources(with_sources({{"link/x.cc", "int z;"}}), d.path());
  ASSERT_TRUE(via_dir.has_value());
  EXPECT_NE(via_dir->find("symlink"), std::string::npos) << *via_dir;
  auto via_file = write_sources(with_sources({{"file.cc", "int z;"}}), d.path());
  ASSERT_TRUE(via_file.has_value());
  EXPECT_TRUE(fs::is_empty(outside.path()));
}

TEST(WriteSources, RejectsDuplicatesAndFileFolderClashes) {
  StagingDir d1 = StagingDir::create();
  auto dup = write_sources(with_sources({{"k.cc", "a"}, {"k.cc", "b"}}), d1.path());
  ASSERT_TRUE(dup.has_value());
  EXPECT_NE(dup->find("twice"), std::string::npos) << *dup;
  StagingDir d2 = StagingDir::create();
  auto clash = write_sources(with_sources({{"a", "x"}, {"a/b.h", "y"}}), d2.path());
  ASSERT_TRUE(clash.has_value());
}

TEST(Sha256Test, KnownVectorsAndFields) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256().update("ab").update("c").hex_digest(), sha256_hex("abc"));
  EXPECT_NE(Sha256().field("ab").field("c").hex_digest(), Sha256().field("a").field("bc").hex_digest());
  EXPECT_EQ(sha256_backend(), "openssl");
}

TEST(BuildCacheTest, PublishIsAtomicAndFirstWins) {
  StagingDir root = StagingDir::create();
  BuildCache cache(root.path() / "builds");
  const std::string key = sha256_hex("entry");
  EXPECT_FALSE(cache.lookup(key).has_value());

  fs::path a = cache.make_temp_dir();
  std::ofstream(a / "lib.so") << "first";
  fs::path entry = cache.publish(key, a, json{{"n", 1}});
  EXPECT_EQ(entry, cache.entry_dir(key));
  EXPECT_FALSE(fs::exists(a));
  ASSERT_TRUE(cache.lookup(key).has_value());
  EXPECT_EQ(cache.metadata(key)->at("n"), 1);

  // A concurrent builder that finishes second keeps the first entry.
  fs::path b = cache.make_temp_dir();
  std::ofstream(b / "lib.so") << "second";
  EXPECT_EQ(cache.publish(key, b, json{{"n", 2}}), entry);
  EXPECT_FALSE(fs::exists(b));
  EXPECT_EQ(slurp(entry / "lib.so"), "first");

  cache.store_toolchain_version("g++|1|2", "g++ (Debian) 12.2.0\n");
  EXPECT_EQ(cache.toolchain_version("g++|1|2").value_or(""), "g++ (Debian) 12.2.0\n");
  EXPECT_FALSE(cache.toolchain_version("g++|1|3").has_value());

  cache.evict(key);
  EXPECT_FALSE(cache.lookup(key).has_value());
}

TEST(BuildCacheTest, DefaultFolderFollowsTheEnvironment) {
  const char* old = std::getenv("SOLBENCH_CACHE_DIR");
  std::string saved = old ? old : "";
  ::setenv("SOLBENCH_CACHE_DIR", "/tmp/sb-cache-test", 1);
  EXPECT_EQ(default_build_cache_dir(), fs::path("/tmp/sb-cache-test/builds"));
  if (old) ::setenv("SOLBENCH_CACHE_DIR", saved.c_str(), 1);
  else ::unsetenv("SOLBENCH_CACHE_DIR");
}

TEST(Staging, RemovesTreesTooDeepForAPathWithoutFollowingLinks) {
  // What a solution can leave in its scratch folder: folders nested past PATH_MAX
  // (and past any stack a recursive removal would need), one without permissions,
  // and links to what is not its own.
  StagingDir d = StagingDir::create();
  StagingDir outside = StagingDir::create();
  std::ofstream(outside.path() / "keep") << "not the solution's";
  const fs::path root = d.path() / "scratch";
  fs::create_directories(root);
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  const std::string name(100, 'd');
  constexpr int kDepth = 300;  // 30 KB of path (PATH_MAX: 4 KB)
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_EQ(::mkdirat(fd, name.c_str(), 0700), 0) << i;
    const int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
    if (i % 100 == 0) {
      ::symlinkat(outside.path().c_str(), fd, "link");
      ::close(::openat(fd, "file", O_WRONLY | O_CREAT, 0600));
    }
  }
  ::fchmod(fd, 0);
  ::close(fd);
  fs::create_directories(root / "locked" / "inner");
  fs::permissions(root / "locked", fs::perms::none);
  remove_tree_quietly(root);
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside.path() / "keep"));
}

}  // namespace
}  // namespace solbench::harness
