"""A look at a Python solution's own sources before any of it runs.

The sources are parsed (ast.parse executes nothing) and walked for what a kernel
never needs: patching time, torch or the harness, reaching the driver, CUPTI or NVML
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


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str):
        self.path = path
        self.findings: list[dict] = []
        self.aliases: dict[str, str] = {}  # local name -> module path it stands for
        self.uses_ctypes = False

    def add(self, node, rule, severity, message):
        self.findings.append({"rule": rule, "file": self.path, "line": getattr(node, "lineno", 0),
                              "severity": severity, "message": message})

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head, head)
        return base + ("." + rest if rest else "")

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

    def check_target(self, node, target, value=None):
        name = self.resolve(_dotted(target))
        if isinstance(target, ast.Attribute) and name.split(".")[0] in PROTECTED_ROOTS:
            if isinstance(value, ast.Constant):
                # A setting (torch.backends.cuda.matmul.allow_tf32 = True, an Inductor
                # config flag): legitimate, but global to the worker.
                self.add(node, "setting", "warn",
                         f"sets {name}: a global setting, which also applies to the reference "
                         "while both run in one worker")
            else:
                self.add(node, "patch", "deny", f"replaces {name}")
        if isinstance(target, ast.Subscript) and self.resolve(_dotted(target.value)) == "sys.modules":
            self.add(node, "patch", "deny", "replaces a module in sys.modules")

    def visit_Assign(self, node):
        for t in node.targets:
            for sub in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                self.check_target(node, sub, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.check_target(node, node.target)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self.check_target(node, t)
        self.generic_visit(node)

    def visit_Call(self, node):
        name = self.resolve(_dotted(node.func))
        if name in DENIED_CALLS:
            self.add(node, "call", "deny", f"calls {name}: {DENIED_CALLS[name]}")
        elif name in WARNED_CALLS:
            self.add(node, "call", "warn", f"calls {name}: {WARNED_CALLS[name]}")
        if name in ("setattr", "builtins.setattr", "delattr") and node.args:
            target = self.resolve(_dotted(node.args[0]))
            if target.split(".")[0] in PROTECTED_ROOTS and target:
                self.add(node, "patch", "deny", f"{name}() on {target}")
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
        v = _Visitor(path)
        v.visit(tree)
        findings.extend(v.findings)
    return findings
