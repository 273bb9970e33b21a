#include "core/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

namespace solbench {
namespace {

using Env = std::map<std::string, std::string>;

Settings read(const Env& env) {
  return read_settings([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Settings, DefaultsWhereNothingIsSet) {
  const Settings s = read({});
  EXPECT_TRUE(s.cache_dir.empty());
  EXPECT_EQ(s.lock_dir, "/tmp/solbench-locks");
  EXPECT_TRUE(s.python.empty());
  EXPECT_FALSE(s.build_jobs);
  EXPECT_FALSE(s.torch_pch);
  EXPECT_TRUE(s.worker_pidns);
  EXPECT_TRUE(s.worker_proc);
  EXPECT_TRUE(s.reference_worker);
  EXPECT_FALSE(s.spare_workers);
  EXPECT_FALSE(s.early_reference_worker);
  EXPECT_FALSE(s.record_budget_bytes);
  EXPECT_FALSE(s.gpu_block_launch);
  EXPECT_FALSE(s.gpu_idle_timeout_s.set());
  EXPECT_FALSE(s.cuda_visible_devices);
  EXPECT_FALSE(s.triton_libcuda_path);
  EXPECT_FALSE(s.internal.channel_fd);
  EXPECT_TRUE(s.internal.zygote.empty());
  EXPECT_TRUE(s.sandbox_allow.empty());
  EXPECT_TRUE(s.cache_home().empty());
  ASSERT_EQ(s.python_import_env.size(), 7u);
  EXPECT_EQ(s.python_import_env[0], (std::pair<std::string, std::string>{"PYTHONPATH", ""}));
}

TEST(Settings, PathsAndTheCacheFolder) {
  EXPECT_EQ(read({{"HOME", "/h"}}).cache_home(), "/h/.cache/solbench");
  EXPECT_EQ(read({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}}).cache_home(), "/x/solbench");
  EXPECT_EQ(read({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}, {"SOLBENCH_CACHE_DIR", "/c"}}).cache_home(),
            "/c");
  EXPECT_EQ(read({{"SOLBENCH_CACHE_DIR", ""}, {"HOME", "/h"}}).cache_home(), "/h/.cache/solbench");
  const Settings s = read({{"SOLBENCH_LOCK_DIR", "/l"}, {"SOLBENCH_HARDWARE_DIR", "/hw"},
                           {"SOLBENCH_STAGING_DIR", "/s"}, {"TMPDIR", "/t"}, {"CUDA_HOME", "/cuda"},
                           {"SOLBENCH_PYTHON", "/usr/bin/python3"}, {"PYTHONPATH", "/p"}});
  EXPECT_EQ(s.lock_dir, "/l");
  EXPECT_EQ(s.hardware_dir, "/hw");
  EXPECT_EQ(s.staging_dir, "/s");
  EXPECT_EQ(s.tmpdir, "/t");
  EXPECT_EQ(s.cuda_home, "/cuda");
  EXPECT_EQ(s.python, "/usr/bin/python3");
  EXPECT_EQ(s.python_import_env[0].second, "/p");
  EXPECT_EQ(read({{"SOLBENCH_LOCK_DIR", ""}}).lock_dir, "/tmp/solbench-locks");  // empty: unset
}

TEST(Settings, Numbers) {
  EXPECT_EQ(read({{"SOLBENCH_BUILD_JOBS", "3"}}).build_jobs, 3);
  EXPECT_EQ(read({{"SOLBENCH_BUILD_JOBS", "5000"}}).build_jobs, 1024);
  for (const char* bad : {"zero", "0", "-2", "3x", ""})
    EXPECT_FALSE(read({{"SOLBENCH_BUILD_JOBS", bad}}).build_jobs) << bad;
  EXPECT_EQ(read({{"SOLBENCH_BASELINE_WORKERS", "2"}}).baseline_workers, 2);
  EXPECT_FALSE(read({{"SOLBENCH_BASELINE_WORKERS", "0"}}).baseline_workers);
  EXPECT_FALSE(read({}).baseline_workers);
  EXPECT_EQ(read({{"SOLBENCH_BASELINE_CPUS", "8"}}).baseline_cpus, 8);
  EXPECT_FALSE(read({{"SOLBENCH_BASELINE_CPUS", "-1"}}).baseline_cpus);
  EXPECT_EQ(read({{"SOLBENCH_BASELINE_GPU_SHARE", "2"}}).baseline_gpu_share, 2);
  EXPECT_FALSE(read({}).baseline_gpu_share);
  EXPECT_EQ(read({{"SOLBENCH_RECORD_BUDGET_BYTES", "4096"}}).record_budget_bytes, 4096u);
  EXPECT_EQ(read({{"SOLBENCH_RECORD_BUDGET_BYTES", ""}}).record_budget_bytes, 0u);  // set: 0
  const Settings t = read({{"SOLBENCH_GPU_IDLE_TIMEOUT_S", "2.5"}});
  EXPECT_TRUE(t.gpu_idle_timeout_s.set());
  EXPECT_EQ(t.gpu_idle_timeout_s.value, 2.5);
  const Settings bad = read({{"SOLBENCH_GPU_IDLE_TIMEOUT_S", "soon"}});
  EXPECT_TRUE(bad.gpu_idle_timeout_s.set());  // its use reports it, naming the text
  EXPECT_FALSE(bad.gpu_idle_timeout_s.value);
  EXPECT_EQ(bad.gpu_idle_timeout_s.text, "soon");
  EXPECT_EQ(read({{"SOLBENCH_CHANNEL_FD", "7"}}).internal.channel_fd, 7);
}

TEST(Settings, SwitchesOfZeroAndOne) {
  EXPECT_FALSE(read({{"SOLBENCH_WORKER_PIDNS", "0"}}).worker_pidns);
  EXPECT_TRUE(read({{"SOLBENCH_WORKER_PIDNS", "1"}}).worker_pidns);
  EXPECT_FALSE(read({{"SOLBENCH_WORKER_PROC", "0"}}).worker_proc);
  EXPECT_FALSE(read({{"SOLBENCH_REFERENCE_WORKER", "0"}}).reference_worker);
  EXPECT_TRUE(read({{"SOLBENCH_REFERENCE_WORKER", "no"}}).reference_worker);  // only "0" turns it off
  EXPECT_TRUE(read({{"SOLBENCH_SPARE_WORKERS", "1"}}).spare_workers);
  EXPECT_FALSE(read({{"SOLBENCH_SPARE_WORKERS", "yes"}}).spare_workers);  // only "1" turns it on
  EXPECT_EQ(read({{"SOLBENCH_EARLY_REFERENCE_WORKER", "1"}}).early_reference_worker, true);
  EXPECT_EQ(read({{"SOLBENCH_EARLY_REFERENCE_WORKER", "0"}}).early_reference_worker, false);
  EXPECT_FALSE(read({{"SOLBENCH_EARLY_REFERENCE_WORKER", "auto"}}).early_reference_worker);
  EXPECT_EQ(read({{"SOLBENCH_STREAM_JUDGE", "0"}}).stream_judge, false);
  EXPECT_EQ(read({{"SOLBENCH_ROUNDS_AHEAD", "0"}}).rounds_ahead, false);
  EXPECT_FALSE(read({}).rounds_ahead.has_value());
  EXPECT_FALSE(read({}).stream_judge);  // unset: on wherever a reference worker starts early
  EXPECT_EQ(read({{"SOLBENCH_TORCH_PCH", "0"}}).torch_pch, false);
  EXPECT_EQ(read({{"SOLBENCH_TORCH_PCH", "1"}}).torch_pch, true);
  EXPECT_EQ(read({{"SOLBENCH_GPU_BLOCK_LAUNCH", "0"}}).gpu_block_launch, false);
  EXPECT_EQ(read({{"SOLBENCH_GPU_BLOCK_LAUNCH", "yes"}}).gpu_block_launch, true);
}

TEST(Settings, TextsAndLists) {
  const Settings s = read({{"SOLBENCH_SANDBOX_ALLOW", "ptrace,,bpf"},
                           {"SOLBENCH_SANDBOX_WRITABLE_EXTRA", "/a::/b"},
                           {"SOLBENCH_EXEC_ALLOW", "/bin/x:/bin/y"},
                           {"SOLBENCH_GPU_TIMER", "events"},
                           {"SOLBENCH_ZYGOTE", "off"},
                           {"CUDA_VISIBLE_DEVICES", ""},
                           {"TRITON_LIBCUDA_PATH", ""}});
  EXPECT_EQ(s.sandbox_allow, (std::vector<std::string>{"ptrace", "bpf"}));
  EXPECT_EQ(s.sandbox_writable_extra, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(s.internal.exec_allow, (std::vector<std::string>{"/bin/x", "/bin/y"}));
  EXPECT_EQ(s.gpu_timer, "events");
  EXPECT_EQ(s.internal.zygote, "off");
  EXPECT_EQ(s.cuda_visible_devices, "");  // set but empty: no GPU visible
  EXPECT_EQ(s.triton_libcuda_path, "");
}

TEST(Settings, ProcessSettingsFollowTheEnvironment) {
  ::setenv("SOLBENCH_HARDWARE_DIR", "/first", 1);
  const Settings& a = settings();
  EXPECT_EQ(a.hardware_dir, "/first");
  EXPECT_EQ(&settings(), &a);  // unchanged environment: the same reading
  ::setenv("SOLBENCH_HARDWARE_DIR", "/second", 1);
  EXPECT_EQ(settings().hardware_dir, "/second");
  EXPECT_EQ(a.hardware_dir, "/first");  // an earlier reading stays valid
  ::unsetenv("SOLBENCH_HARDWARE_DIR");
  EXPECT_TRUE(settings().hardware_dir.empty());
}

TEST(Settings, ScopedSettingsOverrideAndNest) {
  Settings one;
  one.gpu_timer = "events";
  {
    ScopedSettings outer(one);
    EXPECT_EQ(settings().gpu_timer, "events");
    Settings two;
    two.gpu_timer = "cupti";
    {
      ScopedSettings inner(two);
      ::setenv("SOLBENCH_GPU_TIMER", "profiler", 1);  // the override wins
      EXPECT_EQ(settings().gpu_timer, "cupti");
      ::unsetenv("SOLBENCH_GPU_TIMER");
    }
    EXPECT_EQ(settings().gpu_timer, "events");
  }
  EXPECT_EQ(settings().gpu_timer, read_settings().gpu_timer);
}

}  // namespace
}  // namespace solbench
