"""solbench from Python: the CLI's --json documents as dicts (docs/python.md).

Every call runs the ``solbench`` executable with ``--json`` and returns the
document it prints, parsed. Nothing is evaluated in this process: the executable
builds the solution and runs it, and the reference, in its own sandboxed worker
processes, exactly as ``solbench eval`` on a shell does.

    >>> import solbench
    >>> doc = solbench.eval("problems/001_rmsnorm_llama3_8b_h4096",
    ...                     "my_solution.json", workloads=["d3c7"], arch="h100_sxm")
    >>> doc["results"][0]["evaluation"]["status"]
    'PASSED'

A failed evaluation (a wrong answer, a compile error, a crash) is a result: the
document comes back, its statuses say what failed. Input the CLI refuses (a
missing folder, an unknown option value, a store that does not exist) raises
:class:`Error` carrying the message the CLI prints after ``error:``.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native

__all__ = [
    "Error", "InputError", "UsageError", "Timeout",
    "validate", "sol", "eval", "run", "leaderboard", "best", "history", "export",
    "command", "executable",
]

__version__ = "0.1.0"

PathLike = Union[str, os.PathLike]


class Error(RuntimeError):
    """The solbench executable refused the call or did not finish it.

    ``str(err)`` is the CLI's own message (its ``error:`` lines without the
    prefix). Attributes: ``argv`` (the command that ran), ``exit_code``,
    ``stderr`` (all of it), ``document`` (a --json document printed before the
    failure, else None).
    """

    def __init__(self, message: str, *, argv: Sequence[str] = (), exit_code: int = 1,
                 stderr: str = "", document: Optional[dict] = None):
        super().__init__(message)
        self.message = message
        self.argv = list(argv)
        self.exit_code = exit_code
        self.stderr = stderr
        self.document = document


class InputError(Error, ValueError):
    """Invalid input (exit code 1 with no document): a missing or malformed file, a store that
    does not exist."""


class UsageError(Error, ValueError):
    """The CLI rejected the options (exit code 2): a value out of range, an unknown hardware
    model (--arch), options that exclude each other."""


class Timeout(Error, TimeoutError):
    """The call ran past its ``timeout`` and the executable (with its workers) was ended."""


def executable() -> str:
    """The solbench executable the calls run: $SOLBENCH_EXECUTABLE, else the one installed with
    this package, else the one of the build tree this module was built in, else `solbench` on
    PATH."""
    env = os.environ.get("SOLBENCH_EXECUTABLE")
    if env:
        return env
    bundled = Path(__file__).resolve().parent / "_prefix" / "bin" / "solbench"
    if bundled.is_file():
        return str(bundled)
    built = _native.build_executable
    if built and os.path.isfile(built):
        return built
    found = shutil.which("solbench")
    if found:
        return found
    raise Error("cannot find the solbench executable: set SOLBENCH_EXECUTABLE")


def _error_message(stderr: str, exit_code: int) -> str:
    lines = [l for l in stderr.splitlines() if l.strip()]
    errors = [l[len("error: "):] for l in lines if l.startswith("error: ")]
    if errors:
        return "\n".join(errors)
    if exit_code == 2:  # CLI11's usage messages are the lines before "Run with --help"
        usage = [l for l in lines if not l.startswith("Run with --help")]
        if usage:
            return "\n".join(usage)
    if exit_code < 0:
        return f"solbench ended by signal {-exit_code}"
    return lines[-1] if lines else f"solbench exited with code {exit_code}"


# --- the warm worker template ------------------------------------------------------

_ZYGOTE_COMMANDS = {"eval", "run", "baseline"}
_zygote_lock = threading.Lock()
_zygote: Optional[tuple] = None  # (Popen, address, pid of the process that started it)


def _zygote_address() -> Optional[str]:
    """This process's `solbench __zygote` (docs/python.md): started on the first call
    that evaluates, it imports torch once, and every later evaluation's workers fork
    from it instead of importing torch again. It exits with this process (its standard
    input is a pipe from here). None when it cannot be started: workers are then
    started the ordinary way."""
    global _zygote
    with _zygote_lock:
        if _zygote is not None and _zygote[2] == os.getpid() and _zygote[0].poll() is None:
            return _zygote[1]
        address = f"solbench-zygote-py{os.getpid()}-{secrets.token_hex(16)}"
        try:
            proc = subprocess.Popen(
                [executable(), "__zygote", "--address", address, "--exit-on-stdin-eof"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True)
        except (OSError, Error):
            return None
        _zygote = (proc, address, os.getpid())
        return address


@atexit.register
def _stop_zygote() -> None:
    if _zygote is not None and _zygote[2] == os.getpid():
        try:
            _zygote[0].stdin.close()
            _zygote[0].wait(timeout=5)
        except Exception:  # noqa: BLE001 - leaving at exit; the pipe's end stops it anyway
            pass


def command(args: Sequence[str], *, timeout: Optional[float] = None,
            env: Optional[Mapping[str, str]] = None) -> dict:
    """Runs ``solbench ARGS`` (ARGS must include --json) and returns its document.

    The typed calls below build ARGS for you; this is the escape hatch for options they do
    not name. ``env`` adds to (or, with None values, removes from) this process's environment.
    """
    argv = [executable(), *[os.fspath(a) for a in args]]
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = str(v)
    if args and os.fspath(args[0]) in _ZYGOTE_COMMANDS and "SOLBENCH_ZYGOTE" not in full_env:
        address = _zygote_address()
        if address:
            full_env["SOLBENCH_ZYGOTE"] = address
    code, out, err, timed_out = _native.run(
        argv, [f"{k}={v}" for k, v in full_env.items()], float(timeout or 0))
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    document = None
    if stdout.strip():
        try:
            document = _native.parse_json(stdout)
        except ValueError:
            document = None
    if timed_out:
        raise Timeout(f"solbench did not finish within {timeout} s", argv=argv,
                      exit_code=code, stderr=stderr, document=document)
    # A document is the answer, whatever the exit code says (1: a workload failed, a
    # problem is invalid; 130: an interrupted run's summary so far).
    if isinstance(document, dict):
        return document
    message = _error_message(stderr, code)
    cls = UsageError if code == 2 else InputError if code == 1 else Error
    raise cls(message, argv=argv, exit_code=code, stderr=stderr, document=None)


# --- argument helpers --------------------------------------------------------------

def _opt(args: list, flag: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool):
        if value:
            args.append(flag)
        return
    if isinstance(value, (list, tuple)):
        for v in value:
            args += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
        return
    args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]


def _many(value: Union[None, str, Iterable[str]]) -> Optional[list]:
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return [value]
    return list(value)


# --- the calls ---------------------------------------------------------------------

def validate(*paths: PathLike, definition: Optional[PathLike] = None,
             workload: Optional[PathLike] = None, solution: Optional[PathLike] = None,
             strict: bool = False, timeout: Optional[float] = None) -> dict:
    """``solbench validate PATHS... --json``: problem folders, data sets, a solution.

    An invalid problem is a result, not an exception: the document's ``errors`` say why."""
    args = ["validate", *[os.fspath(p) for p in paths], "--json"]
    _opt(args, "--definition-file", definition)
    _opt(args, "--workload-file", workload)
    _opt(args, "--solution", solution)
    _opt(args, "--strict", strict)
    return command(args, timeout=timeout)


