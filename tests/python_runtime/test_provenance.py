"""provenance.solution_code with a look's memo of class verdicts (`classes`, which
identity._config_replacements shares over its 5300 entries): each class is judged by
its own members, so a memo filled by a base class never hides a subclass of the
solution's, and every verdict is the one given without the memo."""
import os
import pathlib
import sys

REPO = pathlib.Path(os.environ.get("SOLBENCH_REPO", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO / "python"))

from solbench_py import provenance  # noqa: E402


def test_a_shared_memo_gives_the_verdicts_each_value_gets_alone(tmp_path):
    solution = tmp_path / "solution"
    solution.mkdir()
    source = solution / "kernel.py"
    source.write_text("import collections\n"
                      "class Tuned(collections.OrderedDict):\n"
                      "    def hook(self):\n"
                      "        return 1\n"
                      "def fn():\n"
                      "    return 2\n")
    ns: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), ns)
    import collections
    values = [collections.OrderedDict(), collections.OrderedDict, ns["Tuned"], ns["Tuned"](),
              [ns["fn"]], {"k": collections.OrderedDict()}, 3, "text", fn_outside]
    saved = list(provenance.SOLUTION_ROOTS)
    provenance.SOLUTION_ROOTS[:] = [str(solution)]
    try:
        alone = [provenance.solution_code(v) for v in values]
        classes: dict = {}
        shared = [provenance.solution_code(v, classes=classes) for v in values]
    finally:
        provenance.SOLUTION_ROOTS[:] = saved
    assert alone == [False, False, True, True, True, False, False, False, False]
    assert shared == alone
    # The base's verdict is kept for the look; the subclass's own members still count.
    assert classes[id(collections.OrderedDict)] is False
    assert classes[id(ns["Tuned"])] is True


def fn_outside():
    return 0
