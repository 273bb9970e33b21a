#!/usr/bin/env python3
"""An agent loop over `import solbench`: propose a solution, evaluate it, read the score,
keep the best.

The "agent" here is a fixed list of edits to a CPU RMSNorm kernel (the bundled problem
problems/001_rmsnorm_llama3_8b_h4096); a real agent would ask a model for the next
candidate, given the previous documents (status, errors, latency, SOL score). Each
candidate is written to a solution.json and evaluated by solbench in its sandboxed
workers; this process only reads the JSON document that comes back.

    PYTHONPATH=build/src/pyapi python3 examples/agent_loop.py [--workdir DIR]

(or `pip install .` first). The score needs a hardware model for T_SOL: the CPU has
none, so the loop scores against the H100 SXM's bound (--arch), as the README's worked
example does. The first evaluation measures the baseline T_b (torch.compile, in a worker
of its own) and records it in the loop's store; the others find it there.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import solbench

REPO = Path(__file__).resolve().parents[1]
PROBLEM = REPO / "problems" / "001_rmsnorm_llama3_8b_h4096"
TEMPLATE = PROBLEM / "solutions" / "cpp_rowwise" / "solution.json"
WORKLOADS = ["9063bb6e", "a1bb35f7", "5c887a04"]  # batch 2, 16, 128

# The row loop of the bundled kernel, and the candidates' versions of it.
ROWWISE = json.loads(TEMPLATE.read_text())["sources"][0]["content"]
LOOP_START = ROWWISE.index("    float acc[8]")
LOOP_END = ROWWISE.index("    uint16_t* yr = ys + r * h;")

CANDIDATES = {
    # One accumulator: a serial dependency chain the compiler may not reorder.
    "scalar": """    float ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += bf16_to_float(xr[i]) * bf16_to_float(xr[i]);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-5f);
""",
    # Double precision: more accurate, slower.
    "double_acc": """    double ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += double(bf16_to_float(xr[i])) * bf16_to_float(xr[i]);
    const float inv = 1.0f / std::sqrt(float(ss / double(h)) + 1e-5f);
""",
    # A bug an agent might write: the mean of squares over the wrong count.
    "wrong_mean": """    float ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += bf16_to_float(xr[i]) * bf16_to_float(xr[i]);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h / 2) + 1e-5f);
""",
    # Eight independent partial sums: the bundled kernel's loop.
    "rowwise8": ROWWISE[LOOP_START:LOOP_END],
}


def propose(name: str, loop: str, workdir: Path) -> Path:
    """Writes candidate `name` as a solution file and returns its path."""
    sol = json.loads(TEMPLATE.read_text())
    sol["name"] = f"agent_{name}"
    sol["description"] = f"agent_loop.py candidate {name}"
    sol["sources"][0]["content"] = ROWWISE[:LOOP_START] + loop + ROWWISE[LOOP_END:]
    path = workdir / f"{name}.json"
    path.write_text(json.dumps(sol, indent=2))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, help="where candidates and the store go "
                    "(default: a temporary folder)")
    ap.add_argument("--arch", default="h100_sxm", help="hardware model for T_SOL")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="solbench-agent-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "agent.db"
    print(f"problem {PROBLEM.name}, workloads {', '.join(WORKLOADS)}, T_SOL on {args.arch}")
    print(f"store {db}\n")

    best = None  # (score, name, doc)
    print(f"{'candidate':<12} {'status':<22} {'latency_ms':>11} {'S':>6} {'wall_s':>7}")
    for name, loop in CANDIDATES.items():
        path = propose(name, loop, workdir)
        start = time.monotonic()
        try:
            doc = solbench.eval(PROBLEM, path, workloads=WORKLOADS, arch=args.arch, db=db,
                                time_budget_ms=100)
        except solbench.Error as e:  # input the CLI refused: the agent's file is malformed
            print(f"{name:<12} refused: {e}")
            continue
        wall = time.monotonic() - start
        statuses = doc["summary"]["statuses"]
        status = ",".join(f"{n}x{s}" for s, n in statuses.items())
        latencies = [r["evaluation"]["solbench_timing"]["median_ms"] for r in doc["results"]
                     if r["evaluation"].get("solbench_timing")]
        latency = f"{sum(latencies) / len(latencies):.4f}" if latencies else "-"
        score = doc["summary"]["sol_score"]["mean"]
        if statuses.keys() - {"PASSED"}:
            # What a real agent would feed back to its model: the first failure's log line.
            failed = next(r for r in doc["results"] if r["evaluation"]["status"] != "PASSED")
            reason = failed["evaluation"]["log"].strip().splitlines()[-1][:120]
            print(f"{name:<12} {status:<22} {latency:>11} {'-':>6} {wall:>7.2f}\n    {reason}")
            continue
        print(f"{name:<12} {status:<22} {latency:>11} {score:>6.3f} {wall:>7.2f}")
        if score is not None and (best is None or score > best[0]):
            best = (score, name, doc)

    if best is None:
        print("\nno candidate passed")
        return
    print(f"\nbest: {best[1]} (mean SOL score {best[0]:.3f})")
    board = solbench.leaderboard(db=db, definition=PROBLEM.name)
    print("leaderboard (solbench.leaderboard):")
    for row in board["leaderboard"]:
        s = row["mean_score"]
        print(f"  {row['rank']}. {row['solution']:<18} passed {row['passed']}/{row['workloads']}"
              f"  S {'-' if s is None else f'{s:.3f}'}")


if __name__ == "__main__":
    main()
