"""Compile caches that move from worker to worker (worker_policy.h lend_caches).

A worker's Triton and Inductor caches live in its own scratch folder: the parent
lends the content's caches there before the worker starts (a rename) and takes
them back after it ends, so every worker sees the same caches at a path of its
own. Two things in them name the path of the worker that wrote them:

- Triton's cache groups (`__grp__<kernel>.json`) list their files by absolute
  path, and Triton drops a file whose path does not exist: in any later worker
  every kernel of a lent cache missed and was compiled again (a warm call of the
  peer's Triton RMSNorm spent 0.4-0.5 s of its solution's calls compiling it,
  docs/speed.md). `LentCacheManager` finds a group's files in its own folder
  instead, where Triton wrote them beside the group.
- Inductor's FX graph cache keeps the Triton kernels it launches statically with
  the path of their autotuning result (`.best_config`) in the writer's cache
  folder. A later worker that hits the entry and autotunes writes the result there:
  makedirs of a folder that is gone, under a parent the sandbox does not let it
  write, and the call fails (PermissionError; a T_b fell back to eager on it). The
  local autotune cache is turned off (`autotune_local_cache`): each worker
  autotunes in its first call, as with a cold cache.

`relocate()` is called once in every worker before any solution or reference code
runs: modules already imported (a worker forked from the zygote) are set at once,
the others when first imported, by a finder that stays on sys.meta_path (the
solution's import hooks are judged against what is there before it loads).
"""
from __future__ import annotations

import importlib.abc
import json
import os
import sys


def _triton(_module) -> None:
    from triton import knobs
    from triton.runtime.cache import FileCacheManager

    class LentCacheManager(FileCacheManager):
        """Triton's file cache, with a group's files looked up by name in this
        manager's folder (where `put` writes them) rather than at the absolute
        path the group was written with: it never reads a file outside its own
        folder, whatever a group names."""

        def get_group(self, filename):
            path = self._make_path(f"__grp__{filename}")
            try:
                with open(path) as f:
                    children = json.load(f).get("child_paths")
            except (OSError, ValueError):
                return None
            if not isinstance(children, dict):
                return None
            found = {}
            for name, old in children.items():
                here = self._make_path(os.path.basename(str(old)))
                if os.path.exists(here):
                    found[name] = here
            return found

    if knobs.cache.manager_class is None:  # a manager the user chose is kept
        knobs.cache.manager_class = LentCacheManager


def _inductor(config) -> None:
    if hasattr(config, "autotune_local_cache"):
        config.autotune_local_cache = False


_ACTIONS = {"triton": _triton, "torch._inductor.config": _inductor}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs an action on a module once it has been executed. It finds the module's
    spec through the rest of sys.meta_path and wraps only the loader's exec_module;
    the module's __loader__ is the original one afterwards."""

    def __init__(self, actions: dict):
        self.pending = dict(actions)

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        spec.loader = _Then(loader, self, name)
        return spec

    def done(self, name: str, module) -> None:
        action = self.pending.pop(name, None)
        if action is not None:
            _quietly(action, module)


class _Then(importlib.abc.Loader):
    def __init__(self, loader, finder: _AfterImport, name: str):
        self.loader, self.finder, self.name = loader, finder, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.done(self.name, module)


def _quietly(action, module) -> None:
    try:
        action(module)
    except Exception:  # noqa: BLE001 - a torch or Triton without the knob keeps its own cache
        pass


_installed = False


def relocate() -> None:
    """Makes lent Triton and Inductor caches safe and useful from any worker's path
    (above)."""
    global _installed
    if _installed:
        return
    _installed = True
    later = {}
    for name, action in _ACTIONS.items():
        module = sys.modules.get(name)
        if module is not None:
            _quietly(action, module)
        else:
            later[name] = action
    if later:
        sys.meta_path.insert(0, _AfterImport(later))
