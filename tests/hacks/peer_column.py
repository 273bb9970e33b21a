#!/usr/bin/env python3
"""The peer's column of the hack corpus: each entry evaluated by SOL-ExecBench's own CLI.

The peer (../shared/peer, carried to the GPU machine as .peer/peer by
scripts/fetch_peer.sh) reads the same solution.json format with its own rules:
`target_hardware` must be `B200` or `LOCAL`, C++ comes in only through the torch
binding (`cuda_cpp`), and it runs on a GPU only. So, per entry kind:

  pytorch_cuda, triton, cuda_torch  converted (target_hardware LOCAL; the rest as is)
  cuda_native, cpp_native           n/a: solbench's native ABI (include/solbench/kernel.h)
                                    has no counterpart in the peer; the class's
                                    torch-binding or Python entry stands for it
  pytorch, cpp_torch                n/a: CPU entries (the peer evaluates on a GPU only)

Entries that count their calls name the count HACK_CORRECT_CALLS (2: solbench's
`--rounds 2`). The peer always runs 10 correctness rounds, so the peer's copy gets
HACK_CORRECT_CALLS = 10 (the hack as it would be written against the peer), unless
`as_written` is set. Placeholders (@PROBLEM_DIR@, @CACHE_DIR@, @RUN_ID@) point into
the entry's own folder, as for solbench. The problem is a copy of the corpus's problem
with the workloads solbench evaluated for the entry (or the N smallest by input and
output bytes, solbench's --smallest rule).

Used by run_corpus.py --peer DIR; on its own, `python3 tests/hacks/peer_column.py
--check [--peer DIR]` converts every gpu_only entry and, where the peer's Python
package imports (it needs pydantic), validates each with the peer's own models.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

PEER_CORRECT_CALLS = 10  # eval_driver.py: `for _round in range(10)`, each calls the solution
_COUNT = re.compile(r"(\bHACK_CORRECT_CALLS\s*=\s*|#define\s+HACK_CORRECT_CALLS\s+)2\b")

NOT_IN_PEER = {
    "cuda_native": "n/a (solbench's native ABI: the peer loads C++ only through the torch binding)",
    "cpp_native": "n/a (solbench's native ABI, CPU: the peer has neither)",
    "pytorch": "n/a (CPU entry: the peer evaluates on a GPU only)",
    "cpp_torch": "n/a (CPU entry: the peer evaluates on a GPU only)",
}
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
               "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "float4_e2m1": 1, "float4_e2m1fn_x2": 1}


def tuned(text: str, calls: int) -> tuple[str, bool]:
    """The source with HACK_CORRECT_CALLS set to `calls`, and whether it had one."""
    out, n = _COUNT.subn(lambda m: m.group(1) + str(calls), text)
    return out, n > 0


def peer_solution(entry: dict, sol: dict, as_written: bool = False) -> tuple[dict | None, str, bool]:
    """(the peer's solution.json, why not, whether HACK_CORRECT_CALLS was changed)."""
    kind = entry["kind"]
    if kind in NOT_IN_PEER:
        return None, NOT_IN_PEER[kind], False
    sol = json.loads(json.dumps(sol))
    spec = sol["spec"]
    spec["target_hardware"] = ["LOCAL"]
    if kind == "cuda_torch":
        spec["languages"] = ["cuda_cpp"]
        spec["binding"] = "torch"
    changed = False
    if not as_written:
        for s in sol["sources"]:
            s["content"], c = tuned(s["content"], PEER_CORRECT_CALLS)
            changed = changed or c
    return sol, "", changed


def _problem_bytes(definition: dict, workload: dict) -> int:
    axes = {k: v["value"] for k, v in definition["axes"].items() if v.get("type") == "const"}
    axes.update(workload.get("axes", {}))
    total = 0
    for group in ("inputs", "outputs"):
        for spec in definition[group].values():
            n = 1
            for d in spec.get("shape") or []:
                n *= axes[d] if isinstance(d, str) else int(d)
            total += n * DTYPE_BYTES.get(spec["dtype"], 4)
    return total


def smallest_workloads(problem_dir: str, n: int) -> list[str]:
    """uuids of the n workloads with the fewest input + output bytes (stable), as
    solbench's --smallest picks them (src/score/selection.cc)."""
    definition = json.load(open(os.path.join(problem_dir, "definition.json")))
    rows = [json.loads(l) for l in open(os.path.join(problem_dir, "workload.jsonl")) if l.strip()]
    rows = sorted(rows, key=lambda w: _problem_bytes(definition, w))  # sorted() is stable
    return [w["uuid"] for w in rows[:n]]


def install(wheels: str, site: str) -> str:
    """The peer's wheels installed into `site` (once); '' or what went wrong."""
    if os.path.isdir(os.path.join(site, "pydantic")):
        return ""
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--no-compile", "--no-cache-dir", "--upgrade", "--target", site,
                        *sorted(os.path.join(wheels, w) for w in os.listdir(wheels)
                                if w.endswith(".whl"))],
                       capture_output=True, text=True)
    return "" if p.returncode == 0 else (p.stdout + p.stderr)[-600:]


