"""identity.torch_changes after every call of the solution: a full look that finds
nothing is kept (_Seen), and the next call is answered from it while nothing it read
changed. Every change a full look would find must still be found: a torch function
replaced, a harness function's code replaced, the solution's code set in torch's
configuration directly, appended to a list held there, or put in a function held there
as its __code__; and a look that finds nothing twice runs the full look once."""
import os
import pathlib
import sys

import pytest

REPO = pathlib.Path(os.environ.get("SOLBENCH_REPO", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torch.backends.cudnn  # noqa: E402

from solbench_py import identity, provenance, record  # noqa: E402


def found_while_replaced(before, obj, name, value) -> str:
    """What torch_changes(before) says while obj.name is `value` (put back after; the
    monkeypatch fixture's own setattr would be a harness function replaced)."""
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        return identity.torch_changes(before)
    finally:
        setattr(obj, name, saved)


@pytest.fixture
def solution(tmp_path, monkeypatch):
    """The solution's folder on SOLUTION_ROOTS and two functions defined there; the
    fingerprint taken before it, as the worker takes it; full looks counted."""
    folder = tmp_path / "solution"
    folder.mkdir()
    source = folder / "kernel.py"
    source.write_text("def fast(*a, **k):\n    return 1\n\ndef other(*a, **k):\n    return 2\n")
    ns: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), ns)
    full = []
    real = identity._full_look
    monkeypatch.setattr(identity, "_full_look", lambda b, seen=None: full.append(1) or real(b, seen))
    # After the counter: it is a harness function too, and replacing it is a change.
    before = identity.torch_fingerprint()
    saved = list(provenance.SOLUTION_ROOTS)
    provenance.SOLUTION_ROOTS[:] = [str(folder) + os.sep]
    identity._LAST_CLEAN[0] = None
    try:
        yield before, ns, full
    finally:
        provenance.SOLUTION_ROOTS[:] = saved
        identity._LAST_CLEAN[0] = None


def test_an_unchanged_state_is_answered_without_a_full_look(solution):
    before, _, full = solution
    assert identity.torch_changes(before) == ""
    assert identity.torch_changes(before) == ""
    assert identity.torch_changes(before) == ""
    assert len(full) == 1
    # Another fingerprint is another question: a full look.
    other = dict(before)
    assert identity.torch_changes(other) == ""
    assert len(full) == 2


def test_a_torch_function_replaced_after_a_clean_look_is_found(solution, monkeypatch):
    before, ns, full = solution
    assert identity.torch_changes(before) == ""
    assert "torch.rsqrt" in found_while_replaced(before, torch, "rsqrt", ns["fast"])
    assert identity.torch_changes(before) == ""


def test_a_harness_functions_code_replaced_in_place_is_found(solution):
    before, ns, _ = solution
    assert identity.torch_changes(before) == ""
    assert "solbench_py.record.write_call.__code__" in found_while_replaced(
        before, record.write_call, "__code__", ns["fast"].__code__)
    assert identity.torch_changes(before) == ""


def test_the_solutions_code_put_in_configuration_after_a_clean_look_is_found(solution, monkeypatch):
    before, ns, _ = solution
    cudnn = sys.modules["torch.backends.cudnn"]
    assert identity.torch_changes(before) == ""
    # Set directly.
    assert "torch.backends.cudnn.is_available" in found_while_replaced(
        before, cudnn, "is_available", ns["fast"])
    assert identity.torch_changes(before) == ""
    # In a list the configuration held already: the list's identity does not change.
    hooks = []
    monkeypatch.setattr(cudnn, "solbench_test_hooks", hooks, raising=False)
    assert identity.torch_changes(before) == ""
    hooks.append(ns["fast"])
    assert "torch.backends.cudnn.solbench_test_hooks" in identity.torch_changes(before)
    hooks.clear()
    assert identity.torch_changes(before) == ""
    # As the code of a function the configuration held already.
    def plain():
        return 0
    monkeypatch.setattr(cudnn, "solbench_test_fn", plain, raising=False)
    assert identity.torch_changes(before) == ""
    plain.__code__ = ns["other"].__code__
    assert "torch.backends.cudnn.solbench_test_fn" in identity.torch_changes(before)


def test_a_key_holding_none_swapped_for_another_holding_the_solutions_code_is_found(
        solution, monkeypatch):
    # The dict keeps its size; the key that went held None, which is also what a
    # plain look-up of a missing key gives.
    before, ns, _ = solution
    cudnn = sys.modules["torch.backends.cudnn"]
    monkeypatch.setattr(cudnn, "solbench_test_none", None, raising=False)
    assert identity.torch_changes(before) == ""
    del cudnn.solbench_test_none
    cudnn.solbench_test_swapped = ns["fast"]
    try:
        assert "torch.backends.cudnn.solbench_test_swapped" in identity.torch_changes(before)
    finally:
        del cudnn.solbench_test_swapped
        cudnn.solbench_test_none = None


