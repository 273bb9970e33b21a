#!/usr/bin/env python3
"""Checks that the scoring baseline T_b runs the reference under torch.compile
(docs/score.md, "T_b: how the baseline is measured") for every problem given.

    python3 scripts/check_baseline_compile.py [--solbench EXE] [--device cuda:0]
        [--jobs N] [--timeout S] [--json FILE] PATH...

PATH is a problem folder (with definition.json) or a folder of them, searched
three levels down (problems/, a data set, one of its categories).

Per problem it runs the real path on the smallest workload (`solbench baseline
PROBLEM --smallest 1 --no-db --json`: the baseline worker, its sandbox and timer)
and prints the method and, for eager, why. Each eager fallback then gets a
control: in a fresh interpreter (the worker's: $SOLBENCH_PYTHON, else this one)
the reference is imported as an ordinary module and `torch.compile(run)` is
called on that workload's inputs. If the control compiles a graph and runs, the
fallback is solbench's doing ("solbench"); if it fails too, or Dynamo compiles
no graph of it either, the reference's ("reference", with the control's error).

Exit status: 0 when every eager fallback is the reference's own; 1 when one is
solbench's, or the control could not tell, or the torch has no torch.compile
(nothing checked), or `solbench baseline` itself failed (no document); 2 for a
usage error.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ workload inputs
# Also used by tests/python_runtime/test_baseline_compile.py.

def resolve_axes(definition: dict, workload: dict) -> dict:
    """Every axis's value for `workload`: const from the definition, var from the
    workload, expr evaluated (Python's arithmetic; `/` must divide exactly)."""
    axes: dict = {}
    exprs = {}
    for name, a in definition["axes"].items():
        if a["type"] == "const":
            axes[name] = int(a["value"])
        elif a["type"] == "var":
            axes[name] = int(workload["axes"][name])
        else:
            exprs[name] = a["expression"]
    while exprs:
        progress = False
        for name, text in list(exprs.items()):
            try:
                v = eval(text, {"__builtins__": {}}, dict(axes))  # noqa: S307 - the problem's own axes
            except NameError:
                continue
            if isinstance(v, float):
                if not v.is_integer():
                    raise ValueError(f"axis {name}: {text} = {v} is not an integer")
                v = int(v)
            axes[name] = v
            del exprs[name]
            progress = True
        if not progress:
            raise ValueError(f"axes {sorted(exprs)} cannot be resolved")
    return axes


def workload_spec(problem_dir: Path, definition: dict, workload: dict) -> dict:
    """The worker's spec of one workload (harness workload_spec) as far as input
    generation needs it: {inputs, axes, op_type, dataset_root}."""
    axes = resolve_axes(definition, workload)
    sources = workload.get("inputs") or {}
    inputs = []
    for name, t in definition["inputs"].items():
        shape = t.get("shape")
        src = sources.get(name) or {"type": "random"}
        if shape is None:
            if src.get("type") == "scalar":
                axes[name] = src["value"]
        else:
            shape = [axes[d] if isinstance(d, str) else int(d) for d in shape]
        inputs.append({"name": name, "dtype": t["dtype"], "shape": shape,
                       "description": t.get("description", ""), "source": src})
    root = problem_dir.resolve().parent.parent
    return {"inputs": inputs, "axes": axes, "op_type": definition.get("op_type", ""),
            "dataset_root": str(root)}


def load_workloads(problem_dir: Path) -> list:
    with open(problem_dir / "workload.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


# ------------------------------------------------------------------ the control

def control(problem_dir: Path, uuid: str, device: str) -> dict:
    """The reference as an ordinary module under torch.compile, on the workload's
    inputs: {ok, error?}. Runs in its own interpreter (--control)."""
    import importlib.util

    sys.path.insert(0, str(REPO / "python"))
    import torch
    from solbench_py import inputs as inputs_mod

    definition = json.loads((problem_dir / "definition.json").read_text())
    workload = next(w for w in load_workloads(problem_dir) if w["uuid"] == uuid)
    spec = workload_spec(problem_dir, definition, workload)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "control_reference.py"
        path.write_text(definition["reference"])
        module_spec = importlib.util.spec_from_file_location("control_reference", path)
        mod = importlib.util.module_from_spec(module_spec)
        sys.modules["control_reference"] = mod
        module_spec.loader.exec_module(mod)
        entry = definition.get("custom_inputs_entrypoint") or ""
        custom_fn = getattr(mod, entry) if entry else None
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        torch.set_grad_enabled(False)  # as the worker runs it
        if not hasattr(torch, "compile"):
            return {"ok": False, "error": f"torch.compile unavailable (torch {torch.__version__})"}
        values = inputs_mod.generate_inputs(spec, 200, 0, device, custom_fn)
        from torch._dynamo.utils import counters
        before = counters["stats"]["unique_graphs"]
        try:
            torch.compile(mod.run, dynamic=False)(*values)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the verdict
            first = (str(e).splitlines() or [""])[0][:300]
            return {"ok": False, "error": f"{type(e).__name__}: {first}"}
        if counters["stats"]["unique_graphs"] == before:
            # As the baseline judges it: Dynamo skipped the function, it ran eagerly.
            return {"ok": False, "error": "torch.compile compiled no graph here either"}
    return {"ok": True}


def run_control(python: str, problem_dir: Path, uuid: str, device: str, timeout: float) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--control", str(problem_dir), uuid, device]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": None, "error": f"the control timed out after {timeout:g} s"}
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"ok": None, "error": f"the control could not run (exit {p.returncode}): {tail}"}
    return json.loads(lines[-1])