def sol(*problems: PathLike, arch: Optional[str] = None,
        workloads: Union[None, str, Iterable[str]] = None, dump_ops: Optional[PathLike] = None,
        no_cache: bool = False, trace_timeout: Optional[float] = None,
        jobs: Optional[int] = None, timeout: Optional[float] = None) -> dict:
    """``solbench sol PROBLEMS... --json``: T_SOL per workload (the reference is traced in tracer
    processes, not here). ``trace_timeout`` is the CLI's --timeout (per workload)."""
    if not problems:
        raise TypeError("sol() needs at least one problem folder")
    args = ["sol", *[os.fspath(p) for p in problems], "--json"]
    _opt(args, "--arch", arch)
    _opt(args, "--workload", _many(workloads))
    _opt(args, "--dump-ops", dump_ops)
    _opt(args, "--no-cache", no_cache)
    _opt(args, "--timeout", trace_timeout)
    _opt(args, "--jobs", jobs)
    return command(args, timeout=timeout)


def eval(problem_dir: PathLike, solution: Union[None, PathLike, Mapping[str, Any]] = None, *,  # noqa: A001
         reference: bool = False, workloads: Union[None, str, Iterable[str]] = None,
         smallest: Optional[int] = None, max_workloads: Optional[int] = None,
         device: Optional[str] = None, arch: Optional[str] = None, output: Optional[PathLike] = None,
         db: Optional[PathLike] = None, no_db: bool = False, no_baseline: bool = False,
         no_timing: bool = False, rounds: Optional[int] = None, seed: Optional[int] = None,
         target_rse: Optional[float] = None, time_budget_ms: Optional[float] = None,
         workload_timeout: Optional[float] = None, compile_timeout: Optional[float] = None,
         timer: Optional[str] = None, cuda_arch: Optional[str] = None,
         keep_staging: bool = False, verbose: bool = False, spare_workers: bool = True,
         profile: bool = False, timeout: Optional[float] = None) -> dict:
    """``solbench eval PROBLEM_DIR --solution FILE --json``: build, run in sandboxed workers,
    check, time and score; the document has one trace per workload in ``results``, the
    ``summary`` and the ``score``.

    ``workload_timeout`` is the CLI's --timeout (per workload, inside the executable);
    ``timeout`` bounds the whole call from here. There is deliberately no ``no_sandbox``:
    calls from Python always run sandboxed (``command()`` passes anything through).

    ``spare_workers`` (SOLBENCH_SPARE_WORKERS=1 unless that is set): once a call's timed
    work is done, this process's zygote prepares the next call's workers (sandboxed, CUDA
    started, nothing of any solution loaded), so that the next call does not wait for
    their start; each holds a process and, on a GPU, a CUDA context (docs/python.md).

    ``solution`` is a solution.json path, or the solution itself as a dict (as an agent
    holds it): it is written to a private temporary file for the call.

    ``profile`` (--profile): per workload the kernel breakdown of one call, hardware
    counters where they are allowed, and the roofline verdict, in each trace's
    ``evaluation.solbench_profile``; the reference's call the same way under its
    ``reference`` key (docs/profile.md)."""
    if solution is None and not reference:
        raise TypeError("eval() needs a solution file or reference=True")
    if isinstance(solution, Mapping):
        call = dict(locals())  # the arguments, as given
        with _solution_file(solution) as path:
            call["solution"] = path
            return eval(**call)
    args = ["eval", os.fspath(problem_dir), "--json"]
    _opt(args, "--solution", solution)
    _opt(args, "--reference", reference)
    _opt(args, "--workload", _many(workloads))
    _opt(args, "--smallest", smallest)
    _opt(args, "--max-workloads", max_workloads)
    _opt(args, "--device", device)
    _opt(args, "--arch", arch)
    _opt(args, "--output", output)
    _opt(args, "--db", db)
    _opt(args, "--no-db", no_db)
    _opt(args, "--no-baseline", no_baseline)
    _opt(args, "--no-timing", no_timing)
    _opt(args, "--rounds", rounds)
    _opt(args, "--seed", seed)
    _opt(args, "--target-rse", target_rse)
    _opt(args, "--time-budget-ms", time_budget_ms)
    _opt(args, "--timeout", workload_timeout)
    _opt(args, "--compile-timeout", compile_timeout)
    _opt(args, "--timer", timer)
    _opt(args, "--cuda-arch", cuda_arch)
    _opt(args, "--keep-staging", keep_staging)
    _opt(args, "--verbose", verbose)
    _opt(args, "--profile", profile)
    spares = "1" if spare_workers else "0"
    return command(args, timeout=timeout,
                   env=None if "SOLBENCH_SPARE_WORKERS" in os.environ
                   else {"SOLBENCH_SPARE_WORKERS": spares})


