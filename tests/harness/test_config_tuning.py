#!/usr/bin/env python3
"""Configuration tuning is not a reward hack; replacing behaviour through a
configuration path is.

  - the static look (python/solbench_py/static_check.py): a plain value (number,
    boolean, string, None, containers of them, as the source shows it) assigned to
    torch's or Triton's configuration is a warning ("setting"); a function, a lambda,
    a name bound to one, or anything else there is denied ("patch"), and so is any
    value assigned to torch or time outside their configuration;
  - the run-time look (runtime.torch_changes): configuration values changed are not
    reported; the solution's own code put into configuration is, under any spelling.
Exit status 0 when every case holds."""
import importlib.util
import os
import sys
import tempfile
import types

from solbench_py import runtime
from solbench_py.static_check import check_sources, is_config_namespace

# (source, a substring of the message). Each must give a "setting" warning and no denial.
ALLOWED = [
    ("torch._dynamo.config.cache_size_limit = 512", "sets torch._dynamo.config.cache_size_limit"),
    ("torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 512)",
     "sets torch._dynamo.config.cache_size_limit"),
    ("import torch._dynamo as dynamo\n"
     "dynamo.config.cache_size_limit = max(getattr(dynamo.config, 'cache_size_limit', 8), 256)",
     "sets torch._dynamo.config.cache_size_limit"),
    ("torch._dynamo.config.cache_size_limit = -1", "sets torch._dynamo.config.cache_size_limit"),
    ("torch._dynamo.config.cache_size_limit *= 2", "sets torch._dynamo.config.cache_size_limit"),
    ("LIMIT = 1 << 9\nLIMIT += 8\ntorch._dynamo.config.cache_size_limit = LIMIT",
     "sets torch._dynamo.config.cache_size_limit"),
    ("torch._inductor.config.coordinate_descent_tuning = True",
     "sets torch._inductor.config.coordinate_descent_tuning"),
    ("from torch._inductor import config as ic\nic.triton.cudagraphs = False",
     "sets torch._inductor.config.triton.cudagraphs"),
    ("import os\ntorch._inductor.config.cpp.simdlen = int(os.environ.get('SIMD', '8'))",
     "sets torch._inductor.config.cpp.simdlen"),
    ("torch._inductor.config.cpp.cxx = (None, 'g++')", "sets torch._inductor.config.cpp.cxx"),
    ("torch._functorch.config.donated_buffer = None", "sets torch._functorch.config.donated_buffer"),
    ("torch._inductor.config.fallback_dtype = torch.float16",
     "sets torch._inductor.config.fallback_dtype"),
    ("torch.backends.cudnn.benchmark = True", "sets torch.backends.cudnn.benchmark"),
    ("torch.backends.cuda.matmul.allow_tf32 = True", "sets torch.backends.cuda.matmul.allow_tf32"),
    ("torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True",
     "sets torch.backends.cudnn.allow_tf32"),
    ("import triton\ntriton.knobs.autotuning.print = True", "sets triton.knobs.autotuning.print"),
    ("setattr(torch._dynamo.config, 'cache_size_limit', 64)",
     "setattr() sets torch._dynamo.config.cache_size_limit"),
    ("for k, v in {'max_autotune': True, 'epilogue_fusion': False}.items():\n"
     "    setattr(torch._inductor.config, k, v)", "setattr() sets torch._inductor.config"),
    ("torch._dynamo.config.update({'cache_size_limit': 64, 'suppress_errors': True})",
     "sets torch._dynamo.config entries through update()"),
    ("@torch._inductor.config.patch(max_autotune=True)\ndef f():\n    pass",
     "sets torch._inductor.config entries through patch()"),
    ("with torch._inductor.config.patch({'max_autotune': True}):\n    pass",
     "sets torch._inductor.config entries through patch()"),
    ("cfg = torch._inductor.config\ncfg.max_autotune = True", "sets torch._inductor.config.max_autotune"),
    ("torch._dynamo.config.__dict__['x'] = 3", "sets an attribute of torch._dynamo.config"),
]