# ------------------------------------------------------------------ the check

def find_problems(paths: list) -> list:
    found = []
    for p in map(Path, paths):
        if (p / "definition.json").is_file():
            found.append(p)
            continue
        if not p.is_dir():
            raise SystemExit(f"error: {p}: no such problem folder (expected definition.json "
                             "in it or in folders below it)")
        below = sorted({d.parent for pattern in ("*/definition.json", "*/*/definition.json",
                                                 "*/*/*/definition.json")
                        for d in p.glob(pattern)})
        if not below:
            raise SystemExit(f"error: {p}: no definition.json at or below this folder")
        found += below
    return found


def check(problem_dir: Path, args) -> dict:
    cmd = [args.solbench, "baseline", str(problem_dir), "--smallest", "1", "--no-db", "--json",
           "--device", args.device, "--rounds", "1", "--time-budget-ms", str(args.time_budget_ms),
           "--timeout", str(args.timeout)]
    row = {"problem": str(problem_dir), "method": None, "reason": None, "t_b_ms": None,
           "status": None, "cause": None, "control": None}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout + 120)
    except subprocess.TimeoutExpired:
        row["error"] = "solbench baseline timed out"
        return row
    try:
        doc = json.loads(p.stdout)
        entry = doc["problems"][0]
        if "error" in entry:
            row["error"] = "invalid problem: " + entry["error"]
            return row
        w = entry["workloads"][0]
    except (ValueError, KeyError, IndexError):
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        row["error"] = f"solbench baseline gave no document (exit {p.returncode}): {tail}"
        return row
    row.update(method=w.get("method"), reason=w.get("reason"), t_b_ms=w.get("t_b_ms"),
               status=w.get("status"), uuid=w["uuid"], torch=doc["environment"].get("torch"))
    if row["method"] == "eager" and (row["reason"] or "").startswith("torch.compile unavailable"):
        row["cause"] = "environment"  # torch < 2.0: nothing to check
    elif row["method"] == "eager":
        c = run_control(args.python, problem_dir, w["uuid"], args.device, args.timeout)
        row["control"] = c
        row["cause"] = {True: "solbench", False: "reference"}.get(c.get("ok"), "unknown")
    return row


def line(row: dict) -> str:
    name = Path(row["problem"]).name
    if "error" in row:
        return f"{name:<56} ERROR   {row['error']}"
    t_b = f"{row['t_b_ms']:.4g} ms" if row["t_b_ms"] else "no T_b"
    text = f"{name:<56} {row['method'] or '-':<13} {t_b:>12}"
    if row["method"] == "eager":
        text += f"  [cause: {row['cause']}] eager ({row['reason']})"
        if row["control"] and row["cause"] != "solbench":
            text += f"; control: {row['control'].get('error')}"
    elif not row["t_b_ms"]:
        text += f"  {row['reason']}"
    return text


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--control":
        try:
            result = control(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
        except Exception as e:  # noqa: BLE001 - could not even set the control up
            traceback.print_exc()
            result = {"ok": None, "error": f"control setup: {type(e).__name__}: {e}"[:300]}
        print(json.dumps(result))
        return 0

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="problem folders, or folders of them")
    ap.add_argument("--solbench", default=str(REPO / "build/src/cli/solbench"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--jobs", type=int, default=4, help="problems checked at once")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per problem")
    ap.add_argument("--time-budget-ms", type=float, default=100)
    ap.add_argument("--python", default=os.environ.get("SOLBENCH_PYTHON") or sys.executable,
                    help="the interpreter of the control (default: $SOLBENCH_PYTHON, else this)")
    ap.add_argument("--json", help="also write every row to this file")
    args = ap.parse_args()
    if not (os.access(args.solbench, os.X_OK) or shutil.which(args.solbench)):
        print(f"error: --solbench {args.solbench}: not an executable", file=sys.stderr)
        return 2
    problems = find_problems(args.paths)
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(check, p, args) for p in problems]
        for f in concurrent.futures.as_completed(futures):
            rows.append(f.result())
            print(line(rows[-1]), flush=True)
    compiled = sum(r["method"] == "torch.compile" for r in rows)
    eager = [r for r in rows if r["method"] == "eager"]
    by_cause = {c: sum(r["cause"] == c for r in eager)
                for c in ("solbench", "reference", "unknown", "environment")}
    errors = sum("error" in r for r in rows)
    no_t_b = sum(1 for r in rows if "error" not in r and not r["t_b_ms"])
    torch_versions = sorted({r.get("torch") or "?" for r in rows if "error" not in r})
    print(f"\n{len(rows)} problem(s) on {args.device} (torch {', '.join(torch_versions)}): "
          f"{compiled} torch.compile, {len(eager)} eager (solbench {by_cause['solbench']}, "
          f"reference {by_cause['reference']}, unknown {by_cause['unknown']}, "
          f"no torch.compile {by_cause['environment']}), {no_t_b} without a T_b, "
          f"{errors} error(s)")
    if by_cause["environment"]:
        print("this torch has no torch.compile (< 2.0): the compile path was not checked")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 1 if (by_cause["solbench"] or by_cause["unknown"] or by_cause["environment"] or
                 errors) else 0


if __name__ == "__main__":
    sys.exit(main())