def _python_shim(root: str) -> str:
    """A folder whose `python` is this interpreter: the peer's CLI runs its compile and
    evaluation steps as `python ...` from PATH."""
    d = os.path.join(root, "python-shim")
    shim = os.path.join(d, "python")
    with _SHIM_LOCK:
        if os.path.exists(shim):
            return d
        os.makedirs(d, exist_ok=True)
        # A script, not a link: a virtual environment's interpreter is recognised by
        # the path it is started from.
        with open(shim + ".tmp", "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        os.chmod(shim + ".tmp", 0o755)
        os.replace(shim + ".tmp", shim)
    return d


_SHIM_LOCK = threading.Lock()


def placeholders(problem: str, cache: str):
    """The text filler of an entry's run: @PROBLEM_DIR@, @CACHE_DIR@ and a fresh @RUN_ID@
    (the corpus's solutions name the files they try to plant with them)."""
    subst = {"@PROBLEM_DIR@": problem, "@CACHE_DIR@": cache, "@RUN_ID@": os.urandom(6).hex()}

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace(k, v)
        return text
    return fill


def write_solution(entry: dict, sol: dict, work: str, fill) -> str:
    """Makes the folders the entry asks for, fills the placeholders of the solution's
    sources and writes it to WORK/solution.json; returns that path."""
    for d in entry.get("mkdirs", []):
        os.makedirs(fill(d), exist_ok=True)
    for s in sol["sources"]:
        s["content"] = fill(s["content"])
    path = os.path.join(work, "solution.json")
    json.dump(sol, open(path, "w"), indent=2)
    return path


def evaluate(peer: str, site: str, manifest: dict, entry: dict, root: str,
             uuids: list[str] | None = None, as_written: bool = False,
             timeout_s: float = 600) -> dict:
    """Runs one entry under the peer. The result has `status` (the first non-PASSED
    workload's status, else PASSED; `n/a` or `NO_RESULT` when there is none), `why`,
    latency/speedup of the first workload, `planted` (files of `absent` that exist)."""
    name = entry["name"]
    peer, site = os.path.abspath(peer), os.path.abspath(site)  # the CLI runs in `work`
    res = {"name": name, "status": "", "why": "", "tuned": False, "latency_ms": None,
           "reference_latency_ms": None, "speedup": None, "workloads": [], "planted": [],
           "wall_s": 0.0, "log": ""}
    sol = json.load(open(os.path.join(HERE, name, "solution.json")))
    psol, why, changed = peer_solution(entry, sol, as_written)
    if psol is None:
        res.update(status="n/a", why=why)
        return res
    res["tuned"] = changed
    work = os.path.join(root, "peer-" + name)
    problem = os.path.join(work, manifest["problem"])
    os.makedirs(problem)
    src_problem = os.path.join(REPO, "problems", manifest["problem"])
    shutil.copy(os.path.join(src_problem, "definition.json"), problem)
    uuids = uuids or smallest_workloads(src_problem, entry.get("workloads", 1))
    rows = {json.loads(l)["uuid"]: l.strip()
            for l in open(os.path.join(src_problem, "workload.jsonl")) if l.strip()}
    with open(os.path.join(problem, "workload.jsonl"), "w") as f:
        f.write("\n".join(rows[u] for u in uuids) + "\n")
    res["workloads"] = uuids
    cache = os.path.join(work, "cache")
    tmp = os.path.join(work, "tmp")
    os.makedirs(cache)
    os.makedirs(tmp)
    fill = placeholders(problem, cache)
    sol_path = write_solution(entry, psol, work, fill)
    before = {f: open(os.path.join(problem, f), "rb").read()
              for f in ("definition.json", "workload.jsonl")}
    traces = os.path.join(work, "traces.jsonl")
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join([site, os.path.join(peer, "sol-execbench", "src")]),
               PATH=_python_shim(root) + os.pathsep + os.environ.get("PATH", ""),
               TMPDIR=tmp,  # the peer's staging folder (tempfile.mkdtemp)
               TRITON_CACHE_DIR=os.path.join(cache, "triton"),
               TORCH_EXTENSIONS_DIR=os.path.join(cache, "torch_extensions"),
               TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"))
    cmd = [sys.executable, "-c", "from sol_execbench.cli.main import cli; cli()", problem,
           "--solution", sol_path, "-o", traces, "--timeout", str(int(max(60, timeout_s - 30))),
           "--compile-timeout", str(int(max(60, timeout_s - 30)))]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work,
                           timeout=max(60, timeout_s))
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = f"killed after {timeout_s:.0f} s; " + str(e.stderr or "")[-1000:]
    res["wall_s"] = round(time.monotonic() - t0, 2)
    results = [json.loads(l) for l in open(traces)] if os.path.exists(traces) else []
    if not results:
        res.update(status="NO_RESULT", why=_last_lines(out))
    else:
        chosen = next((t for t in results if t["evaluation"]["status"] != "PASSED"), results[0])
        ev = chosen["evaluation"]
        perf = ev.get("performance") or {}
        res.update(status=ev["status"], log=(ev.get("log") or "")[:4000],
                   latency_ms=perf.get("latency_ms"),
                   reference_latency_ms=perf.get("reference_latency_ms"),
                   speedup=perf.get("speedup_factor"))
        if ev["status"] != "PASSED":
            res["why"] = _first_line(ev.get("log") or "")
        res["statuses"] = [t["evaluation"]["status"] for t in results]
    for a in entry.get("absent", []):
        for path in glob.glob(fill(a)):  # "*": one folder level (a content-keyed cache)
            res["planted"].append(path.replace(work, "<entry>"))
            if path.startswith(("/tmp/solbench-hack-", "/dev/shm/solbench-hack-")):
                os.remove(path)  # outside the entry's folder
    for f, data in before.items():
        if open(os.path.join(problem, f), "rb").read() != data:
            res["planted"].append(f"{f} of the problem copy changed")
    if not results:
        res["log"] = out[-4000:]
    return res