# (source, a substring of the message). Each must be denied ("patch").
DENIED = [
    ("torch._dynamo.config.cache_size_limit = lambda: 512",
     "replaces torch._dynamo.config.cache_size_limit with something that is not a plain value"),
    ("def hook(g):\n    return g\ntorch._inductor.config.post_grad_custom_post_pass = hook",
     "replaces torch._inductor.config.post_grad_custom_post_pass with something"),
    ("hook = print\ntorch._inductor.config.post_grad_custom_post_pass = hook",
     "replaces torch._inductor.config.post_grad_custom_post_pass with something"),
    ("class P:\n    pass\ntorch._inductor.config.post_grad_custom_post_pass = P()",
     "replaces torch._inductor.config.post_grad_custom_post_pass with something"),
    ("torch._inductor.config.passes = [print]", "replaces torch._inductor.config.passes with something"),
    ("class E:\n    def __eq__(s, o):\n        return print\ntorch._dynamo.config.x = E() == 1",
     "replaces torch._dynamo.config.x with something"),
    ("def setup(limit):\n    torch._dynamo.config.cache_size_limit = limit",
     "replaces torch._dynamo.config.cache_size_limit with something"),
    ("torch._dynamo.config.x = torch._dynamo.config.patch", "replaces torch._dynamo.config.x with"),
    ("torch._inductor.config.x = torch.float_power", "replaces torch._inductor.config.x with"),
    ("torch.backends.cudnn.is_available = lambda: True",
     "replaces torch.backends.cudnn.is_available with something"),
    ("cfg = torch._inductor.config\ncfg.hook = lambda *a: None",
     "replaces torch._inductor.config.hook with something"),
    ("setattr(torch._dynamo.config, 'hook', print)", "setattr() replaces torch._dynamo.config.hook"),
    ("torch._dynamo.config.update({'hook': lambda: 0})",
     "replaces torch._dynamo.config entries through update() with something"),
    ("with torch._inductor.config.patch(post_grad_custom_post_pass=print):\n    pass",
     "replaces torch._inductor.config entries through patch() with something"),
    ("import triton\ntriton.Config.__init__ = lambda *a: None", "replaces triton.Config.__init__"),
    # Outside the configuration a plain value is no setting: the name is replaced.
    ("torch.rsqrt = 1", "replaces torch.rsqrt"),
    ("import time\ntime.perf_counter = 0.0", "replaces time.perf_counter"),
    ("torch._dynamo.config = 1", "replaces torch._dynamo.config"),
    ("torch.backends.cuda = None", "replaces torch.backends.cuda"),
    ("del torch._dynamo.config.cache_size_limit", "replaces torch._dynamo.config.cache_size_limit"),
    ("setattr(torch, 'rsqrt', 1)", "setattr() on torch"),
    ("torch.__dict__['rsqrt'] = print", "replaces an attribute of torch through its __dict__"),
    ("vars(torch).update(rsqrt=print)", "replaces attributes of torch through its __dict__"),
    ("from unittest import mock\nmock.patch.object(torch, 'rsqrt', print).start()",
     "mock.patch.object() on torch.rsqrt"),
    ("from unittest.mock import patch\npatch('time.perf_counter', lambda: 0.0).start()",
     "mock.patch() on time.perf_counter"),
]

NAMESPACES = {
    "torch._dynamo.config": True, "torch._inductor.config": True,
    "torch._inductor.config.triton": True, "torch._functorch.config": True,
    "torch.backends.cudnn": True, "torch.backends.cuda.matmul": True, "triton.knobs": True,
    "torch.__config__": True, "torch": False, "torch.backends": False, "torch.cuda": False,
    "torch._dynamo": False, "time": False, "config": False, "mylib.config": False,
}


def findings(code: str) -> list:
    return check_sources([{"path": "main.py", "content": "import torch\n" + code + "\n"}])


