"""Where Python keeps the bytecode of what solbench's own processes import (the
zygote, the SOL tracer): bridge::keep_bytecode (src/bridge/python.h). Imports
nothing heavy: it runs before torch is imported."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

# Imported by a probe where installed, though no requirement of its distribution.
_ALSO_COMPILED = {"torch": ("numpy",)}
# Never imported by an evaluation: torch's own test helpers and packages' tests.
_SKIPPED_PARTS = ("/testing/_internal/", "/tests/", "/test/")


def keep_bytecode(prefix: str, probe: str = "torch", precompile: bool = False,
                  jobs: int = 0) -> str:
    """Where the interpreter's `probe` package (torch) has no bytecode beside its
    sources (an image stripped of __pycache__, site-packages read-only, or
    PYTHONDONTWRITEBYTECODE set when it was installed), writes and reads this
    process's bytecode under `prefix` (sys.pycache_prefix), so that the next such
    process imports from bytecode instead of compiling torch's sources again.
    Elsewhere, and where the user named a prefix, changes nothing (a prefix would
    hide the bytecode beside the sources). With `precompile`, the first process
    to find the prefix without the probe's bytecode also starts compiling it in
    the background (start_precompile). Returns what it did, in words."""
    if sys.pycache_prefix:
        return f"kept the user's prefix {sys.pycache_prefix}"
    try:
        spec = importlib.util.find_spec(probe)
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None) or ""
    if not origin.endswith(".py"):
        return f"no {probe} sources"
    if os.path.exists(importlib.util.cache_from_source(origin)):
        return "bytecode beside the sources"
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    said = f"bytecode under {prefix}"
    if precompile:
        said += "; " + start_precompile(prefix, probe, origin, jobs or precompile_jobs())
    return said


def precompile_jobs() -> int:
    """Cores for the background compile: all but two (the importing process and
    the evaluation's own), at most 12; none on a machine of two or fewer."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, min(12, cores - 2))


def _marker(prefix: str, probe: str, origin: str) -> str:
    st = os.stat(origin)
    key = f"{sys.version}|{origin}|{st.st_mtime_ns}|{st.st_size}"
    return os.path.join(prefix, f".precompiled-{probe}-{hashlib.sha256(key.encode()).hexdigest()[:16]}")


def start_precompile(prefix: str, probe: str, origin: str, jobs: int) -> str:
    """Compiles the sources of the probe's distribution and of those it requires
    (precompile_sources) into `prefix`, in `jobs` processes of a detached, niced
    group, while this process goes on to import them: on a host whose torch has no
    bytecode, a cold process compiles every module it imports, one after the other
    (torch, Dynamo and Inductor: 9-15 s of the first T_b worker's start on the GPU
    host, docs/speed.md), where a dozen cores do the same files in a second or two.
    The importer reads each file's bytecode once it is there and compiles the rest
    itself; both write by atomic rename, so either's copy is whole. Once per
    prefix and probe version (a marker file); one group at a time (a lock).
    Returns what it did, in words; never raises."""
    if jobs <= 0:
        return "no cores to precompile on"
    try:
        marker = _marker(prefix, probe, origin)
        if os.path.exists(marker):
            return "precompiled earlier"
        os.makedirs(prefix, exist_ok=True)
        import warnings
        with warnings.catch_warnings():  # 3.12 warns of forking where C++ threads run
            warnings.simplefilter("ignore")
            pid = os.fork()
        if pid == 0:
            try:
                if os.fork() == 0:  # the group, reparented: nobody waits for it
                    _precompile_group(prefix, probe, origin, jobs, marker)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        return f"precompiling in {jobs} processes"
    except OSError as e:
        return f"not precompiled: {e}"


def _detach() -> None:
    """The background group holds none of its starter's files: a test or a caller
    that reads the starter's output to its end must not wait for the group."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)
    os.setsid()
    os.nice(10)


def _precompile_group(prefix: str, probe: str, origin: str, jobs: int, marker: str) -> None:
    import fcntl
    _detach()
    lock = os.open(os.path.join(prefix, ".precompile.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another process's group is at it
    if os.path.exists(marker):
        return
    # The probe's own package first, found by walking its folder (its installed file
    # list took 0.4 s to read, which this round does not wait for), its largest files
    # first: the importer compiles what it reaches before the group did, and a large
    # module costs it most.
    first = _largest_first(package_sources(os.path.dirname(origin)))
    ok = _compile_in(first, jobs)
    taken = set(first)
    rest = _largest_first([f for f in precompile_sources(probe, origin) if f not in taken])
    ok = _compile_in(rest, jobs) and ok
    if ok:
        with open(marker, "w") as f:
            f.write(f"{len(first) + len(rest)} files\n")


def _compile_in(files: list, jobs: int) -> bool:
    """compile_files over `files` in `jobs` processes, each every jobs-th file (so
    that each starts with the largest); True when all ended well."""
    kids = []
    for k in range(jobs):
        pid = os.fork()
        if pid == 0:
            try:
                compile_files(files[k::jobs])
            finally:
                os._exit(0)
        kids.append(pid)
    return all(os.waitpid(p, 0)[1] == 0 for p in kids)


def _largest_first(files: list) -> list:
    def size(f):
        try:
            return os.stat(f).st_size
        except OSError:
            return 0
    return sorted(files, key=size, reverse=True)


def package_sources(root: str) -> list:
    """The .py files under a package's folder, but for tests (_SKIPPED_PARTS, by
    the path inside the folder's parent)."""
    files = []
    for d, _, names in os.walk(root):
        inside = "/" + os.path.relpath(d, os.path.dirname(root)) + "/"
        if not any(s in inside for s in _SKIPPED_PARTS):
            files.extend(os.path.join(d, n) for n in names if n.endswith(".py"))
    return files


def compile_files(files: list) -> int:
    """Writes each source's bytecode where this process's imports would look for
    it (sys.pycache_prefix), unless it is there; timestamp-checked, as the import
    system writes it. Returns how many it wrote."""
    import py_compile
    n = 0
    for src in files:
        cfile = importlib.util.cache_from_source(src)
        if os.path.exists(cfile):
            continue
        try:
            py_compile.compile(src, cfile=cfile, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
            n += 1
        except (py_compile.PyCompileError, OSError, ValueError, SyntaxError):
            pass  # left to the import, which reports it where it matters
    return n


def precompile_sources(probe: str, origin: str) -> list:
    """The .py files of the probe's distribution and of every distribution it
    requires, recursively (their installed file lists), and of _ALSO_COMPILED;
    the probe's own package folder where its distribution lists no files."""
    from importlib import metadata
    import re
    seen, queue, files = set(), [probe, *_ALSO_COMPILED.get(probe, ())], []
    while queue:
        name = re.sub(r"[-_.]+", "-", queue.pop(0)).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for p in dist.files or []:
            # Skipped by the path inside site-packages, never by where that lies.
            if p.suffix == ".py" and not any(s in "/" + str(p) for s in _SKIPPED_PARTS):
                files.append(str(p.locate()))
        for req in dist.requires or []:
            m = re.match(r"[A-Za-z0-9._-]+", req)
            if m and "extra ==" not in req:
                queue.append(m.group(0))
    return files or package_sources(os.path.dirname(origin))
