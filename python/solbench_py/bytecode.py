"""Where Python keeps the bytecode of what solbench's own processes import (the
zygote, the SOL tracer): bridge::keep_bytecode (src/bridge/python.h). Imports
nothing heavy: it runs before torch is imported."""
from __future__ import annotations

import importlib.util
import os
import sys


def keep_bytecode(prefix: str, probe: str = "torch") -> str:
    """Where the interpreter's `probe` package (torch) has no bytecode beside its
    sources (an image stripped of __pycache__, site-packages read-only, or
    PYTHONDONTWRITEBYTECODE set when it was installed), writes and reads this
    process's bytecode under `prefix` (sys.pycache_prefix), so that the next such
    process imports from bytecode instead of compiling torch's sources again.
    Elsewhere, and where the user named a prefix, changes nothing (a prefix would
    hide the bytecode beside the sources). Returns what it did, in words."""
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
    return f"bytecode under {prefix}"