def check_static(failures: list) -> int:
    n = 0
    for code, message in ALLOWED:
        f = findings(code)
        denied = [x["message"] for x in f if x["severity"] == "deny"]
        settings = [x["message"] for x in f if x["rule"] == "setting" and x["severity"] == "warn"]
        if denied or not any(message in m for m in settings):
            failures.append(f"allowed {code!r}: denied {denied}, settings {settings}")
        n += 1
    for code, message in DENIED:
        f = findings(code)
        denied = [x["message"] for x in f if x["severity"] == "deny" and x["rule"] == "patch"]
        if not any(message in m for m in denied):
            failures.append(f"denied {code!r}: got {[x['message'] for x in f]}")
        n += 1
    for path, expected in NAMESPACES.items():
        if is_config_namespace(path) != expected:
            failures.append(f"is_config_namespace({path!r}) is {not expected}")
        n += 1
    return n


def check_runtime(failures: list) -> int:
    import torch

    root = tempfile.mkdtemp()
    sol_dir = os.path.join(root, "solution")
    os.makedirs(sol_dir)
    path = os.path.join(sol_dir, "main.py")
    with open(path, "w") as f:
        f.write("import functools\n"
                "def hook(*a):\n    return None\n"
                "class Pass:\n    def __call__(self, g):\n        return g\n"
                "partial_hook = functools.partial(hook, 1)\n")
    spec = importlib.util.spec_from_file_location("config_tuning_solution", path)
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)

    before = runtime.torch_fingerprint()
    runtime._SOLUTION_ROOTS[:] = [sol_dir + os.sep]
    n = 0

    def expect(what, want):
        nonlocal n
        n += 1
        got = runtime.torch_changes(before)
        if (want is None and got) or (want is not None and want not in got):
            failures.append(f"run time, {what}: torch_changes gave {got!r}, expected "
                            f"{'nothing' if want is None else repr(want)}")

    # torch's ConfigModule keeps values in a table of entries (torch >= 2.4); a stand-in
    # under a configuration name, with an entry class of torch's.
    cfg = types.ModuleType("torch._tuning_test.config")
    entry_class = type("_ConfigEntry", (), {"__module__": "torch.utils._config_module"})

    def entry(default):
        e = entry_class()
        e.default, e.user_override = default, None
        return e

    cfg._config = {"cache_size_limit": entry(8), "post_grad_custom_post_pass": entry(None)}
    sys.modules[cfg.__name__] = cfg
    saved = (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32,
             torch.backends.mkldnn.enabled)
    try:
        expect("nothing changed", None)
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.mkldnn.enabled = False
        cfg._config["cache_size_limit"].user_override = 512
        cfg.plain_list = [1, "a", None]
        expect("configuration values changed", None)
        torch.backends.cudnn.is_available = sol.hook
        expect("a solution function in torch.backends.cudnn", "torch.backends.cudnn.is_available")
        del torch.backends.cudnn.is_available
        expect("the function removed again", None)
        cfg._config["post_grad_custom_post_pass"].user_override = sol.Pass()
        expect("a solution object in a ConfigModule entry",
               "torch._tuning_test.config.post_grad_custom_post_pass")
        cfg._config["post_grad_custom_post_pass"].user_override = None
        cfg.hooks = [sol.partial_hook]
        expect("a partial of a solution function in a list", "torch._tuning_test.config.hooks")
        del cfg.hooks
        cfg.fn = print  # a builtin: not the solution's code
        expect("a builtin (not the solution's code)", None)
    finally:
        sys.modules.pop(cfg.__name__, None)
        (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32,
         torch.backends.mkldnn.enabled) = saved
        runtime._SOLUTION_ROOTS[:] = []
    return n


def main() -> int:
    failures: list = []
    n = check_static(failures) + check_runtime(failures)
    for f in failures:
        print("FAIL:", f)
    print(f"{n - len(failures)} of {n} cases hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
