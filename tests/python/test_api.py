"""`import solbench`: each call returns the CLI's --json document; failures of the solution
are results, bad input raises solbench.Error with the CLI's own message; nothing is
evaluated (no torch, no solution) in this process."""
import json
import os
import shutil
import signal
import sys
import threading
import time

import pytest

import solbench
from conftest import CPP_SOLUTION, PROBLEM, WORKLOAD, solution_variant

ARCH = "h100_sxm"  # the CPU has no hardware model of its own; S needs one
FAST = dict(workloads=[WORKLOAD], arch=ARCH, no_baseline=True, time_budget_ms=20, rounds=2)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("store") / "results.db"


@pytest.fixture(scope="module")
def evaluated(db):
    """One evaluation of the bundled C++ solution, recorded in `db`."""
    return solbench.eval(PROBLEM, CPP_SOLUTION, db=db, **FAST)


def test_finds_the_build_tree_executable():
    # ctest unsets $SOLBENCH_EXECUTABLE: the extension names the executable it was built with.
    if "SOLBENCH_EXECUTABLE" in os.environ:
        pytest.skip("SOLBENCH_EXECUTABLE is set")
    assert solbench.executable() == solbench._native.build_executable
    assert os.access(solbench.executable(), os.X_OK)


# --- validate ------------------------------------------------------------------------

def test_validate_returns_the_cli_document(cli):
    doc = solbench.validate(PROBLEM, solution=CPP_SOLUTION)
    assert doc["valid"] is True
    assert doc["summary"]["workloads"] == 16
    assert doc == cli.json("validate", PROBLEM, "--solution", CPP_SOLUTION, "--json")


def test_validate_invalid_problem_is_a_result_not_an_exception(cli, tmp_path):
    bad = tmp_path / "bad_problem"
    shutil.copytree(PROBLEM, bad)
    d = json.loads((bad / "definition.json").read_text())
    del d["outputs"]
    (bad / "definition.json").write_text(json.dumps(d))
    doc = solbench.validate(bad)
    assert doc["valid"] is False
    assert doc["errors"], doc
    assert doc["errors"] == cli.json("validate", bad, "--json")["errors"]


# --- sol -------------------------------------------------------------------------------

def without_seconds(doc):
    """The document less its wall times (`seconds`, `trace_seconds`), which differ per run."""
    if isinstance(doc, dict):
        return {k: without_seconds(v) for k, v in doc.items() if not k.endswith("seconds")}
    if isinstance(doc, list):
        return [without_seconds(v) for v in doc]
    return doc


def test_sol_matches_the_cli(cli):
    doc = solbench.sol(PROBLEM, arch=ARCH, workloads=["71630508-b97d-490a-a0c9-4fb87baaf18f"],
                       no_cache=True)
    assert doc["hardware"] == ARCH
    [problem] = doc["problems"]
    [w] = problem["workloads"]
    assert w["status"] == "ok" and w["time_us"]["sol"] > 0
    expect = cli.json("sol", PROBLEM, "--arch", ARCH, "--workload",
                      "71630508-b97d-490a-a0c9-4fb87baaf18f", "--no-cache", "--json")
    assert without_seconds(doc) == without_seconds(expect)


def test_sol_unknown_arch_raises_the_cli_message(cli):
    message, code = cli.error("sol", PROBLEM, "--arch", "no_such_gpu", "--json")
    with pytest.raises(solbench.UsageError) as e:  # a usage error, as in eval (exit 2)
        solbench.sol(PROBLEM, arch="no_such_gpu")
    assert str(e.value) == message
    assert "no_such_gpu" in str(e.value)
    assert e.value.exit_code == code == 2


# --- eval ------------------------------------------------------------------------------

