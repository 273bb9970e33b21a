#!/usr/bin/env python3
"""The Slurm job array on a real single-node Slurm (docs/cluster.md).

Starts munged, slurmctld and slurmd (Debian's slurm-wlm and munge) on localhost
with a generated slurm.conf (CPU only, 2 CPUs), all in a temporary folder and as
the current user; submits scripts/slurm/solbench-array.sbatch for the bundled
problems with their CPU solutions as 2 shards; waits for the array and the
merge job; and checks that the merged store holds exactly what a single-machine
`solbench run` of the same set records: the same (solution, workload) keys,
each once, with the same statuses (latencies differ by noise).

Exit 0: passed; 1: failed; 77 (ctest SKIP_RETURN_CODE): the daemons cannot
start here, with the reason. The daemons are stopped at the end whatever
happens, and die with this process if it is killed (PR_SET_PDEATHSIG).

Usage: slurm_array_test.py --solbench BIN --source DIR [--keep DIR]
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP = 77
DEADLINE_S = 300  # the whole test; ctest's TIMEOUT is above it
CPU_SOLUTIONS = ("pytorch_simple", "cpp_rowwise")
# Small but real: one workload per problem, 8 (problem, workload) pairs and 11
# evaluations to split (a CPU bf16 GEMM alone takes a minute on a loaded 2-core machine).
RUN_ARGS = "--max-workloads 1 --rounds 1 --time-budget-ms 20 --no-baseline"


class Skip(Exception):
    pass


def log(msg):
    print(f"[slurm-test] {msg}", flush=True)


def die_with_parent():
    # Runs in the child before exec: SIGTERM it when this driver dies, even by SIGKILL.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find(tool):
    for d in (os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/sbin"]):
        p = Path(d) / tool
        if d and p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def tail(path, n=15):
    try:
        return "".join(Path(path).read_text(errors="replace").splitlines(True)[-n:])
    except OSError:
        return f"({path} not written)\n"


class Cluster:
    """munged + slurmctld + slurmd under `root`; stop() is safe to call at any point."""

    def __init__(self, root: Path):
        self.root = root
        self.procs = []  # (name, Popen)
        self.host = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))

    def start(self):
        tools = {t: find(t) for t in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch",
                                      "squeue", "scontrol", "sinfo", "scancel")}
        missing = [t for t, p in tools.items() if not p]
        if missing:
            raise Skip(f"cannot start a Slurm cluster: {', '.join(missing)} not installed "
                       "(Debian: apt-get install slurm-wlm munge; scripts/setup.sh --tests does)")
        self.tools = tools
        r = self.root
        # munged insists: the key private to its owner, the socket's folder (and
        # every folder above it) searchable by all.
        os.chmod(r, 0o755)
        (r / "munge").mkdir(mode=0o700)
        (r / "sock").mkdir(mode=0o755)
        os.chmod(r / "sock", 0o755)
        key = r / "munge" / "munge.key"
        subprocess.run([tools["mungekey"], "--create", f"--keyfile={key}"], check=True,
                       capture_output=True)
        self.socket = r / "sock" / "munge.socket"
        self._spawn("munged", [tools["munged"], "-F", "-f", f"--socket={self.socket}",
                               f"--key-file={key}", f"--pid-file={r / 'munge' / 'munged.pid'}",
                               f"--log-file={r / 'munge' / 'munged.log'}",
                               f"--seed-file={r / 'munge' / 'seed'}"])
        self._wait(lambda: self.socket.exists(), 20, "munged to create its socket",
                   r / "munged.out")

        for d in ("state", "spool"):
            (r / d).mkdir()
        # CPU only, 2 CPUs whatever the machine has (config_overrides: slurmd
        # takes them as given), no cgroups, no accounting: what a container allows.
        conf = f"""ClusterName=solbenchci