def test_a_configuration_module_brought_in_for_another_of_the_same_count_is_looked_at(solution):
    # sys.modules keeps its size: one module goes, a configuration namespace comes,
    # holding the solution's code.
    before, ns, _ = solution
    import types
    assert identity.torch_changes(before) == ""
    gone_name = next(n for n in sys.modules if n.startswith("json."))
    gone = sys.modules.pop(gone_name)
    fake = types.ModuleType("torch.backends.solbench_test_config")
    fake.hook = ns["fast"]
    sys.modules["torch.backends.solbench_test_config"] = fake
    try:
        assert "torch.backends.solbench_test_config.hook" in identity.torch_changes(before)
    finally:
        del sys.modules["torch.backends.solbench_test_config"]
        sys.modules[gone_name] = gone


def test_a_settings_objects_dict_replaced_whole_is_looked_at(solution, monkeypatch):
    # torch's settings objects (torch.backends.cuda.matmul and the like) are read
    # through their __dict__, which can be replaced by another dict at once.
    before, ns, _ = solution
    cudnn = sys.modules["torch.backends.cudnn"]

    class _Settings:  # a class of torch's own, as far as the look can tell
        __module__ = "torch.backends.solbench_test"

    settings = _Settings()
    settings.flag = True
    monkeypatch.setattr(cudnn, "solbench_test_settings", settings, raising=False)
    assert identity.torch_changes(before) == ""
    settings.__dict__ = {"flag": True, "hook": ns["fast"]}
    assert "torch.backends.cudnn.solbench_test_settings.hook" in identity.torch_changes(before)
    settings.__dict__ = {"flag": True}
    assert identity.torch_changes(before) == ""


@pytest.mark.parametrize("value, settled", [
    (3, True), ("text", True), (None, True), (torch.float32, True), (int, True),
    (torch, True), ([1], False), ((1, 2), False), ({"a": 1}, False), (len, True),
    (lambda: 0, False), (torch.Tensor, False), (torch.zeros(1), False),
])
def test_settled_is_decided_by_the_type_alone(value, settled):
    assert identity._settled(value) is settled


def test_an_object_of_a_python_class_in_configuration_is_watched_by_its_class(solution, monkeypatch):
    # Most configuration values a look cannot settle are objects of Python classes
    # (torch's _ConfigEntry): the quick look keeps their class, the class's dicts and
    # its functions' code instead of asking solution_code again. Every way the
    # solution's code can get into such a value's verdict is still found.
    before, ns, full = solution
    cudnn = sys.modules["torch.backends.cudnn"]

    class _Base:
        __module__ = "torch.backends.solbench_test"

    class _Entry(_Base):
        __module__ = "torch.backends.solbench_test"

        def value(self):
            return 1

    entry = _Entry()
    monkeypatch.setattr(cudnn, "solbench_test_entry", entry, raising=False)
    monkeypatch.setattr(cudnn, "solbench_test_class", _Entry, raising=False)
    assert identity.torch_changes(before) == ""
    looks = len(full)
    assert identity.torch_changes(before) == ""
    assert len(full) == looks, "an unchanged object of a Python class needs no full look"
    seen = identity._LAST_CLEAN[0][1]
    assert any(v is entry for v in seen.typed) and not any(v is entry for v in seen.recheck)

    # A method of the solution's set on its class (or a base class).
    for klass in (_Entry, _Base):
        klass.hook = ns["fast"]
        try:
            found = identity.torch_changes(before)
            assert "torch.backends.cudnn.solbench_test_entry" in found, (klass, found)
            assert "torch.backends.cudnn.solbench_test_class" in found, (klass, found)
        finally:
            del klass.hook
        assert identity.torch_changes(before) == ""
    # The code of a method it has, replaced by the solution's.
    saved = _Entry.value.__code__
    _Entry.value.__code__ = ns["other"].__code__
    try:
        assert "torch.backends.cudnn.solbench_test_entry" in identity.torch_changes(before)
    finally:
        _Entry.value.__code__ = saved
    assert identity.torch_changes(before) == ""

    # Its __class__ set to a class of the solution's.
    class Theirs(_Base):
        __module__ = "torch.backends.solbench_test"
        run = ns["fast"]

    entry.__class__ = Theirs
    try:
        assert "torch.backends.cudnn.solbench_test_entry" in identity.torch_changes(before)
    finally:
        entry.__class__ = _Entry
    assert identity.torch_changes(before) == ""

    # A base of its class swapped for a class of the solution's.
    class TheirBase:
        __module__ = "torch.backends.solbench_test"
        run = ns["fast"]

    _Entry.__bases__ = (TheirBase,)
    try:
        assert "torch.backends.cudnn.solbench_test_entry" in identity.torch_changes(before)
    finally:
        _Entry.__bases__ = (_Base,)
    assert identity.torch_changes(before) == ""
