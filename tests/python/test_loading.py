"""The three ways to load the plugin, and out-of-memory through real TF, each in a fresh process."""

import os
import subprocess
import sys
import sysconfig

import pytest
import tensorflow_wgpu

PROBE = """
import tensorflow as tf
{load}
gpus = tf.config.list_physical_devices("GPU")
assert gpus, "no GPU device"
tf.config.set_soft_device_placement(False)
with tf.device("/GPU:0"):
    y = tf.constant([1.0, 2.0]) * 3.0
assert y.device.endswith("GPU:0"), y.device
assert list(y.numpy()) == [3.0, 6.0]
print("LOADED-OK")
"""


def site_packages_without_plugins(tmp_path):
    """A site-packages look-alike (symlinks) without `tensorflow-plugins`, so only the route under
    test loads the library."""
    real = sysconfig.get_paths()["purelib"]
    fake = tmp_path / "fake-site-packages"
    fake.mkdir()
    for entry in os.listdir(real):
        if entry != "tensorflow-plugins":
            os.symlink(os.path.join(real, entry), fake / entry)
    return str(fake)


def run_python(code, env_extra, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=site_packages_without_plugins(tmp_path), **env_extra)
    env.pop("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", None)
    env.update(env_extra)
    # -S: no site module, so the real site-packages (with the installed plugin) is not on the path.
    return subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def library():
    path = tensorflow_wgpu.library_path()
    assert path and os.path.exists(path), "the plugin is not installed (pip install .)"
    return path


def test_installed_plugin_is_loaded_by_import_tensorflow(library):
    # This whole test session runs with the installed plugin: import alone was enough.
    import tensorflow as tf

    assert tf.config.list_physical_devices("GPU")


def test_env_var_route(library, tmp_path):
    out = run_python(PROBE.format(load=""), {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": library}, tmp_path)
    assert "LOADED-OK" in out.stdout, out.stderr[-3000:]


def test_runtime_loader_route(library, tmp_path):
    load = (
        "from tensorflow.python.framework import load_library\n"
        f"load_library.load_pluggable_device_library({library!r})"
    )
    out = run_python(PROBE.format(load=load), {}, tmp_path)
    assert "LOADED-OK" in out.stdout, out.stderr[-3000:]


def test_without_the_plugin_there_is_no_gpu(tmp_path):
    code = "import tensorflow as tf; print('GPUS', len(tf.config.list_physical_devices('GPU')))"
    out = run_python(code, {}, tmp_path)
    assert "GPUS 0" in out.stdout, out.stderr[-3000:]


def test_out_of_device_memory_fails_cleanly(library, tmp_path):
    # A 64 MiB budget. A kernel output that does not fit is ResourceExhausted; a copy that does not
    # fit is TF's own "Dst tensor is not initialized" (as with CUDA TF). The process goes on.
    code = """
import numpy as np, tensorflow as tf
tf.config.set_soft_device_placement(False)
with tf.device("/GPU:0"):
    col, row = tf.constant(np.ones((8192, 1), np.float32)), tf.constant(np.ones((1, 8192), np.float32))
    try:
        (col * row).numpy()  # 256 MiB output
        print("NO-ERROR")
    except tf.errors.ResourceExhaustedError as e:
        print("RESOURCE-EXHAUSTED", "OOM" in str(e))
big = np.ones(48 << 20, dtype=np.float32)
try:
    with tf.device("/GPU:0"):
        tf.identity(tf.constant(big)).numpy()
    print("NO-ERROR")
except (tf.errors.ResourceExhaustedError, tf.errors.InternalError) as e:
    print("COPY-FAILED", "Dst tensor is not initialized" in str(e) or "OOM" in str(e))
with tf.device("/GPU:0"):
    print("STILL-WORKS", (tf.constant([2.0]) * 2.0).numpy())
"""
    out = run_python(code, {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": library, "TF_WGPU_MEMORY_LIMIT_MB": "64"}, tmp_path)
    assert "RESOURCE-EXHAUSTED True" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "COPY-FAILED True" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "STILL-WORKS [4.]" in out.stdout, out.stdout + out.stderr[-3000:]


def test_module_main_prints_the_library_and_the_adapters(library):
    """`python -m tensorflow_wgpu`, as the README's install steps run it on every OS."""
    out = subprocess.run([sys.executable, "-m", "tensorflow_wgpu"], capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "TF_PLUGGABLE_DEVICE_LIBRARY_PATH"})
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert f"library: {library}" in out.stdout, out.stdout
    assert "GPU:0:" in out.stdout and "backend Vulkan" in out.stdout, out.stdout


def test_plugin_file_is_named_for_tf_s_loader(library):
    """TF's loader takes `.so` (Linux), `.dylib` (macOS) and `.dll` (Windows) files from
    `site-packages/tensorflow-plugins` (`load_library._is_shared_object`); setup.py names the
    library for the OS it builds on."""
    from tensorflow.python.framework import load_library

    name = os.path.basename(library)
    assert os.path.basename(os.path.dirname(library)) == "tensorflow-plugins"
    assert load_library._is_shared_object(name), name