SlurmctldHost={self.host}(127.0.0.1)
SlurmUser={_user()}
SlurmdUser={_user()}
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'slurmctld.log'}
SlurmdLogFile={r / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=600
NodeName={self.host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=ci Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""
        (r / "slurm.conf").write_text(conf)
        self._spawn("slurmctld", [tools["slurmctld"], "-D", "-i"])
        self._spawn("slurmd", [tools["slurmd"], "-D", "-N", self.host])
        self._wait(self._node_idle, 60, "the node to come up idle in sinfo", r / "slurmd.log")

    def _spawn(self, name, cmd):
        out = open(self.root / f"{name}.out", "wb")
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                             preexec_fn=die_with_parent, start_new_session=True)
        self.procs.append((name, p))

    def _node_idle(self):
        r = subprocess.run([self.tools["sinfo"], "-h", "-N", "-o", "%T"], env=self.env,
                           capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.strip() in ("idle", "mixed", "allocated")

    def _wait(self, cond, seconds, what, log_file):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise Skip(f"cannot start a Slurm cluster here: {name} exited with "
                               f"{p.returncode} while waiting for {what}; its output ends:\n"
                               + tail(self.root / f"{name}.out")
                               + (tail(self.root / f"{name}.log")
                                  if (self.root / f"{name}.log").exists() else ""))
            if cond():
                return
            time.sleep(0.5)
        raise Skip(f"cannot start a Slurm cluster here: no {what} after {seconds} s; "
                   f"{log_file} ends:\n{tail(log_file)}")

    def run(self, cmd, **kw):
        return subprocess.run(cmd, env=kw.pop("env", self.env), capture_output=True, text=True,
                              **kw)

    def stop(self):
        if hasattr(self, "tools") and any(p.poll() is None for _, p in self.procs):
            # Jobs first, so that no slurmstepd (which slurmd does not own) outlives the test.
            try:
                self.run([self.tools["scancel"], "--user", _user()], timeout=20)
                end = time.monotonic() + 15
                while time.monotonic() < end:
                    q = self.run([self.tools["squeue"], "-h", "-o", "%i"], timeout=20)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(0.5)
            except subprocess.TimeoutExpired:
                pass  # the daemons are stopped below all the same
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log(f"stopped {name} (exit {p.returncode})")


def _user():
    import pwd
    return pwd.getpwuid(os.getuid()).pw_name


def job_states(cluster, job_ids):
    """{job id or array task id: (state, exit code)} from scontrol (no accounting here)."""
    out = {}
    for j in job_ids:
        r = cluster.run([cluster.tools["scontrol"], "-o", "show", "job", j])
        for line in r.stdout.splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            key = f.get("JobId", j)
            if "ArrayTaskId" in f:
                key = f"{f.get('ArrayJobId', j)}_{f['ArrayTaskId']}"
            out[key] = (f.get("JobState", "?"), f.get("ExitCode", "?"))
    return out


def results(db):
    """(solution hash, workload uuid) -> [status, ...] of every trace in a store."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT solution_hash, workload_uuid, status FROM traces").fetchall()
    finally:
        con.close()
    out = {}
    for h, w, s in rows:
        out.setdefault((h, w), []).append(s)
    return out


def check(cond, msg, failures, detail=""):
    log(("ok: " if cond else "FAIL: ") + msg + ("" if cond or not detail else f"\n{detail}"))
    if not cond:
        failures.append(msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--source", required=True, help="the repository (problems/, scripts/)")
    ap.add_argument("--keep", help="keep the work folder here (for debugging)")
    a = ap.parse_args()
    t0 = time.monotonic()
    source = Path(a.source).resolve()
    root = Path(tempfile.mkdtemp(prefix="solbench-slurm-", dir=a.keep or "/tmp"))
    cluster = Cluster(root / "cluster")
    (root / "cluster").mkdir()
    failures = []

    # The jobs' environment: a private cache and staging folder (the build cache,
    # and no default store), the binary, the data set and the solutions.
    solutions = root / "solutions"
    solutions.mkdir()
    for prob in sorted((source / "problems").iterdir()):
        for kind in CPU_SOLUTIONS:
            f = prob / "solutions" / kind / "solution.json"
            if f.is_file():
                shutil.copy(f, solutions / f"{prob.name}_{kind}.json")
    out = root / "out"
    env = dict(cluster.env,
               SOLBENCH_CACHE_DIR=str(root / "cache"), SOLBENCH_STAGING_DIR=str(root / "staging"),
               SOLBENCH=a.solbench, SOLBENCH_DATASET=str(source / "problems"),
               SOLBENCH_SOLUTIONS=str(solutions), SOLBENCH_OUT=str(out), SOLBENCH_SHARDS="2",
               SOLBENCH_GPUS_PER_TASK="0", SOLBENCH_RUN_ARGS=RUN_ARGS,
               SOLBENCH_LOCAL_DIR=str(root / "local"),
               SOLBENCH_SBATCH_ARGS="--time=10")
    try:
        cluster.start()
        log(f"cluster up in {time.monotonic() - t0:.1f} s ({root})")

        r = cluster.run(["bash", str(source / "scripts/slurm/solbench-array.sbatch")], env=env,
                        timeout=60)
        log(r.stdout.strip() + ("\n" + r.stderr.strip() if r.stderr.strip() else ""))
        if r.returncode != 0:
            raise AssertionError(f"submitting failed (exit {r.returncode})")
        array_job, merge_job = (out / "jobs").read_text().split()

        end = t0 + DEADLINE_S - 60  # leaves time for the single-machine run
        while True:
            q = cluster.run([cluster.tools["squeue"], "-h", "-j", f"{array_job},{merge_job}",
                             "-o", "%i %T"])
            if not q.stdout.strip():
                break
            if time.monotonic() > end:
                raise AssertionError(f"jobs still queued or running:\n{q.stdout}")
            time.sleep(1)
        states = job_states(cluster, [array_job, merge_job])
        log(f"jobs done in {time.monotonic() - t0:.1f} s: {states}")
        for i in range(2):
            check(states.get(f"{array_job}_{i}", ("?",))[0] == "COMPLETED",
                  f"array task {i} COMPLETED", failures,
                  f"shard-{i}.log ends:\n{tail(out / 'logs' / f'shard-{i}.log')}")
        check(states.get(merge_job, ("?",))[0] == "COMPLETED", "merge job COMPLETED", failures,
              f"merge.log ends:\n{tail(out / 'logs' / 'merge.log')}")

        # Each shard evaluated a non-empty part, and the parts are disjoint.
        shard_docs = [json.loads((out / f"shard-{i}.json").read_text()) for i in range(2)]
        shard_pairs = [d["shard"]["pairs"] for d in shard_docs]
        log(f"shard pairs {shard_pairs} of {shard_docs[0]['shard']['total_pairs']}, predicted "
            f"{[round(d['shard']['predicted_seconds'], 1) for d in shard_docs]} s")
        check(all(p > 0 for p in shard_pairs), "both shards got pairs", failures)
        shard_keys = [set(results(out / f"shard-{i}.db")) for i in range(2)]
        check(not (shard_keys[0] & shard_keys[1]), "the shards' (solution, workload) keys are "
              "disjoint", failures)

        # The same set on one machine, with as many slots as the cluster has CPUs.
        single_db = root / "single.db"
        s = cluster.run([a.solbench, "run", str(source / "problems"), "--solutions", str(solutions),
                         "--cpu-slots", "2", "--db", str(single_db), "--json"] + RUN_ARGS.split(),
                        env=env, timeout=max(30, t0 + DEADLINE_S - time.monotonic()))
        log(f"single-machine run: exit {s.returncode} in {time.monotonic() - t0:.1f} s")
        single = results(single_db)
        merged = results(out / "merged.db")
        check(len(single) > 0, f"the single-machine run recorded {len(single)} result(s)",
              failures)
        check(set(merged) == set(single),
              f"merged keys == single-machine keys ({len(merged)} vs {len(single)}; only merged: "
              f"{sorted(set(merged) - set(single))[:3]}, only single: "
              f"{sorted(set(single) - set(merged))[:3]})", failures)
        check(all(len(v) == 1 for v in merged.values()), "each key recorded once in the merge",
              failures)
        diff = {k: (merged[k], single[k]) for k in set(merged) & set(single)
                if sorted(merged[k]) != sorted(single[k])}
        check(not diff, f"statuses equal ({len(diff)} differ: {list(diff.items())[:3]})", failures)
        statuses = sorted({st for v in single.values() for st in v})
        log(f"statuses seen: {statuses}")
        check(sum(1 for d in shard_docs for p in d["problems"] for e in p["solutions"]
                  for w in e["workload_results"] if w["status"]) == len(merged),
              "the shards' summaries count every merged result", failures)
        # The summary a shard prints and the single run's agree on each result.
        single_doc = json.loads(s.stdout)
        by_key = lambda docs: {(e["solution_hash"], w["uuid"]): w["status"]
                               for d in docs for p in d["problems"] for e in p["solutions"]
                               for w in e["workload_results"]}
        check(by_key(shard_docs) == by_key([single_doc]),
              "the shards' JSON summaries together == the single run's", failures)

        # Merging again changes nothing.
        before = sum(len(v) for v in results(out / "merged.db").values())
        m = cluster.run([a.solbench, "db", "merge", str(out / "merged.db"),
                         str(out / "shard-0.db"), str(out / "shard-1.db"), "--json"], env=env)
        after = sum(len(v) for v in results(out / "merged.db").values())
        added = sum(x["traces"] for x in json.loads(m.stdout)["sources"]) if m.stdout else -1
        check(m.returncode == 0 and added == 0 and before == after,
              f"merging the shards again adds nothing (exit {m.returncode}, {added} added, "
              f"{before} -> {after} traces)", failures)
        check((out / "report.html").is_file(), "the merge job wrote report.html", failures)
    except Skip as e:
        log(f"SKIPPED: {e}")
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        return SKIP
    except Exception as e:  # noqa: BLE001 - reported as the test's failure
        failures.append(f"{type(e).__name__}: {e}")
        log(f"FAIL: {type(e).__name__}: {e}")
        for f in ("slurmctld.log", "slurmd.log"):
            log(f"{f} ends:\n{tail(root / 'cluster' / f)}")
    finally:
        cluster.stop()
        if not a.keep and not failures:
            shutil.rmtree(root, ignore_errors=True)
    log(f"{'PASSED' if not failures else 'FAILED'} in {time.monotonic() - t0:.1f} s"
        + ("" if not failures else f" (work folder kept: {root})"))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
