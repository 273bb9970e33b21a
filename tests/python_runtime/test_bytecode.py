"""bytecode.keep_bytecode (src/bridge/python.h keep_bytecode): a package with no
bytecode beside its sources gets it under solbench's prefix; one with bytecode,
and a prefix the user named, are left alone. Each case in a fresh interpreter
(the function changes sys.pycache_prefix for the whole process)."""
import os
import pathlib
import py_compile
import subprocess
import sys

REPO = pathlib.Path(os.environ.get("SOLBENCH_REPO", pathlib.Path(__file__).resolve().parents[2]))


def run(tmp: pathlib.Path, probe: str, env_extra=None) -> list:
    code = (f"import sys; sys.path[:0] = [{str(REPO / 'python')!r}, {str(tmp)!r}]\n"
            "from solbench_py.bytecode import keep_bytecode\n"
            f"print(keep_bytecode({str(tmp / 'prefix')!r}, {probe!r}))\n"
            f"import {probe}\n"
            "print(sys.pycache_prefix, sys.dont_write_bytecode)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # as on the GPU host: nothing would be written
    env.update(env_extra or {})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    return out.splitlines()


def package(tmp: pathlib.Path, name: str, with_bytecode: bool) -> pathlib.Path:
    p = tmp / name
    p.mkdir()
    (p / "__init__.py").write_text("X = 1\n")
    if with_bytecode:
        py_compile.compile(str(p / "__init__.py"))
    return p


def pycs(root: pathlib.Path) -> list:
    return sorted(x.name for x in root.rglob("*.pyc")) if root.exists() else []


def test_a_package_without_bytecode_gets_it_under_the_prefix(tmp_path):
    package(tmp_path, "stripped", with_bytecode=False)
    said, after = run(tmp_path, "stripped")
    assert said == f"bytecode under {tmp_path / 'prefix'}"
    assert after == f"{tmp_path / 'prefix'} False"
    assert [n for n in pycs(tmp_path / "prefix") if n.startswith("__init__")], \
        pycs(tmp_path / "prefix")
    assert not (tmp_path / "stripped" / "__pycache__").exists()  # the sources' folder untouched
    # The next process reads it from there (and finds nothing new to write).
    said_again, _ = run(tmp_path, "stripped")
    assert said_again == said


def test_bytecode_beside_the_sources_and_a_users_prefix_are_left_alone(tmp_path):
    package(tmp_path, "installed", with_bytecode=True)
    said, after = run(tmp_path, "installed")
    assert said == "bytecode beside the sources"
    assert after == "None True"
    assert pycs(tmp_path / "prefix") == []
    package(tmp_path, "stripped2", with_bytecode=False)
    said, after = run(tmp_path, "stripped2", {"PYTHONPYCACHEPREFIX": str(tmp_path / "mine")})
    assert said == f"kept the user's prefix {tmp_path / 'mine'}"
    assert pycs(tmp_path / "prefix") == []


def distribution(tmp: pathlib.Path, name: str, modules: dict, requires=()) -> None:
    """An installed distribution `name` (its dist-info with METADATA and RECORD)
    whose package holds `modules` ({relative path: source}), without bytecode."""
    for rel, text in modules.items():
        f = tmp / name / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    info = tmp / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("".join(f"{name}/{rel},,\n" for rel in modules)
                                 + f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


def test_precompile_compiles_the_probe_and_what_it_requires_in_the_background(tmp_path):
    distribution(tmp_path, "probe", {"__init__.py": "import helper\n", "sub/deep.py": "Y = 2\n",
                                     "tests/test_x.py": "Z = 3\n"},
                 requires=["helper>=0.5", "absent-dist", "other; extra == 'docs'"])
    distribution(tmp_path, "helper", {"__init__.py": "H = 1\n", "part.py": "P = 1\n"})
    distribution(tmp_path, "other", {"__init__.py": "O = 1\n"})
    prefix = tmp_path / "prefix"
    code = (f"import sys, time; sys.path[:0] = [{str(REPO / 'python')!r}, {str(tmp_path)!r}]\n"
            "from solbench_py.bytecode import keep_bytecode\n"
            f"print(keep_bytecode({str(prefix)!r}, 'probe', True, 2))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The starter's output ends with it: the background group holds none of its pipes.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=60).stdout.strip()
    assert out == f"bytecode under {prefix}; precompiling in 2 processes"
    import time
    deadline = time.time() + 60
    while not list(prefix.glob(".precompiled-probe-*")) and time.time() < deadline:
        time.sleep(0.1)
    markers = list(prefix.glob(".precompiled-probe-*"))
    assert len(markers) == 1, pycs(prefix)
    assert markers[0].read_text() == "4 files\n"  # probe's two and helper's two
    # Under the prefix, the sources' folders' own path (the standard library's
    # bytecode the processes wrote there aside).
    where = prefix / str(tmp_path).lstrip("/")
    written = sorted(str(p.relative_to(where)) for p in where.rglob("*.pyc"))
    tag = sys.implementation.cache_tag
    assert written == sorted(f"{m}/{f}.{tag}.pyc" for m, f in [
        ("probe", "__init__"), ("probe/sub", "deep"), ("helper", "__init__"), ("helper", "part")])
    assert not (tmp_path / "probe" / "__pycache__").exists()
    # The next process finds the marker and starts nothing.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=60).stdout.strip()
    assert out == f"bytecode under {prefix}; precompiled earlier"
