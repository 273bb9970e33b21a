// Reward hacks a solution can try on the CPU, through the real binary: each must end
// in REWARD_HACK naming what it did, and its honest twin must PASS (so the check
// is not simply refusing everything).
#include <gtest/gtest.h>

#include <string>

#include "python_solution_eval.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using testing::pytorch_source;
using RewardHack = testing::PythonSolutionEval;

TEST_F(RewardHack, ZeroingAnInputAfterComputingTheAnswer) {
  json doc = eval(solution("zero", pytorch_source("", "", "    hidden_states.zero_()")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "REWARD_HACK") << log(doc);
  EXPECT_NE(log(doc).find("changed its input 'hidden_states' in place in correctness round 1"),
            std::string::npos)
      << log(doc);
}

TEST_F(RewardHack, ChangingAnInputOnlyOnceTimingHasBegun) {
  // The first two calls (the correctness round and one more) behave; the sampled
  // timed calls are compared with the inputs they were given.
  json doc = eval(solution("later", pytorch_source("calls = [0]", "    calls[0] += 1",
                                                   "    if calls[0] > 2:\n        weight.mul_(2)")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "REWARD_HACK") << log(doc);
  EXPECT_NE(log(doc).find("changed an input in place during timing"), std::string::npos) << log(doc);
  EXPECT_NE(log(doc).find("'weight'"), std::string::npos) << log(doc);
}

TEST_F(RewardHack, AnInputTheReferenceWritesMayBeWrittenByTheSolutionToo) {
  // A reference that consumes its input (as references that update a cache in
  // place do): the solution may do the same, but still not touch the others.
  json def = json::parse(testing::read(problem_ / "definition.json"));
  def["reference"] =
      "import torch\n\n@torch.no_grad()\ndef run(hidden_states, weight):\n"
      "    x = hidden_states.float()\n"
      "    y = (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * weight.float())\n"
      "    out = y.to(hidden_states.dtype)\n"
      "    hidden_states.zero_()\n"
      "    return out\n";
  testing::write(problem_ / "definition.json", def.dump(2));
  json same = eval(solution("same", pytorch_source("", "", "    hidden_states.zero_()")));
  ASSERT_FALSE(same.empty());
  EXPECT_EQ(status(same), "PASSED") << log(same);
  json other = eval(solution("other", pytorch_source("", "", "    weight.zero_()")));
  ASSERT_FALSE(other.empty());
  EXPECT_EQ(status(other), "REWARD_HACK") << log(other);
  EXPECT_NE(log(other).find("'weight'"), std::string::npos) << log(other);
}

TEST_F(RewardHack, PatchingTheHarnessOrTorchIsSeenBeforeAnythingRuns) {
  // Each is refused by the static look with its file, line and rule; none ran
  // (the marker file the module would write at import is absent).
  const std::pair<const char*, const char*> cases[] = {
      {"torch.cuda.synchronize = lambda *a: None", "replaces torch.cuda.synchronize"},
      {"import time\ntime.perf_counter = lambda: 0.0", "replaces time.perf_counter"},
      {"import ctypes\nctypes.CDLL('libcupti.so')", "loads libcupti.so through ctypes"},
      {"import threading\nthreading.Thread(target=print).start()", "calls threading.Thread"},
      {"import multiprocessing", "imports multiprocessing"},
      {"import socket", "imports socket"},
      {"import solbench_py.runtime", "imports the harness"},
      {"import sys\nsys.modules['torch'] = None", "replaces a module in sys.modules"},
  };
  int k = 0;
  for (const auto& [code, message] : cases) {
    const std::string marker = (dir_ / ("ran" + std::to_string(k))).string();
    json doc = eval(solution("static" + std::to_string(k++),
                             pytorch_source("open('" + marker + "', 'w').write('x')\n" + code, "")));
    ASSERT_FALSE(doc.empty());
    EXPECT_EQ(status(doc), "REWARD_HACK") << code << "\n" << log(doc);
    EXPECT_NE(log(doc).find(message), std::string::npos) << log(doc);
    EXPECT_NE(log(doc).find("main.py:"), std::string::npos) << log(doc);
    EXPECT_FALSE(fs::exists(marker)) << code;
  }
}

TEST_F(RewardHack, LegitimateSettingsAreWarningsOnly) {
  // A global torch setting and a lock: reported in the environment, not refused.
  json doc = eval(solution("settings", pytorch_source(
      "import threading\n_lock = threading.Lock()\ntorch.backends.cudnn.benchmark = True", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  const std::string env = doc["environment"].dump();
  EXPECT_NE(env.find("sets torch.backends.cudnn.benchmark"), std::string::npos) << env;
}

TEST_F(RewardHack, AnHonestSolutionPasses) {
  json doc = eval(solution("honest", pytorch_source("", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
}

}  // namespace
}  // namespace solbench
