"""Patches applied to TensorFlow modules as they are imported: a meta-path finder that answers only
for the modules it waits for, and runs each one's patch right after the module executes (before
any `from module import *` elsewhere copies its names)."""

import importlib.abc
import sys

_patches = {}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patches = _patches.get(name)
        if not patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                execute = spec.loader.exec_module

                def exec_module(module, execute=execute):
                    execute(module)
                    for patch in patches:
                        patch(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def when_imported(module_name, patch):
    """Runs `patch(module)` once `module_name` is imported: now if it already is."""
    module = sys.modules.get(module_name)
    if module is not None:
        patch(module)
        return
    _patches.setdefault(module_name, []).append(patch)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
