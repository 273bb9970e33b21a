// Where the toolchains are found (harness/toolchain.h): the order of the places
// looked in and the variables honoured, shared by the build and the worker sandbox.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/toolchain.h"
#include "test_support.h"
#include "test_util.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;

class Toolchain : public ::testing::Test {
 protected:
  // An executable file at `rel` under the test's folder.
  fs::path program(const std::string& rel) {
    const fs::path p = tmp_.write(rel, "#!/bin/sh\nexit 0\n");
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
  testing::TempDir tmp_;
};

TEST_F(Toolchain, NvccIsTheConfiguredOneThenNvccThenCudaHomeThenCudaPath) {
  const fs::path named = program("named/nvcc"), env = program("env/nvcc");
  const fs::path home = program("home/bin/nvcc"), path = program("path/bin/nvcc");
  ScopedEnv e1("NVCC", env.c_str());
  ScopedEnv e2("CUDA_HOME", (tmp_.path() / "home").c_str());
  ScopedEnv e3("CUDA_PATH", (tmp_.path() / "path").c_str());
  EXPECT_EQ(find_nvcc(named.string()), named);
  EXPECT_EQ(find_nvcc(), env);
  ::unsetenv("NVCC");
  EXPECT_EQ(find_nvcc(), home);
  ::unsetenv("CUDA_HOME");
  EXPECT_EQ(find_nvcc(), path);
  EXPECT_EQ(cuda_root_of(path), tmp_.path() / "path");
}

TEST_F(Toolchain, TheCudaLibraryFolderIsTheOneHoldingTheRuntime) {
  EXPECT_EQ(cuda_lib_dir(tmp_.path()), tmp_.path() / "lib64");  // none holds it
  tmp_.write("targets/x86_64-linux/lib/libcudart.so", "");
  EXPECT_EQ(cuda_lib_dir(tmp_.path()), tmp_.path() / "targets/x86_64-linux/lib");
  tmp_.write("lib/libcudart.so", "");
  EXPECT_EQ(cuda_lib_dir(tmp_.path()), tmp_.path() / "lib");
}

TEST_F(Toolchain, CompilersAndPythonAreTheConfiguredOnesThenTheEnvironmentsThenTheDefault) {
  ScopedEnv cxx("CXX", "my-g++");
  EXPECT_EQ(compiler_name("clang++", "CXX", "g++"), "clang++");
  EXPECT_EQ(compiler_name("", "CXX", "g++"), "my-g++");
  ::unsetenv("CXX");
  EXPECT_EQ(compiler_name("", "CXX", "g++"), "g++");
  const fs::path cc = program("bin/cc");
  EXPECT_EQ(find_compiler(cc.string()), cc);
  EXPECT_FALSE(find_compiler((tmp_.path() / "missing").string()));

  ScopedEnv py("SOLBENCH_PYTHON", "/opt/py/bin/python3");
  EXPECT_EQ(configured_python("/usr/bin/python3.11"), "/usr/bin/python3.11");
  EXPECT_EQ(configured_python(), "/opt/py/bin/python3");
}

TEST_F(Toolchain, KernelHeaderFoldersAreTheConfiguredOneThenTheEnvironmentsFirst) {
  ScopedEnv inc("SOLBENCH_INCLUDE_DIR", "/env/include");
  const auto c = kernel_include_candidates("/configured/include");
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], fs::path("/configured/include"));
  EXPECT_EQ(c[1], fs::path("/env/include"));
  EXPECT_EQ(c.back(), self_exe().parent_path().parent_path() / "include");
}

}  // namespace
}  // namespace solbench::harness