def test_eval_passes_and_scores(evaluated, db):
    doc = evaluated
    assert doc["solution"] == "rmsnorm_cpp_rowwise"
    [trace] = doc["results"]
    assert trace["workload"]["uuid"].startswith(WORKLOAD)
    assert trace["evaluation"]["status"] == "PASSED"
    assert trace["evaluation"]["solbench_t_sol_ms"] > 0
    assert doc["summary"]["statuses"] == {"PASSED": 1}
    assert doc["db"]["path"] == str(db) and doc["db"]["recorded"] == 1
    # Run in workers: the worker's pid namespace, not this process.
    assert doc["workers"] and doc["workers"][0]["exit"] == "exit 0"
    # When the worker said it was done and when it was seen to exit, after its result.
    w = doc["workers"][0]
    assert w["workloads"][-1]["result_t_ns"] <= w["done_t_ns"] <= w["exit_t_ns"]


def test_eval_document_has_the_cli_shape(evaluated, cli, db):
    expect = cli.json("eval", PROBLEM, "--solution", CPP_SOLUTION, "-w", WORKLOAD, "--arch", ARCH,
                      "--no-baseline", "--time-budget-ms", "20", "--rounds", "2", "--no-db",
                      "--json")
    assert list(evaluated.keys()) == list(expect.keys())
    assert evaluated["build"]["cache_key"] == expect["build"]["cache_key"]
    assert evaluated["build"]["cache_hit"] is False and expect["build"]["cache_hit"] is True
    assert list(evaluated["results"][0]["evaluation"]) == list(expect["results"][0]["evaluation"])


def test_eval_in_workers_not_here(evaluated):
    # The module neither imports torch nor loads the solution into this process.
    assert "torch" not in sys.modules
    with open("/proc/self/maps") as maps:
        mapped = maps.read()
    assert evaluated["build"]["so_path"] not in mapped
    assert "libtorch" not in mapped


def test_eval_wrong_answer_is_a_failed_result(tmp_path, db):
    wrong = solution_variant(tmp_path / "wrong.json", "rmsnorm_wrong",
                             ("* inv * bf16_to_float(ws[k])", "* inv * 2.0f * bf16_to_float(ws[k])"))
    doc = solbench.eval(PROBLEM, wrong, db=db, **FAST)
    [trace] = doc["results"]
    assert trace["evaluation"]["status"] == "INCORRECT_NUMERICAL"
    assert doc["summary"]["statuses"] == {"INCORRECT_NUMERICAL": 1}
    assert doc["summary"]["sol_score"]["failed"] == 1


