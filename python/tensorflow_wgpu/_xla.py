"""XLA requests on WGPU: ``tf.function(jit_compile=True)``, Keras's ``jit_compile="auto"`` (XLA on
every non-Apple GPU) and the ``tf.function(jit_compile=True)`` Keras wraps grouped convolutions in.

XLA has no compiler for the WGPU platform, so TensorFlow would fail every such call with "Could not
find compiler for platform WGPU". Where the plugin is loaded, a function asked to compile with XLA
runs without it (its ``jit_compile`` reads ``False``) through TF's ordinary executor and the
plugin's kernels, as TF does for pluggable devices on macOS (tensorflow-metal). A warning says so
once per process. ``TF_WGPU_IGNORE_XLA=0`` turns this off and restores TF's error.

``patch`` makes ``Function._jit_compile`` of ``tf.function``'s module a property, installed as soon
as TensorFlow imports that module (``install`` asks ``_hooks`` to wait for it;
``tensorflow_wgpu.pth`` in site-packages imports this package at interpreter start), so it covers
functions made by Keras and other libraries too, in programs that never import
``tensorflow_wgpu``. Functions restored from a SavedModel with XLA attributes in their graph are not
rebuilt and keep TF's error.
"""

import os
import warnings

from tensorflow_wgpu import _hooks

TARGET = "tensorflow.python.eager.polymorphic_function.polymorphic_function"
ENV = "TF_WGPU_IGNORE_XLA"

_warned = False
_plugin_loaded = None


def enabled():
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def plugin_loaded():
    """Whether this process loaded the WGPU plugin (checked without loading it or initialising TF's
    devices, which would freeze their configuration). TF loads it during `import tensorflow`, after
    some of its own tf.functions exist: only a positive answer is kept."""
    global _plugin_loaded
    if not _plugin_loaded:
        _plugin_loaded = _find_loaded_plugin()
    return _plugin_loaded


def _find_loaded_plugin():
    try:
        with open("/proc/self/maps") as maps:
            return any("libtensorflow_wgpu" in line for line in maps)
    except OSError:
        pass
    import ctypes

    from tensorflow_wgpu import library_path

    path = os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH") or library_path()
    if not path:
        return False
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        return True
    except OSError:
        return False


def _warn_once():
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "tensorflow-wgpu: XLA has no compiler for the WGPU device; functions marked jit_compile=True "
            "(Keras's jit_compile='auto' included) run through TensorFlow's executor on WGPU instead. "
            f"Set {ENV}=0 to get TensorFlow's error instead.",
            RuntimeWarning,
            stacklevel=3,
        )


def patch(module):
    """Makes ``module.Function``'s ``_jit_compile`` (module: tf.function's polymorphic_function) read
    False where the request goes to WGPU. A property, decided at each read (tracing, calls), so that
    functions made before TF loaded the plugin are covered too."""
    function_class = getattr(module, "Function", None)
    if function_class is None or isinstance(function_class.__dict__.get("_jit_compile"), property):
        return

    def get(self):
        requested = self.__dict__.get("_tf_wgpu_jit_compile")
        if requested and enabled() and plugin_loaded():
            _warn_once()
            return False
        return requested

    def set(self, value):
        self.__dict__["_tf_wgpu_jit_compile"] = value

    function_class._jit_compile = property(get, set, doc="jit_compile, as tensorflow-wgpu serves it")


def install():
    """Patches tf.function now if TensorFlow is imported, else when it is."""
    _hooks.when_imported(TARGET, patch)