class _solution_file:
    """A solution dict as a private temporary solution.json, removed on exit."""

    def __init__(self, solution: Mapping[str, Any]):
        self._solution = solution
        self._dir: Optional[str] = None

    def __enter__(self) -> str:
        import json
        import tempfile
        self._dir = tempfile.mkdtemp(prefix="solbench-solution-")
        path = os.path.join(self._dir, "solution.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dict(self._solution), f)
        return path

    def __exit__(self, *exc) -> None:
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)


def run(dataset_dir: PathLike, solutions: Optional[PathLike] = None, *,
        reference: bool = False, categories: Union[None, str, Iterable[str]] = None,
        problems: Union[None, str, Iterable[str]] = None,
        workloads: Union[None, str, Iterable[str]] = None, max_workloads: Optional[int] = None,
        smallest: Optional[int] = None, rerun: Union[None, str, Iterable[str]] = None,
        device: Optional[str] = None, gpus: Optional[str] = None, db: Optional[PathLike] = None,
        no_db: bool = False, workload_timeout: Optional[float] = None,
        compile_timeout: Optional[float] = None, rounds: Optional[int] = None,
        seed: Optional[int] = None, target_rse: Optional[float] = None,
        time_budget_ms: Optional[float] = None, timer: Optional[str] = None,
        no_timing: bool = False, arch: Optional[str] = None, no_baseline: bool = False,
        profile: bool = False, timeout: Optional[float] = None) -> dict:
    """``solbench run DATASET_DIR --solutions DIR --json``: a data set, each evaluation in a child
    eval, resumed from the store; returns the run's summary document. ``profile``: --profile
    in every child eval (the traces carry ``solbench_profile``)."""
    if solutions is None and not reference:
        raise TypeError("run() needs a solutions folder or reference=True")
    args = ["run", os.fspath(dataset_dir), "--json"]
    _opt(args, "--solutions", solutions)
    _opt(args, "--reference", reference)
    _opt(args, "--category", _many(categories))
    _opt(args, "--problem", _many(problems))
    _opt(args, "--workload", _many(workloads))
    _opt(args, "--max-workloads", max_workloads)
    _opt(args, "--smallest", smallest)
    _opt(args, "--rerun", _many(rerun))
    _opt(args, "--device", device)
    _opt(args, "--gpus", gpus)
    _opt(args, "--db", db)
    _opt(args, "--no-db", no_db)
    _opt(args, "--timeout", workload_timeout)
    _opt(args, "--compile-timeout", compile_timeout)
    _opt(args, "--rounds", rounds)
    _opt(args, "--seed", seed)
    _opt(args, "--target-rse", target_rse)
    _opt(args, "--time-budget-ms", time_budget_ms)
    _opt(args, "--timer", timer)
    _opt(args, "--no-timing", no_timing)
    _opt(args, "--arch", arch)
    _opt(args, "--no-baseline", no_baseline)
    _opt(args, "--profile", profile)
    return command(args, timeout=timeout)


