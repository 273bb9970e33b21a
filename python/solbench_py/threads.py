"""Who started each Python thread of the worker (src/harness/checks/threads.h).

The worker counts its threads before the solution is loaded (worker_session.cc);
a thread that appears later is the solution's unless it is shown to come from a
runtime (torch's Inductor, Triton). Python threads are attributed when they start:
every Python thread is created through _thread.start_new_thread, which is wrapped
here (before any solution code runs) to record, under the new thread's native id,
the innermost creating frame that is not thread machinery. A thread created
around the wrapper has no record and counts as the solution's.
"""
from __future__ import annotations

import sys

from .provenance import frame_origin

_THREAD_ORIGINS: dict = {}


def install_thread_registry() -> None:
    import _thread
    import threading

    original = _thread.start_new_thread
    if getattr(original, "_solbench", False):
        return

    def start_new_thread(function, args, kwargs=None):
        origin = frame_origin(sys._getframe(1))

        def bootstrap(*a, **k):
            _THREAD_ORIGINS[threading.get_native_id()] = origin
            return function(*a, **k)

        return original(bootstrap, args, kwargs or {})

    start_new_thread._solbench = True
    _thread.start_new_thread = start_new_thread
    threading._start_new_thread = start_new_thread  # threading keeps its own reference


def thread_origins() -> dict:
    """{native thread id: "runtime: file:line" | "solution: ..." | "unknown: ..."}."""
    return dict(_THREAD_ORIGINS)
