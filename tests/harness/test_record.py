#!/usr/bin/env python3
"""The judge's records (python/solbench_py/record.py) and what the solution's worker
keeps out of the solution's reach:
  - a call's outputs and input digests written and read back bit for bit (bfloat16,
    bool, int64, 0-d, empty), as data: the file is checked against its digest, a
    SHA-256 tree over the header and each output's LEAF-byte leaves (computed here
    from the file's bytes, with the real LEAF and with one of 1 KiB in pieces of 4
    KiB, which cuts outputs into several leaves hashed by several threads);
  - a changed byte, a truncated or extended file, a file that is not a record, a
    missing one: RecordChanged; a header with an unknown dtype or wrong sizes under
    a matching digest: RecordError; an existing path is never overwritten;
  - harness_only(): a TorchFunctionMode the solution left active does not reach
    the harness's copies (and is back afterwards);
  - an unwritten bool output (poison byte 0xFF) matches neither True nor False;
  - the judge's input check tells "given other values" from "changed by the call";
  - replacing a harness function, or a method of the CUDA stream and event classes
    the records copy through, is seen by the fingerprint (runtime.torch_changes).
Exit status 0 when every case holds."""
import hashlib
import json
import os
import sys
import tempfile

import torch
from torch.overrides import TorchFunctionMode

from solbench_py import correctness, inputs, record, runtime

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def raises(fn, exc):
    try:
        fn()
    except exc:
        return True
    except Exception as e:  # the wrong kind
        failures.append(f"expected {exc.__name__}, got {type(e).__name__}: {e}")
        return False
    return False


def tree_digest(data: bytes) -> str:
    """The record's digest from its bytes, as record.py's docstring defines it."""
    head, _, body = data.partition(b"\n")
    head += b"\n"
    top = hashlib.sha256(head)
    pos = 0
    for o in json.loads(head[len(record.MAGIC):])["outputs"]:
        n = o["nbytes"]
        for s in range(0, n, record.LEAF):
            top.update(hashlib.sha256(body[pos + s:pos + min(s + record.LEAF, n)]).digest())
        pos += n
    return top.hexdigest()


def several_pieces(d) -> None:
    """Outputs of several leaves each (LEAF of 1 KiB, CHUNK of 4 KiB): read back,
    digest, a change in a middle leaf."""
    kept = record.CHUNK, record.LEAF
    record.CHUNK, record.LEAF = 4096, 1024
    try:
        g = torch.Generator().manual_seed(2)
        outs = [torch.randn(1500, generator=g), torch.arange(700, dtype=torch.int16)]
        path = os.path.join(d, "pieces.rec")
        sha = record.write_call(path, outs, [])
        raw = open(path, "rb").read()
        expect(sha == tree_digest(raw), "the digest of outputs of several pieces")
        expect(sha != hashlib.sha256(raw).hexdigest(), "a tree, not one SHA-256 of the file")
        got = record.read_call(path, sha, "cpu")["outputs"]
        expect(all(runtime.same_bits(a, b) for a, b in zip(outs, got)), "several pieces read back")
        changed = bytearray(raw)
        changed[len(raw) - 1400 * 4] ^= 4  # inside the first output's middle piece
        p = os.path.join(d, "pieces2.rec")
        with open(p, "wb") as f:
            f.write(bytes(changed))
        expect(raises(lambda: record.read_call(p, sha, "cpu"), record.RecordChanged),
               "a change in a middle piece")
    finally:
        record.CHUNK, record.LEAF = kept