def test_eval_takes_the_solution_as_a_dict(tmp_path, monkeypatch):
    """An agent holds its candidate in memory: the dict is evaluated as its file is,
    and the private file made for it is gone afterwards."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    solution = json.loads(open(CPP_SOLUTION).read())
    doc = solbench.eval(PROBLEM, solution, no_db=True, **FAST)
    assert doc["results"][0]["evaluation"]["status"] == "PASSED"
    assert doc["solution"] == solution["name"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("solbench-solution-")]


def test_eval_solution_for_another_problem_is_a_usage_error():
    solution = json.loads(open(CPP_SOLUTION).read())
    solution["definition"] = "some_other_problem"
    with pytest.raises(solbench.Error) as e:
        solbench.eval(PROBLEM, solution, no_db=True, **FAST)
    assert "is for definition \"some_other_problem\"" in str(e.value)
    assert e.value.exit_code == 2


def test_eval_compile_error_is_a_failed_result(tmp_path):
    broken = solution_variant(tmp_path / "broken.json", "rmsnorm_broken",
                              ("return 0;\n}", "return 0 }"))
    doc = solbench.eval(PROBLEM, broken, no_db=True, **FAST)
    assert doc["results"][0]["evaluation"]["status"] == "COMPILE_ERROR"
    assert "error" in doc["build_error"]


def test_eval_missing_solution_raises_the_cli_message(cli, tmp_path):
    missing = tmp_path / "nope.json"
    message, code = cli.error("eval", PROBLEM, "--solution", missing, "--json", "--no-db")
    with pytest.raises(solbench.InputError) as e:
        solbench.eval(PROBLEM, missing, no_db=True)
    assert str(e.value) == message
    assert str(missing) in str(e.value)
    assert e.value.exit_code == code == 1
    assert isinstance(e.value, ValueError) and isinstance(e.value, solbench.Error)


def test_eval_bad_option_value_raises_a_usage_error(cli):
    p = cli("eval", PROBLEM, "--solution", CPP_SOLUTION, "--rounds", "0", "--json")
    assert p.returncode == 2
    with pytest.raises(solbench.UsageError) as e:
        solbench.eval(PROBLEM, CPP_SOLUTION, rounds=0)
    assert str(e.value) in p.stderr
    assert "--rounds" in str(e.value)


def test_eval_needs_a_solution():
    with pytest.raises(TypeError):
        solbench.eval(PROBLEM)


def test_eval_workers_fork_from_the_module_zygote():
    # The module starts one `solbench __zygote` for the process and hands its address to
    # every evaluation: workers fork from it instead of importing torch again. Once an
    # evaluation is done, the zygote prepares spares of its workers (sandboxed, runtime
    # started): the next evaluation's workers are those, unless spare_workers=False.
    launches = []
    for spare_workers in (True, True, False):
        doc = solbench.eval(PROBLEM, CPP_SOLUTION, no_db=True, spare_workers=spare_workers,
                            **FAST)
        assert doc["results"][0]["evaluation"]["status"] == "PASSED"
        launches.append([w["launch"] for w in doc["workers"] + doc["reference_workers"]])
    assert launches[1:] == [["spare"] * 2, ["zygote"] * 2]
    assert launches[0] in (["zygote"] * 2, ["spare"] * 2)  # another test's call may have left spares


def test_eval_timeout_ends_the_call():
    start = time.monotonic()
    # A timing loop that cannot converge runs to its 20 s budget: far past the 0.5 s
    # the call is given, however fast the workers start.
    with pytest.raises(solbench.Timeout):
        solbench.eval(PROBLEM, CPP_SOLUTION, no_db=True, timeout=0.5, arch=ARCH, no_baseline=True,
                      rounds=1, time_budget_ms=20000, target_rse=1e-6)
    assert time.monotonic() - start < 10


def test_eval_timeout_leaves_no_scratch(tmp_path, monkeypatch):
    """On timeout= the executable is asked to end (SIGTERM): it kills its workers and removes
    its scratch folders itself before the grace period would SIGKILL it."""
    staging = tmp_path / "staging"
    monkeypatch.setenv("SOLBENCH_STAGING_DIR", str(staging))
    simple = json.loads((PROBLEM / "solutions" / "pytorch_simple" / "solution.json").read_text())
    fast = dict(workloads=[WORKLOAD], arch=ARCH, no_baseline=True, rounds=1, no_timing=True,
                spare_workers=False)
    # A warm zygote (torch and the compile stack imported): the call below reaches its
    # solution's call within its timeout.
    doc = solbench.eval(PROBLEM, simple, no_db=True, **fast)
    assert doc["results"][0]["evaluation"]["status"] == "PASSED"
    sleeper = json.loads(json.dumps(simple))
    sleeper["name"] = "sleeper"
    sleeper["sources"][0]["content"] = (
        "import time\n\n\ndef run(hidden_states, weight):\n"
        "    open('in_call', 'w').close()\n    time.sleep(600)\n")
    seen = threading.Event()
    done = threading.Event()

    def watch():  # the solution's worker is in its call (its scratch folder says so)
        while not done.is_set() and not seen.is_set():
            if any((d / "in_call").exists() for d in staging.glob("worker-*")):
                seen.set()
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with pytest.raises(solbench.Timeout) as info:
            solbench.eval(PROBLEM, sleeper, db=tmp_path / "t.db", timeout=10, **fast)
    finally:
        done.set()
        watcher.join()
    assert seen.is_set(), "the solution never ran: nothing was tested"
    assert info.value.exit_code == -signal.SIGTERM, info.value.stderr  # not SIGKILLed
    assert "solbench: interrupted by SIGTERM; removed" in info.value.stderr
    assert sorted(p.name for p in staging.iterdir()) == []


# --- run -------------------------------------------------------------------------------

def test_run_a_data_set(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / PROBLEM.name).symlink_to(PROBLEM)
    sols = tmp_path / "solutions"
    sols.mkdir()
    shutil.copy(CPP_SOLUTION, sols / "cpp.json")
    doc = solbench.run(data, sols, db=tmp_path / "run.db", max_workloads=1, arch=ARCH,
                       no_baseline=True, time_budget_ms=20, rounds=2)
    assert doc["layout"] == "problems"
    [problem] = doc["problems"]
    [evaluation] = problem["solutions"]
    assert evaluation["solution"] == "rmsnorm_cpp_rowwise"
    assert evaluation["statuses"] == {"PASSED": 1}
    assert doc["total"]["evaluated"] == 1


def test_run_missing_data_set_raises(cli, tmp_path):
    message, code = cli.error("run", tmp_path / "none", "--reference", "--json",
                              "--db", tmp_path / "r.db")
    with pytest.raises(solbench.InputError) as e:
        solbench.run(tmp_path / "none", reference=True, db=tmp_path / "r.db")
    assert str(e.value) == message and message


# --- the store -------------------------------------------------------------------------

def test_leaderboard_matches_the_cli(evaluated, db, cli):
    doc = solbench.leaderboard(db=db, definition=PROBLEM.name)
    assert doc == cli.json("db", "leaderboard", "--db", db, "--definition", PROBLEM.name, "--json")
    rows = {r["solution"]: r for r in doc["leaderboard"]}
    assert rows["rmsnorm_cpp_rowwise"]["passed"] == 1
    assert rows["rmsnorm_cpp_rowwise"]["definition"] == PROBLEM.name


def test_best_matches_the_cli(evaluated, db, cli):
    doc = solbench.best(db=db)
    assert doc == cli.json("db", "best", "--db", db, "--json")
    [row] = doc["best"]  # the wrong answer is in the store too, but never "best"
    assert row["status"] == "PASSED" and row["solution"] == "rmsnorm_cpp_rowwise"


def test_history_lists_every_trace(evaluated, db, cli):
    doc = solbench.history(db=db, solution="rmsnorm_cpp_rowwise")
    assert doc == cli.json("db", "history", "--db", db, "--solution", "rmsnorm_cpp_rowwise",
                           "--json")
    assert [r["status"] for r in doc["history"]] == ["PASSED"]


def test_export_writes_public_traces(evaluated, db, tmp_path):
    out = tmp_path / "traces.jsonl"
    doc = solbench.export(out, db=db)
    lines = out.read_text().splitlines()
    assert doc["exported"] == len(lines) >= 1
    assert all(json.loads(l)["evaluation"]["status"] for l in lines)


def test_query_of_a_missing_store_raises_the_cli_message(cli, tmp_path):
    missing = tmp_path / "none.db"
    message, code = cli.error("db", "best", "--db", missing, "--json")
    with pytest.raises(solbench.InputError) as e:
        solbench.best(db=missing)
    assert str(e.value) == message
    assert str(missing) in message
    assert not missing.exists()  # a query never creates a store


def test_eval_profile_reaches_the_worker_and_says_why_on_the_cpu():
    """profile=True is --profile: the worker profiles after the timed loop; on the CPU the
    trace's solbench_profile says why there is no kernel profile (the reference's too,
    from the worker that timed T_ref), and the default has none."""
    doc = solbench.eval(PROBLEM, CPP_SOLUTION, no_db=True, profile=True, **FAST)
    ev = doc["results"][0]["evaluation"]
    assert ev["status"] == "PASSED"
    prof = ev["solbench_profile"]
    assert prof["available"] is False
    assert prof["reason"].startswith("no GPU")
    assert prof["verdict"].startswith("no profile: no GPU")
    assert prof["reference"]["available"] is False
    assert prof["reference"]["verdict"].startswith("no profile: no GPU")


def test_run_passes_profile_to_the_cli(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(solbench, "command", lambda args, **kw: seen.append(list(args)) or {})
    solbench.run(tmp_path, reference=True, profile=True)
    solbench.run(tmp_path, reference=True)
    assert "--profile" in seen[0]
    assert "--profile" not in seen[1]