def _first_line(text: str, n: int = 240) -> str:
    """The peer's message (its log starts with it; a traceback may follow)."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return lines[0][:n] if lines else ""


def _last_lines(text: str, n: int = 240) -> str:
    """The end of a log on one line (the reason, usually)."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-3:])[-n:]


def check(peer: str) -> int:
    """Converts every gpu_only entry; validates with the peer's models if they import."""
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    sys.path.insert(0, os.path.join(peer, "sol-execbench", "src"))
    try:
        from sol_execbench.core.data.solution import Solution  # needs pydantic
    except ImportError as e:
        Solution = None
        print(f"the peer's models do not import here ({e}): conversion only")
    bad = 0
    for e in manifest["entries"]:
        if not e["gpu_only"]:
            continue
        sol = json.load(open(os.path.join(HERE, e["name"], "solution.json")))
        psol, why, changed = peer_solution(e, sol)
        if psol is None:
            print(f"{e['name']:40s} {why}")
            continue
        verdict = "converted"
        if Solution is not None:
            try:
                Solution(**psol)
                verdict = "valid for the peer"
            except Exception as ex:  # pydantic's ValidationError
                verdict = f"INVALID: {str(ex)[:300]}"
                bad += 1
        print(f"{e['name']:40s} {verdict}{' (HACK_CORRECT_CALLS=10)' if changed else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--peer", default=os.path.join(REPO, "..", "shared", "peer"))
    a = ap.parse_args()
    if not a.check:
        ap.error("use run_corpus.py --peer DIR to run the peer; --check converts and validates")
    sys.exit(check(a.peer))
