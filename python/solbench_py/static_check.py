"""A look at a Python solution's own sources before any of it runs.

The sources are parsed (ast.parse executes nothing) and walked for what a kernel
never needs: patching time, torch or the harness (a plain value assigned to torch's
or Triton's configuration is tuning, allowed), reaching the driver, CUPTI or NVML
through ctypes, starting threads or processes, opening sockets, walking the
interpreter's frames or objects. Toolchains the solution uses (Triton, Inductor)
are not its sources and are not looked at.

Each finding is {"rule", "file", "line", "severity", "message"}; severity "deny"
makes the evaluation REWARD_HACK, "warn" is reported only, for constructs with a
legitimate use (said in the message). The sandbox still enforces what it can
(docs/sandbox.md): this look is for a clear report, and for what no sandbox sees,
such as replacing torch.cuda.synchronize inside the worker.
"""
from __future__ import annotations

import ast
import re

# Modules whose attributes a solution must not replace: timers, torch and its
# runtimes, the interpreter, and the harness itself.
PROTECTED_ROOTS = {"time", "torch", "triton", "sys", "os", "builtins", "gc", "ctypes",
                   "solbench_py", "threading", "importlib", "inspect", "numpy", "np"}
# Libraries whose presence in a ctypes call means talking to the GPU's runtime or
# its profilers behind the harness's back.
DRIVER_LIBRARIES = ("libcuda", "cupti", "nvml", "nvidia-ml", "libcudart", "nvperf")
DENIED_IMPORTS = {
    "socket": "opens network connections",
    "multiprocessing": "starts processes",
    "solbench_py": "imports the harness",
    "pty": "starts processes on a terminal",
    "asyncio.subprocess": "starts processes",
}
DENIED_CALLS = {
    "os.fork": "starts a process", "os.forkpty": "starts a process",
    "os.system": "runs a shell command", "os.popen": "runs a shell command",
    "os.execv": "replaces the process", "os.execve": "replaces the process",
    "os.execl": "replaces the process", "os.execvp": "replaces the process",
    "os.spawnv": "starts a process", "os.spawnl": "starts a process",
    "os.posix_spawn": "starts a process", "os.kill": "signals a process",
    "threading.Thread": "starts a thread that can work outside the timed call",
    "_thread.start_new_thread": "starts a thread",
    "concurrent.futures.ThreadPoolExecutor": "starts threads",
    "concurrent.futures.ProcessPoolExecutor": "starts processes",
    "sys._getframe": "reads the harness's stack frames",
    "inspect.currentframe": "reads the harness's stack frames",
    "inspect.stack": "reads the harness's stack frames",
    "gc.get_objects": "walks every object of the worker (the harness's included)",
    "gc.get_referrers": "walks the harness's objects",
    "sys.settrace": "hooks the interpreter", "sys.setprofile": "hooks the interpreter",
    "sys.addaudithook": "hooks the interpreter",
}
WARNED_CALLS = {
    "subprocess.run": "starts a program (allowed for toolchains only; the sandbox refuses others)",
    "subprocess.Popen": "starts a program (allowed for toolchains only; the sandbox refuses others)",
    "subprocess.check_output": "starts a program (toolchains only)",
    "subprocess.check_call": "starts a program (toolchains only)",
}
# Configuration of torch and Triton: a plain value assigned there tunes their own
# compilers and libraries (torch._dynamo.config.cache_size_limit = 512,
# torch.backends.cudnn.benchmark = True). Anything else, a function above all, is a
# replacement. is_config_namespace decides by the path; runtime.torch_changes uses it too.
CONFIG_ROOTS = ("torch", "triton")
# Methods of a configuration namespace that write it (torch's ConfigModule).
CONFIG_WRITERS = ("update", "patch")
# Functions of torch's ConfigModule: reading one is no configuration value.
CONFIG_METHODS = {"update", "patch", "save_config", "load_config", "get_config_copy",
                  "codegen_config", "get_hash", "to_dict", "shallow_copy_dict"}
# Builtins whose result is a plain value whatever they are given, and those whose
# result is made of their (plain) arguments.
PLAIN_RESULT_CALLS = {"int", "float", "bool", "str", "bytes", "complex", "len", "repr", "hash",
                      "format", "ord", "chr"}
PLAIN_ARGS_CALLS = {"max", "min", "abs", "round", "sum", "tuple", "list", "set", "frozenset",
                    "sorted", "pow", "divmod"}
ENV_READS = ("os.environ.get", "os.getenv")
_TORCH_DTYPE = re.compile(r"q?u?int\d*|float\d*(_e\d+m\d+\w*)?|bfloat16|complex\d*|bool|half|double|"
                          r"long|short|cfloat|cdouble|chalf")
