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

TEST_F(RewardHack, EveryCallSeesValuesNoEarlierCallSaw) {
  // The solution refuses to run on values it was given before (either input, any
  // call: correctness rounds, warm-up, timed). A value-keyed result cache could
  // hit only on such a repeat. The trace names the inputs that got fresh values.
  json doc = eval(solution("fresh", pytorch_source(
      "seen = set()",
      "    for t in (hidden_states, weight):\n"
      "        key = (t.shape, tuple(t.reshape(-1).view(torch.int16).tolist()))\n"
      "        if key in seen:\n"
      "            raise RuntimeError('given values seen in an earlier call')\n"
      "        seen.add(key)")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  const std::string all = doc.dump();
  EXPECT_NE(all.find("\"fresh_inputs\":[\"hidden_states\",\"weight\"]"), std::string::npos)
      << all.substr(0, 4000);
}

TEST_F(RewardHack, TheParentsClockBoundsEveryReportedCall) {
  // The parent handed out each call's seed and saw each request arrive: the trace
  // says how many calls it handed out and the median wall time of a timed call,
  // which bounds the median the worker reports (recomputed from its samples).
  json doc = eval(solution("clock", pytorch_source("", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  const json& ev = doc["results"][0]["evaluation"];
  const json& clock = ev["solbench_checks"]["parent_clock"];
  ASSERT_TRUE(clock.is_object()) << ev.dump().substr(0, 3000);
  const json& timing = ev["solbench_timing"];
  EXPECT_EQ(clock["timed_calls"].get<int>(), timing["count"].get<int>()) << clock.dump();
  EXPECT_EQ(clock["calls"].get<int>(),
            timing["count"].get<int>() + timing["warmup_calls"].get<int>()) << clock.dump();
  EXPECT_GE(clock["call_wall_median_ms"].get<double>(), clock["median_ms"].get<double>());
  EXPECT_DOUBLE_EQ(clock["median_ms"].get<double>(), timing["median_ms"].get<double>());
  // The kept calls are the parent's picks, among all calls (warm-up included).
  EXPECT_EQ(ev["solbench_checks"]["verification"]["checked_calls"].get<int>(),
            std::min(8, clock["calls"].get<int>())) << ev.dump().substr(0, 3000);
}

TEST_F(RewardHack, ReplacingATorchFunctionUnderABuiltNameIsNamed) {
  // The reference runs in the solution's worker: a torch method replaced at import
  // (past the static look) would run inside it.
  json doc = eval(solution("patch", pytorch_source(
      "_t = getattr(__import__('to' + 'rch'), 'Ten' + 'sor')\n"
      "_orig = _t.mean\n"
      "setattr(_t, 'me' + 'an', lambda self, *a, **k: _orig(self, *a, **k))", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "REWARD_HACK") << log(doc);
  EXPECT_NE(log(doc).find("torch.Tensor.mean"), std::string::npos) << log(doc);
}

TEST_F(RewardHack, GlobalStateThatSlowsTheReferenceDoesNotReachItsTiming) {
  // A TorchFunctionMode entered at import (no function replaced: the fingerprint
  // cannot see it) spins 1 ms in every pow/rsqrt outside the solution's own call.
  // The reference calls both: timed in the solution's worker it takes > 2 ms
  // instead of ~30 us. T_ref comes from a worker that never loads the solution.
  const fs::path sol = solution("mode", pytorch_source(
      "import time\n"
      "from torch.overrides import TorchFunctionMode\n"
      "_inside = False\n"
      "class _Slow(TorchFunctionMode):\n"
      "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
      "        if not _inside and getattr(func, '__name__', '') in ('rsqrt', 'pow'):\n"
      "            end = time.perf_counter() + 1e-3\n"
      "            while time.perf_counter() < end:\n"
      "                pass\n"
      "        return func(*args, **(kwargs or {}))\n"
      "_Slow().__enter__()",
      "    global _inside\n    _inside = True", "    _inside = False"));
  auto ref_ms = [](const json& d) {
    return d["results"][0]["evaluation"]["performance"].value("reference_latency_ms", 0.0);
  };
  // The attack works where the reference shares the solution's process (the
  // diagnostic switch keeps that path): the test could fail.
  ::setenv("SOLBENCH_REFERENCE_WORKER", "0", 1);
  json shared = eval(sol);
  ::unsetenv("SOLBENCH_REFERENCE_WORKER");
  ASSERT_FALSE(shared.empty());
  EXPECT_EQ(status(shared), "PASSED") << log(shared);
  EXPECT_GT(ref_ms(shared), 2.0) << shared.dump().substr(0, 3000);
  EXPECT_TRUE(shared["reference_workers"].empty());

  // Judged, in the same results store: the slowed T_ref above was not kept there for
  // this evaluation to reuse (only a T_ref timed where no solution code ran is), so
  // the reference worker times it.
  json doc = eval(sol);
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  EXPECT_GT(ref_ms(doc), 0.0);
  EXPECT_LT(ref_ms(doc), 0.5) << doc.dump().substr(0, 3000);
  EXPECT_FALSE(doc["results"][0]["evaluation"]["solbench_reference_timing"].contains("cached"));
  EXPECT_EQ(doc["reference_workers"].size(), 1u);
  EXPECT_EQ(doc["workers"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["evaluation"]["solbench_checks"].value("reference_timed_in", ""),
            "reference worker");
}

TEST_F(RewardHack, AKernelOfItsOwnForAnOverloadOfAFillingOperatorIsNamed) {
  // aten::fill_ has no default overload: its dispatch table is read overload by
  // overload, or a kernel registered for fill_.Scalar (which runs where the harness
  // fills and poisons, between a call's seed and its span) would go unseen.
  json doc = eval(solution("fill_kernel", pytorch_source(
      "_lib = []",
      "    if not _lib:\n"
      "        _lib.append(torch.library.Library('aten', 'IMPL'))\n"
      "        _lib[0].impl('fill_.Scalar', lambda self, value: self, 'CPU')")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "REWARD_HACK") << log(doc);
  EXPECT_NE(log(doc).find("a kernel of its own for aten::fill_.Scalar"), std::string::npos)
      << log(doc);
}

TEST_F(RewardHack, AnHonestSolutionPasses) {
  json doc = eval(solution("honest", pytorch_source("", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  // The checks after its calls, by kind; torch's answered from its last clean look.
  const json& phases = doc["results"][0]["evaluation"]["solbench_phases_ms"];
  for (const char* kind : {"checks_threads_ms", "checks_torch_ms", "checks_hooks_ms"})
    EXPECT_TRUE(phases.contains(kind)) << kind << " " << phases.dump();
  EXPECT_FALSE(phases.contains("checks_torch_full_looks")) << phases.dump();
}

TEST_F(RewardHack, AModuleImportedInEveryCallMakesEveryTorchCheckAFullLook) {
  // A standard module imported in every call replaces nothing (PASSED), but the
  // quick look cannot vouch for modules that changed: after the correctness call
  // and after the timed calls the torch check looks in full. (None of these modules
  // reads the stack at import, as namedtuple and enum do: that would be blamed.)
  json doc = eval(solution("imports", pytorch_source(
      "import importlib\n"
      "_next = iter(['colorsys', 'netrc', 'tabnanny', 'stringprep', 'graphlib', 'quopri',\n"
      "              'filecmp', 'plistlib', 'mailbox', 'fileinput'])",
      "    name = next(_next, None)\n"
      "    if name:\n"
      "        importlib.import_module(name)")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  const json& phases = doc["results"][0]["evaluation"]["solbench_phases_ms"];
  EXPECT_GE(phases.value("checks_torch_full_looks", 0.0), 2.0) << phases.dump();
}

}  // namespace
}  // namespace solbench