def _db(sub: str, db, definition, solution, gpu, extra: Sequence[str], timeout) -> dict:
    args = ["db", sub, "--json"]
    _opt(args, "--db", db)
    _opt(args, "--definition", definition)
    _opt(args, "--solution", solution)
    _opt(args, "--gpu", gpu)
    return command([*args, *extra], timeout=timeout)


def leaderboard(*, db: Optional[PathLike] = None, definition: Optional[str] = None,
                solution: Optional[str] = None, gpu: Optional[str] = None,
                top: Optional[int] = None, timeout: Optional[float] = None) -> dict:
    """``solbench db leaderboard --json``: per definition and GPU, solutions ranked by mean SOL
    score."""
    extra: list = []
    _opt(extra, "--top", top)
    return _db("leaderboard", db, definition, solution, gpu, extra, timeout)


def best(*, db: Optional[PathLike] = None, definition: Optional[str] = None,
         solution: Optional[str] = None, gpu: Optional[str] = None,
         timeout: Optional[float] = None) -> dict:
    """``solbench db best --json``: per definition, workload and GPU, the fastest PASSED trace."""
    return _db("best", db, definition, solution, gpu, [], timeout)


def history(*, db: Optional[PathLike] = None, definition: Optional[str] = None,
            solution: Optional[str] = None, gpu: Optional[str] = None,
            timeout: Optional[float] = None) -> dict:
    """``solbench db history --json``: every trace of a solution or definition, oldest first."""
    return _db("history", db, definition, solution, gpu, [], timeout)


def export(output: PathLike, *, db: Optional[PathLike] = None, definition: Optional[str] = None,
           solution: Optional[str] = None, gpu: Optional[str] = None,
           timeout: Optional[float] = None) -> dict:
    """``solbench db export -o OUTPUT --json``: writes the matching traces as public-format JSONL
    to OUTPUT and returns the summary (db, output, exported)."""
    return _db("export", db, definition, solution, gpu, ["-o", os.fspath(output)], timeout)
