"""Fixtures for the `import solbench` tests: a private cache folder (build cache, SOL
cache, results store) for the whole session, and the CLI run directly for comparison."""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(os.environ.get("SOLBENCH_REPO", Path(__file__).resolve().parents[2]))
PROBLEM = REPO / "problems" / "001_rmsnorm_llama3_8b_h4096"
CPP_SOLUTION = PROBLEM / "solutions" / "cpp_rowwise" / "solution.json"
WORKLOAD = "71630508"  # batch_size 1: the smallest workload


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Every call (and the CLI run for comparison) uses one private cache folder."""
    cache = tmp_path_factory.mktemp("solbench-cache")
    old = os.environ.get("SOLBENCH_CACHE_DIR")
    os.environ["SOLBENCH_CACHE_DIR"] = str(cache)
    yield cache
    if old is None:
        os.environ.pop("SOLBENCH_CACHE_DIR", None)
    else:
        os.environ["SOLBENCH_CACHE_DIR"] = old


class Cli:
    """The solbench executable run directly, as a shell would."""

    def __init__(self, exe):
        self.exe = exe

    def __call__(self, *args):
        return subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True)

    def json(self, *args):
        p = self(*args)
        assert p.stdout.strip(), f"no document from {args}: {p.stderr}"
        return json.loads(p.stdout)

    def error(self, *args):
        """The CLI's message: its `error:` lines without the prefix."""
        p = self(*args)
        assert p.returncode != 0, f"{args} succeeded"
        lines = [l[len("error: "):] for l in p.stderr.splitlines() if l.startswith("error: ")]
        return "\n".join(lines), p.returncode


@pytest.fixture(scope="session")
def cli():
    import solbench
    return Cli(solbench.executable())


def solution_variant(path, name, content_edit=None, **spec_edit):
    """A copy of the bundled C++ solution with another name and edited source/spec."""
    sol = json.loads(CPP_SOLUTION.read_text())
    sol["name"] = name
    if content_edit:
        old, new = content_edit
        assert old in sol["sources"][0]["content"]
        sol["sources"][0]["content"] = sol["sources"][0]["content"].replace(old, new)
    sol["spec"].update(spec_edit)
    path.write_text(json.dumps(sol, indent=2))
    return path