def main() -> int:
    d = tempfile.mkdtemp()
    several_pieces(d)
    g = torch.Generator().manual_seed(1)
    outs = [torch.randn(2, 5, generator=g).bfloat16(),
            torch.randn(3, 4, generator=g).t(),  # not contiguous
            torch.tensor([[True, False], [False, True]]),
            torch.tensor(7, dtype=torch.int64),
            torch.empty(0, 3)]
    ins = [torch.randn(4, generator=g), 2.5, torch.arange(6).reshape(2, 3)]
    before = record.digests(ins)
    path = os.path.join(d, "r0.rec")
    sha = record.write_call(path, outs, ins, before)
    expect(sha == tree_digest(open(path, "rb").read()), "reported digest")
    got = record.read_call(path, sha, "cpu")
    for i, (a, b) in enumerate(zip(outs, got["outputs"])):
        expect(a.dtype == b.dtype and a.shape == b.shape and runtime.same_bits(a.contiguous(), b),
               f"output {i} read back: {b}")
    expect(got["devices"] == ["cpu"] * len(outs), f"devices {got['devices']}")
    expect(got["inputs_after"] == before and got["inputs_before"] == before, "input digests")
    expect(before[1] is None, "a scalar has no digest")
    expect(record.digest(ins[0]) != record.digest(ins[0].double()), "dtype is part of a digest")
    expect(record.digest(ins[2]) != record.digest(ins[2].reshape(3, 2)), "shape is part of a digest")

    # Tampering, truncation, extension, missing, foreign files.
    raw = open(path, "rb").read()

    def variant(name, data):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        return p
    flipped = bytearray(raw)
    flipped[-3] ^= 1
    expect(raises(lambda: record.read_call(variant("a.rec", bytes(flipped)), sha, "cpu"),
                  record.RecordChanged), "a flipped byte")
    expect(raises(lambda: record.read_call(variant("b.rec", raw[:-1]), sha, "cpu"),
                  record.RecordChanged), "a truncated file")
    # Output 0 claimed as [2, 5e14] bfloat16 (2e15 bytes), consistently with its shape.
    huge = raw.replace(b'"shape":[2,5],"device":"cpu","nbytes":20',
                       b'"shape":[2,500000000000000],"device":"cpu","nbytes":2000000000000000', 1)
    expect(huge != raw, "test setup: the header names output 0's 20 bytes")
    expect(raises(lambda: record.read_call(variant("h.rec", huge), sha, "cpu"), record.RecordChanged),
           "a header claiming more bytes than the file holds (nothing allocated)")
    expect(raises(lambda: record.read_call(variant("c.rec", raw + b"x"), sha, "cpu"),
                  record.RecordChanged), "an extended file")
    expect(raises(lambda: record.read_call(variant("d.rec", b"hello\n"), sha, "cpu"),
                  record.RecordChanged), "not a record")
    expect(raises(lambda: record.read_call(os.path.join(d, "none.rec"), sha, "cpu"),
                  record.RecordChanged), "a missing file")
    bad = raw.replace(b'"dtype":"bfloat16"', b'"dtype":"__class__"', 1)
    expect(raises(lambda: record.read_call(variant("e.rec", bad),
                                           tree_digest(bad), "cpu"),
                  record.RecordError), "an unknown dtype under a matching digest")
    expect(raises(lambda: record.write_call(path, outs, ins), FileExistsError),
           "an existing record is not overwritten")
    expect(raises(lambda: record.write_call(os.path.join(d, "f.rec"), [torch.ones(2).as_subclass(
        type("Sub", (torch.Tensor,), {}))], []), TypeError), "a tensor subclass is not recorded")

    # A mode the solution left active: the harness's copies do not go through it.
    class Fake(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return torch.zeros_like(out) if isinstance(out, torch.Tensor) else out
    ones, twos = torch.ones(3), torch.full((3,), 2.0)  # made before the mode
    mode = Fake()
    mode.__enter__()
    try:
        expect(float(ones.clone().sum()) == 0.0, "the mode is active (test setup)")
        kept = runtime.clone_all([ones])[0]
        p2 = os.path.join(d, "m.rec")
        sha2 = record.write_call(p2, [twos], [])
        digest_in_mode = record.digest(ones)
        expect(float(ones.clone().sum()) == 0.0, "the mode is back after the harness's work")
    finally:
        mode.__exit__(None, None, None)
    expect(float(kept.sum()) == 3.0, "clone_all under the mode")
    expect(float(record.read_call(p2, sha2, "cpu")["outputs"][0].sum()) == 6.0,
           "write_call under the mode")
    expect(digest_in_mode == record.digest(ones), "digest under the mode")

    # An unwritten bool output fails; a written one passes.
    # (All True would have matched the earlier poison of all True.)
    ref = torch.ones(300, dtype=torch.bool)
    out = torch.empty(300, dtype=torch.bool)
    inputs.poison_(out)
    tol = correctness.default_tolerance()
    expect(correctness.check_outputs([out], [ref], ["o"], tol)["status"] == "INCORRECT_NUMERICAL",
           "an unwritten bool output")
    out.copy_(ref)
    expect(correctness.check_outputs([out], [ref], ["o"], tol)["status"] == "OK",
           "a written bool output")

    # The judge's look at inputs.
    spec = {"inputs": [{"name": "a"}, {"name": "s"}, {"name": "b"}], "outputs": [],
            "tolerance": {}}
    w = runtime.Workload(spec, "cpu", None)
    w.reference_writes = set()
    after = list(before)
    after[2] = record.digest(ins[2] + 1)
    expect(w.judge_inputs(ins, after, before) == ([], ["b"]), "a changed input is named")
    other = list(before)
    other[0] = record.digest(ins[0] + 1)
    expect(w.judge_inputs(ins, before, other) == (["a"], []), "other starting values are named")
    w.reference_writes = {2}
    expect(w.judge_inputs(ins, after, before) == ([], []), "an input the reference writes")
    expect(raises(lambda: w.judge_inputs(ins, before[:2], None), record.RecordError),
           "a digest list of the wrong length")

    # The harness's own functions are in the fingerprint.
    fp = runtime.torch_fingerprint()
    orig = record.write_call
    record.write_call = lambda *a: "0" * 64
    try:
        changed = runtime.torch_changes(fp)
    finally:
        record.write_call = orig
    expect("solbench_py.record.write_call" in changed, f"replaced write_call: {changed!r}")
    code = runtime.Workload.check.__code__
    runtime.Workload.check.__code__ = (lambda self, outs, refs, check_meta=True: {}).__code__
    try:
        changed = runtime.torch_changes(fp)
    finally:
        runtime.Workload.check.__code__ = code
    expect("solbench_py.runtime.Workload.check.__code__" in changed, f"new code: {changed!r}")
    # The CUDA stream and event methods the records copy through, and their hashing
    # threads' builtins (bound at import: replacing the module's names changes nothing).
    orig = torch.cuda.Event.synchronize
    torch.cuda.Event.synchronize = lambda self: None
    try:
        changed = runtime.torch_changes(fp)
    finally:
        torch.cuda.Event.synchronize = orig
    expect("torch.cuda.Event.synchronize" in changed, f"replaced Event.synchronize: {changed!r}")
    expect(record._start_thread is __import__("_thread").start_new_thread or
           getattr(record._start_thread, "_solbench", False), "the hashing threads' start")
    expect(runtime.torch_changes(fp) == "", f"unchanged: {runtime.torch_changes(fp)!r}")

    # The fingerprint GPU inputs get (computed here on host tensors: the same torch ops):
    # equal for equal bytes, different after one element, two swapped ones, or a size.
    def fingerprint(t):
        return record._digests([t], lambda _: True)[0]
    x = torch.randn(1000, 37).to(torch.bfloat16)
    fx = fingerprint(x)
    expect(fx == fingerprint(x.clone()), "fingerprint of a copy differs")
    y = x.clone()
    y[500, 3] = 1.5 if float(y[500, 3]) != 1.5 else -1.5
    expect(fx != fingerprint(y), "one element changed, same fingerprint")
    z = x.clone().view(-1)
    i, j = 7, 8 if float(z[7]) != float(z[8]) else 9
    z[[i, j]] = z[[j, i]]
    expect(fx != fingerprint(z.view(1000, 37)), "two elements swapped, same fingerprint")
    expect(fingerprint(torch.zeros(5, dtype=torch.uint8))
           != fingerprint(torch.zeros(6, dtype=torch.uint8)), "size not in it")
    # The sums themselves, against their definition written out in integers
    # (src/harness/timing/gpu/fingerprint.h; the kernel's GPU test checks the same
    # known answer): 103 bytes, so a zero-padded last word, and sizes around a word.
    def sums_by_definition(data: bytes):
        m = 1 << 64

        def shr(x, n):  # arithmetic, on x read as int64
            return ((x - m if x >> 63 else x) >> n) % m

        def mix(x):
            x ^= shr(x, 30)
            x = x * 0xBF58476D1CE4E5B9 % m
            x ^= shr(x, 27)
            x = x * 0x94D049BB133111EB % m
            return x ^ shr(x, 31)
        data += bytes(-len(data) % 4)
        s1 = s2 = 0
        for i in range(len(data) // 4):
            w = int.from_bytes(data[4 * i:4 * i + 4], "little", signed=True) % m
            k = mix(i)
            s1, s2 = (s1 + w * k) % m, (s2 + w * w * (k | 1)) % m
        return [v - m if v >> 63 else v for v in (s1, s2)]
    known = torch.tensor([(i * 37 + 11) % 256 for i in range(103)], dtype=torch.uint8)
    expect(record._device_sums(known).tolist() == sums_by_definition(bytes(known.tolist()))
           == [-3804806806805524125, 6957446008639672006], "the known answer's sums")
    for n in (0, 1, 3, 4, 5, 64, 999):
        b = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g)
        expect(record._device_sums(b).tolist() == sums_by_definition(bytes(b.tolist())),
               f"sums of {n} bytes")

    # Several at once (one read-back for them all): each as it is alone.
    several = [x, 3, torch.arange(10, dtype=torch.int16), None, y]
    expect(record._digests(several, lambda _: True)
           == [fx, None, fingerprint(several[2]), None, fingerprint(y)],
           "fingerprints read back together differ from each alone")

    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