WARNED_IMPORTS = {
    "ctypes": "loads native code; legitimate for a kernel library, denied when it names "
              "the driver, CUPTI or NVML",
    "threading": "locks are legitimate; starting a Thread is denied",
}


def _dotted(node) -> str:
    """'torch.cuda.synchronize' for an attribute chain on a name, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def is_config_namespace(path: str) -> bool:
    """Whether `path` (a module or object path) holds torch's or Triton's configuration:
    torch.backends.<backend>..., or a path with a part named *config or knobs below
    torch or triton (torch._dynamo.config, torch._inductor.config.triton,
    torch._functorch.config, triton.knobs.autotuning). The namespace itself, not the
    name set in it: `torch._dynamo.config = x` replaces the namespace."""
    parts = path.split(".")
    if len(parts) < 2 or parts[0] not in CONFIG_ROOTS:
        return False
    if parts[1] == "backends":
        return len(parts) >= 3
    return any(p.strip("_").lower().endswith("config") or p == "knobs" for p in parts[1:])


def _element(value):
    """An expression standing for an element of `value` (a loop variable, an
    unpacked name)."""
    return ast.Subscript(value=value, slice=ast.Constant(0), ctx=ast.Load())


class _Bindings(ast.NodeVisitor):
    """name -> every value the file binds it to (None: not an expression we can look
    at, such as a def, an import, a parameter; a loop variable is an element of what
    it iterates). Scopes are not told apart: a name is a plain value only if every
    binding of it in the file is."""

    def __init__(self):
        self.values: dict = {}

    def bind(self, target, value):
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                    and not any(isinstance(e, ast.Starred) for e in value.elts + target.elts):
                parts = value.elts
            else:  # an element of the value: plain when the value is
                parts = [None if value is None else _element(value)] * len(target.elts)
            for t, v in zip(target.elts, parts):
                self.bind(t, v)

    def bind_name(self, name):
        if name:
            self.values.setdefault(name, []).append(None)

    def visit_Assign(self, node):
        for t in node.targets:
            self.bind(t, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.bind(node.target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.bind(node.target, ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()),
                                             op=node.op, right=node.value))
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self.bind(node.target, node.value)
        self.generic_visit(node)

    def _loop(self, node):
        self.bind(node.target, _element(node.iter))
        self.generic_visit(node)

    visit_For = visit_AsyncFor = visit_comprehension = _loop

    def visit_withitem(self, node):
        if node.optional_vars is not None:
            self.bind(node.optional_vars, None)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        self.bind_name(node.name)
        self.generic_visit(node)

    def _definition(self, node):
        self.bind_name(getattr(node, "name", None))
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_arg(self, node):
        self.bind_name(node.arg)

    def visit_Import(self, node):
        for a in node.names:
            self.bind_name((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_MatchAs(self, node):
        self.bind_name(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        self.bind_name(node.name)

    def visit_MatchMapping(self, node):
        self.bind_name(node.rest)
        self.generic_visit(node)


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str, bindings: dict):
        self.path = path
        self.findings: list[dict] = []
        self.aliases: dict[str, str] = {}  # local name -> module path it stands for
        self.bindings = bindings
        self.uses_ctypes = False

    def add(self, node, rule, severity, message):
        self.findings.append({"rule": rule, "file": self.path, "line": getattr(node, "lineno", 0),
                              "severity": severity, "message": message})

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head, head)
        return base + ("." + rest if rest else "")

    def protected(self, path: str) -> bool:
        return bool(path) and path.split(".")[0] in PROTECTED_ROOTS

    # -- plain values: what configuration takes (numbers, booleans, strings, None,
    #    containers of them), as far as the source shows it.

    def plain(self, node, seen=None) -> bool:
        seen = set() if seen is None else seen
        p = lambda n: self.plain(n, seen)  # noqa: E731
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(p(e) for e in node.elts)
        if isinstance(node, ast.Starred):
            return p(node.value)
        if isinstance(node, ast.Dict):
            return all(k is None or p(k) for k in node.keys) and all(p(v) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            return p(node.operand)
        if isinstance(node, ast.BinOp):
            return p(node.left) and p(node.right)
        if isinstance(node, ast.BoolOp):
            return all(p(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return p(node.left) and all(p(c) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return p(node.body) and p(node.orelse)
        if isinstance(node, ast.JoinedStr):  # an f-string is a str whatever it formats
            return True
        if isinstance(node, ast.Subscript):
            return self.resolve(_dotted(node.value)) == "os.environ" or p(node.value)
        if isinstance(node, ast.Attribute):
            # A configuration value read (max(torch._dynamo.config.cache_size_limit, 512)),
            # or a torch dtype.
            name = self.resolve(_dotted(node))
            ns, _, attr = name.rpartition(".")
            if is_config_namespace(ns):
                return not attr.startswith("__") and attr not in CONFIG_METHODS
            return ns == "torch" and bool(_TORCH_DTYPE.fullmatch(attr))
        if isinstance(node, ast.Name):
            values = self.bindings.get(node.id)
            if not values:
                return False  # a builtin or a name from elsewhere: not known to be plain
            if node.id in seen:
                return True  # x = x + 1: decided by x's other bindings
            seen.add(node.id)
            return all(v is not None and p(v) for v in values)
        if isinstance(node, ast.Call):
            return self.plain_call(node, p)
        return False

    def plain_call(self, node, p) -> bool:
        fn = node.func
        args_plain = lambda: all(p(a) for a in node.args) and \
            all(p(k.value) for k in node.keywords)  # noqa: E731
        if isinstance(fn, ast.Attribute) and not fn.attr.startswith("__") and p(fn.value) \
                and args_plain():
            # A method of a plain value ({...}.items(), "a,b".split(","), LIMIT.bit_length()):
            # plain values are builtin types, whose methods give plain values.
            return True
        if isinstance(fn, ast.Name) and fn.id not in self.bindings:
            if fn.id in PLAIN_RESULT_CALLS:
                return True
            if fn.id in PLAIN_ARGS_CALLS:
                return args_plain()
        name = self.resolve(_dotted(fn))
        if name in ENV_READS:  # a string, or the default
            return len(node.args) < 2 or p(node.args[1])
        if name in ("getattr", "builtins.getattr") and len(node.args) >= 2:
            ns = self.resolve(_dotted(node.args[0]))
            return is_config_namespace(ns) and (len(node.args) < 3 or p(node.args[2]))
        return False

    def config_write(self, node, ns: str, what: str, values: list) -> bool:
        """A write of `values` into configuration namespace `ns`: a warning when every
        one is plain. Returns False when `ns` is no configuration (the caller decides)."""
        if not is_config_namespace(ns):
            return False
        bad = [v for v in values if v is None or not self.plain(v)]
        if bad:
            self.add(node, "patch", "deny",
                     f"{what} with something that is not a plain value (configuration takes "
                     "numbers, booleans, strings, None and tuples, lists or dicts of them; a "
                     "function or an object there replaces behaviour)")
        else:
            self.add(node, "setting", "warn",
                     f"{what.replace('replaces', 'sets', 1)}: torch/Triton configuration, a "
                     "plain value (tuning; it applies to the solution's own worker)")
        return True

    # -- imports

    def check_import(self, node, module: str):
        for name, why in DENIED_IMPORTS.items():
            if module == name or module.startswith(name + "."):
                self.add(node, "import", "deny", f"imports {module}: {why}")
                return
        top = module.split(".")[0]
        if top in WARNED_IMPORTS:
            self.add(node, "import", "warn", f"imports {module}: {WARNED_IMPORTS[top]}")
        if top == "ctypes":
            self.uses_ctypes = True

    def visit_Import(self, node):
        for a in node.names:
            self.check_import(node, a.name)
            self.aliases[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level == 0:
            self.check_import(node, module)
            for a in node.names:
                self.check_import(node, f"{module}.{a.name}")
                self.aliases[a.asname or a.name] = f"{module}.{a.name}"
        self.generic_visit(node)

    # -- assignments

    def dict_owner(self, node) -> str:
        """X for `X.__dict__` or `vars(X)` (the namespace behind a mapping), else ''."""
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return self.resolve(_dotted(node.value))
        if isinstance(node, ast.Call) and self.resolve(_dotted(node.func)) in ("vars", "builtins.vars") \
                and len(node.args) == 1:
            return self.resolve(_dotted(node.args[0]))
        return ""

    def check_target(self, node, target, value=None):
        name = self.resolve(_dotted(target))
        if isinstance(target, ast.Attribute) and self.protected(name):
            ns = name.rpartition(".")[0]
            if value is None or not self.config_write(node, ns, f"replaces {name}", [value]):
                self.add(node, "patch", "deny", f"replaces {name}")
        if isinstance(target, ast.Subscript):
            if self.resolve(_dotted(target.value)) == "sys.modules":
                self.add(node, "patch", "deny", "replaces a module in sys.modules")
            owner = self.dict_owner(target.value)
            if self.protected(owner):
                what = f"replaces an attribute of {owner} through its __dict__"
                if value is None or not self.config_write(node, owner, what, [value]):
                    self.add(node, "patch", "deny", what)

    def visit_Assign(self, node):
        for t in node.targets:
            for sub in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                self.check_target(node, sub, node.value)
        # cfg = torch._dynamo.config: later writes through cfg are writes to it.
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            source = self.resolve(_dotted(node.value))
            if self.protected(source):
                self.aliases[node.targets[0].id] = source
            else:
                self.aliases.pop(node.targets[0].id, None)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.check_target(node, node.target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        # cfg.x += 1 writes cfg.x + 1: plain when both are.
        read = ast.Attribute(value=node.target.value, attr=node.target.attr, ctx=ast.Load()) \
            if isinstance(node.target, ast.Attribute) else node.target
        self.check_target(node, node.target, ast.BinOp(left=read, op=node.op, right=node.value))
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self.check_target(node, t)
        self.generic_visit(node)

    # -- calls

    def check_setattr(self, node, name):
        if name in ("setattr", "builtins.setattr", "object.__setattr__", "type.__setattr__"):
            if len(node.args) < 2:
                return
            target = self.resolve(_dotted(node.args[0]))
            if not self.protected(target):
                return
            attr = node.args[1]
            shown = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) \
                else "<a computed name>"
            value = node.args[2] if len(node.args) >= 3 else None
            if not self.config_write(node, target, f"{name}() replaces {target}.{shown}", [value]):
                self.add(node, "patch", "deny", f"{name}() on {target}")
        elif name.endswith("mock.patch.object") or name.endswith("mock.patch"):
            # unittest.mock.patch.object(torch, "rsqrt", f), mock.patch("torch.rsqrt", f):
            # the same write as setattr, undone when the patch ends.
            args = list(node.args)
            if name.endswith(".object"):
                if len(args) < 2:
                    return
                target = self.resolve(_dotted(args[0]))
                attr, rest = args[1], args[2:]
            else:
                first = args[0] if args else None
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    return
                target, _, shown = first.value.rpartition(".")
                attr, rest = ast.Constant(shown), args[1:]
            if not self.protected(target):
                return
            shown = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) \
                else "<a computed name>"
            new = rest[0] if rest else next((k.value for k in node.keywords if k.arg == "new"), None)
            if not self.config_write(node, target, f"{name}() replaces {target}.{shown}", [new]):
                self.add(node, "patch", "deny", f"{name}() on {target}.{shown}")
        elif name in ("delattr", "builtins.delattr", "object.__delattr__", "type.__delattr__"):
            target = self.resolve(_dotted(node.args[0])) if node.args else ""
            if self.protected(target):
                self.add(node, "patch", "deny", f"{name}() on {target}")

    def check_config_call(self, node, name):
        # torch._inductor.config.patch(max_autotune=True), cfg.update({...}),
        # torch.__dict__.update({...}), vars(torch).update(...).
        owner_node = node.func.value if isinstance(node.func, ast.Attribute) else None
        method = node.func.attr if owner_node is not None else ""
        if method not in CONFIG_WRITERS and method not in ("setdefault", "__setitem__"):
            return
        owner = self.dict_owner(owner_node)
        through_dict = bool(owner)
        if not through_dict:
            owner = name.rpartition(".")[0]
            if method not in CONFIG_WRITERS or not is_config_namespace(owner):
                return
        if not self.protected(owner):
            return
        values = list(node.args) + [k.value for k in node.keywords]
        what = (f"replaces attributes of {owner} through its __dict__" if through_dict
                else f"replaces {owner} entries through {method}()")
        if not self.config_write(node, owner, what, values):
            self.add(node, "patch", "deny", what)

    def visit_Call(self, node):
        name = self.resolve(_dotted(node.func))
        if name in DENIED_CALLS:
            self.add(node, "call", "deny", f"calls {name}: {DENIED_CALLS[name]}")
        elif name in WARNED_CALLS:
            self.add(node, "call", "warn", f"calls {name}: {WARNED_CALLS[name]}")
        self.check_setattr(node, name)
        self.check_config_call(node, name)
        if name.startswith("ctypes.") or self.uses_ctypes and name.split(".")[-1] in (
                "CDLL", "LoadLibrary", "cdll", "PyDLL"):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and \
                        any(lib in arg.value.lower() for lib in DRIVER_LIBRARIES):
                    self.add(node, "driver", "deny",
                             f"loads {arg.value} through ctypes: the driver, CUPTI and NVML are "
                             "the harness's")
        self.generic_visit(node)


def check_sources(sources: list) -> list:
    """Findings for [{path, content}] (Python files only; a file that does not parse
    is reported once, as a warning: the import will fail with Python's own error)."""
    findings = []
    for s in sources:
        path = s.get("path", "")
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(s.get("content", ""), filename=path)
        except SyntaxError as e:
            findings.append({"rule": "syntax", "file": path, "line": e.lineno or 0,
                             "severity": "warn", "message": f"does not parse: {e.msg}"})
            continue
        b = _Bindings()
        b.visit(tree)
        v = _Visitor(path, b.values)
        v.visit(tree)
        findings.extend(v.findings)
    return findings
