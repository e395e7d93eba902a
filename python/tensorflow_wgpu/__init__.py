"""tensorflow-wgpu: TensorFlow on any Vulkan, Metal or DX12 GPU.

Installing the package is enough: TensorFlow loads ``tensorflow-plugins/libtensorflow_wgpu.so``
(``.dylib`` on macOS, ``tensorflow_wgpu.dll`` on Windows) from site-packages at import time. This
module helps to find the library; ``python -m tensorflow_wgpu`` prints it with the adapters found.
"""

import glob
import os
import site
import sys

from tensorflow_wgpu import _memory, _variables, _xla

__all__ = ["library_path", "memory_stats", "dispatch_count"]

_STATS_FIELDS = ("bytes_in_use", "peak_bytes_in_use", "num_allocs", "largest_alloc_size", "bytes_limit",
                 "pooled_bytes", "live_allocations")


def library_path():
    """Path of the installed plugin library, or None."""
    roots = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
    for root in roots:
        for name in glob.glob(os.path.join(root, "tensorflow-plugins", "*tensorflow_wgpu*")):
            return name
    return None


def _loaded_library():
    """The plugin library TensorFlow loaded, through ctypes, or None."""
    import ctypes

    path = os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH") or library_path()
    if path is None:
        return None
    try:
        if os.name == "nt":
            # Only the module TensorFlow loaded (found by its file name): LoadLibrary would load one
            # that is not. The handle is 64 bits wide.
            get_module = ctypes.windll.kernel32.GetModuleHandleW
            get_module.argtypes = [ctypes.c_wchar_p]
            get_module.restype = ctypes.c_void_p
            handle = get_module(os.path.basename(os.path.normpath(path)))
            if not handle:
                return None
            return ctypes.CDLL(path, handle=handle)
        # RTLD_NOLOAD: only the copy TensorFlow loaded, never a second one.
        return ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None


def dispatch_count():
    """How many kernel dispatches the plugin has encoded in this process (every device), or None
    where the library is not loaded. The profiler records one event per dispatch."""
    import ctypes

    lib = _loaded_library()
    if lib is None:
        return None
    lib.tf_wgpu_dispatch_count.restype = ctypes.c_uint64
    return int(lib.tf_wgpu_dispatch_count())


def memory_stats(device=0):
    """The WGPU allocator's figures for device ``device`` (an ordinal) as a dict of ints:
    ``bytes_in_use``, ``peak_bytes_in_use``, ``num_allocs``, ``largest_alloc_size``,
    ``bytes_limit`` (the budget, ``TF_WGPU_MEMORY_LIMIT_MB``), ``pooled_bytes`` (freed buffers kept
    for reuse, outside the budget) and ``live_allocations``.

    With TF's BFC allocator (the default, ``TF_WGPU_ALLOCATOR=bfc``) these count BFC's regions;
    ``tf.config.experimental.get_memory_info`` reports the tensors inside them. Returns None until TensorFlow has opened
    the device (any op placed on it does). Reads the library TensorFlow already loaded: dlopen of
    the same path returns the loaded copy and runs no initialisation again.
    Returns None as well where the library is not loaded.
    """
    import ctypes

    lib = _loaded_library()
    if lib is None:
        return None

    class _Stats(ctypes.Structure):
        _fields_ = [(name, ctypes.c_int64) for name in _STATS_FIELDS]

    lib.tf_wgpu_memory_stats.argtypes = [ctypes.c_int, ctypes.POINTER(_Stats)]
    lib.tf_wgpu_memory_stats.restype = ctypes.c_int
    stats = _Stats()
    if not lib.tf_wgpu_memory_stats(int(device), ctypes.byref(stats)):
        return None
    return {name: int(getattr(stats, name)) for name in _STATS_FIELDS}


# tensorflow_wgpu.pth imports the package at start-up (importing it by hand does the same where the
# .pth file did not run, as under python -S): XLA requests, eager variable updates, logical devices'
# memory limits.
_xla.install()
_variables.install()
_memory.install()
