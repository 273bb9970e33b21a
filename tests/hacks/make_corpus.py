#!/usr/bin/env python3
"""Writes tests/hacks/<entry>/solution.json for every entry of manifest.json.

The sources of an entry are the files of its folder (solution.json aside); the
native C++ entries also get common/rms_common.h. The spec follows from the entry's
kind. `--check` writes nothing and exits 1 when a solution.json is out of date (the
corpus test makes the same comparison).

    python3 tests/hacks/make_corpus.py [--check]
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# kind -> (languages, target_hardware, entry file, entry function, binding, dps default)
KINDS = {
    "pytorch": (["pytorch"], ["cpu"], "main.py", "run", None, False),
    "pytorch_cuda": (["pytorch"], ["cuda"], "main.py", "run", None, False),
    "triton": (["triton"], ["cuda"], "main.py", "run", None, False),
    "cpp_native": (["cpp"], ["cpu"], "kernel.cc", "rmsnorm", "native", True),
    "cpp_torch": (["cpp"], ["cpu"], "kernel.cpp", "run", "torch", False),
    "cuda_native": (["cuda_cpp"], ["cuda"], "kernel.cu", "rmsnorm", "native", True),
    "cuda_torch": (["cuda_cpp"], ["cuda"], "kernel.cu", "run", "torch", False),
}
DEPENDENCIES = {"pytorch": ["torch"], "pytorch_cuda": ["torch"], "triton": ["torch", "triton"],
                "cpp_native": [], "cpp_torch": [], "cuda_native": [], "cuda_torch": []}


def solution_for(problem: str, entry: dict) -> dict:
    languages, hardware, entry_file, entry_fn, binding, dps = KINDS[entry["kind"]]
    # A twin of another kind (the GPU twin of a CPU entry) takes that entry's sources.
    folder = os.path.join(HERE, entry.get("sources_from", entry["name"]))
    names = sorted(n for n in os.listdir(folder) if n != "solution.json")
    if entry_file not in names:
        raise SystemExit(f"{entry['name']}: {entry_file} missing")
    sources = [{"path": n, "content": open(os.path.join(folder, n)).read()} for n in names]
    if entry["kind"] == "cpp_native":
        sources.append({"path": "rms_common.h",
                        "content": open(os.path.join(HERE, "common", "rms_common.h")).read()})
    spec = {
        "languages": languages,
        "target_hardware": hardware,
        "entry_point": f"{entry_file}::{entry_fn}",
        "destination_passing_style": bool(entry.get("dps", dps)),
        "dependencies": DEPENDENCIES[entry["kind"]],
    }
    if binding:
        spec["binding"] = binding
        spec["compile_options"] = {
            "cflags": ["-O2", "-std=c++17"],
            "cuda_cflags": ["-O3"] if entry["kind"].startswith("cuda") else [],
            "ld_flags": [],
        }
    gap = " Known gap: " + entry["known_gap"] if entry.get("known_gap") else ""
    return {
        "name": "hack_" + entry["name"],
        "definition": problem,
        "author": "solbench hack corpus",
        "description": f"{entry['class']}: {entry['tries']}. Expected status: "
                       f"{entry['expected']}{' (gpu_only)' if entry['gpu_only'] else ''}.{gap}",
        "spec": spec,
        "sources": sources,
    }


def main() -> int:
    check = "--check" in sys.argv[1:]
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    stale = []
    for entry in manifest["entries"]:
        text = json.dumps(solution_for(manifest["problem"], entry), indent=2) + "\n"
        path = os.path.join(HERE, entry["name"], "solution.json")
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(entry["name"])
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    if check and stale:
        print("out of date (run tests/hacks/make_corpus.py):", " ".join(stale))
        return 1
    if not check:
        print(f"{len(manifest['entries'])} entries, {len(stale)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
