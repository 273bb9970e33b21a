"""lent_caches.relocate (python/solbench_py/lent_caches.py): a compile cache written
by one worker and lent to another at another path still hits. Each case in a fresh
interpreter (relocate changes the process's import machinery and Triton's knobs)."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(os.environ.get("SOLBENCH_REPO", pathlib.Path(__file__).resolve().parents[2]))


def run(code: str, env_extra=None, path=(), script=None) -> str:
    """Runs `code` in a fresh interpreter (from the file `script` where given: Triton's
    jit reads its kernels' source) and returns its output."""
    head = f"import sys; sys.path[:0] = {[str(REPO / 'python'), *map(str, path)]!r}\n"
    env = dict(os.environ)
    env.update(env_extra or {})
    text = head + textwrap.dedent(code)
    if script is not None:
        script.write_text(text)
    argv = [sys.executable, str(script)] if script is not None else [sys.executable, "-c", text]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_action_runs_when_its_module_is_first_imported_and_the_finder_stays(tmp_path):
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("X = 1\ndef source_of_me():\n    return 0\n")
    (tmp_path / "early.py").write_text("Y = 1\n")
    out = run("""
        import early, inspect
        from solbench_py import lent_caches
        lent_caches._ACTIONS = {"fakepkg.config": lambda m: setattr(m, "X", 2),
                                "early": lambda m: setattr(m, "Y", 3)}
        lent_caches.relocate()
        print("early", early.Y)                  # imported before: set at once
        before = list(sys.meta_path)
        import fakepkg.config as c
        print("later", c.X)                      # imported after: set once executed
        print("loader", type(c.__loader__).__name__, type(c.__spec__.loader).__name__)
        print("source", "return 0" in inspect.getsource(c.source_of_me))
        print("meta_path unchanged", sys.meta_path == before)
        import importlib; importlib.reload(c)
        print("reloaded", c.X)                   # the action ran once, not again
    """, path=[tmp_path])
    assert out.splitlines() == ["early 3", "later 2", "loader SourceFileLoader SourceFileLoader",
                                "source True", "meta_path unchanged True", "reloaded 1"]


GROUP = """
    from triton.runtime.cache import get_cache_manager
    m = get_cache_manager("abcd")
    print(sorted(m.get_group("k.json") or {}))
    print(sorted(set(os.path.dirname(p) == m.cache_dir for p in (m.get_group("k.json") or {}).values())))
"""


def test_a_triton_cache_moved_to_another_folder_still_hits(tmp_path):
    pytest.importorskip("triton")
    a, b = tmp_path / "a", tmp_path / "b"
    run("""
        import os
        from triton.runtime.cache import get_cache_manager
        m = get_cache_manager("abcd")
        files = {n: m.put(d, n) for n, d in (("k.cubin", b"x"), ("k.json", "{}"))}
        m.put_group("k.json", files)
    """, {"TRITON_CACHE_DIR": str(a)})
    shutil.move(a, b)  # as take_back_caches and lend_caches move it between workers
    stock = run("import os\n" + textwrap.dedent(GROUP), {"TRITON_CACHE_DIR": str(b)})
    assert stock.splitlines()[0] == "[]"  # Triton alone: the group's paths name folder a
    lent = run("import os\nfrom solbench_py import lent_caches\nlent_caches.relocate()\n" +
               textwrap.dedent(GROUP), {"TRITON_CACHE_DIR": str(b)})
    assert lent.splitlines() == ["['k.cubin', 'k.json']", "[True]"]
    # A manager the user chose is left as it is.
    kept = run("""
        import triton
        from solbench_py import lent_caches
        lent_caches.relocate()
        print(triton.knobs.cache.manager_class.__name__)
    """, {"TRITON_CACHE_DIR": str(b), "TRITON_CACHE_MANAGER": "triton.runtime.cache:FileCacheManager"})
    assert kept == "FileCacheManager"


COMPILE = """
    import os
    if os.environ.get("RELOCATE"):  # the same file either way: a kernel's key has its line
        from solbench_py import lent_caches
        lent_caches.relocate()
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    hits = []
    triton.knobs.compilation.listener = lambda **kw: hits.append(kw["cache_hit"])

    @triton.jit
    def kernel(p, n: tl.constexpr):
        tl.store(p + tl.arange(0, n), tl.arange(0, n))

    src = triton.compiler.ASTSource(fn=kernel, signature={"p": "*fp32", "n": "constexpr"},
                                    constexprs={"n": 16})
    triton.compile(src, target=GPUTarget("cuda", 90, 32))  # no GPU needed
    print(hits)
"""


def test_a_kernel_compiled_in_one_worker_is_a_cache_hit_in_the_next(tmp_path):
    """Triton's own compile, as a worker runs it: the cache written at one path,
    moved (lend_caches), then compiled for again at the new path."""
    pytest.importorskip("triton.backends.compiler")
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    script = tmp_path / "compile_kernel.py"
    assert run(COMPILE, {"TRITON_CACHE_DIR": str(a)}, script=script) == "[False]"
    shutil.copytree(a, c)
    shutil.move(a, b)
    # Triton alone: compiled again.
    assert run(COMPILE, {"TRITON_CACHE_DIR": str(b)}, script=script) == "[False]"
    assert run(COMPILE, {"TRITON_CACHE_DIR": str(c), "RELOCATE": "1"}, script=script) == "[True]"


def test_inductors_local_autotune_cache_is_off_whenever_inductor_is_imported():
    pytest.importorskip("torch._inductor.config")
    later = run("""
        from solbench_py import lent_caches
        lent_caches.relocate()
        import torch._inductor.config as c
        print(c.autotune_local_cache)
    """)
    assert later == "False"
    before = run("""
        import torch._inductor.config as c
        print(c.autotune_local_cache)
        from solbench_py import lent_caches
        lent_caches.relocate()
        print(c.autotune_local_cache)
    """)
    assert before.splitlines() == ["True", "False"]  # torch's default, then set at once
