import json
import os
import zlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TF-CPU references run TF's own (Eigen) kernels on every machine: TF turns its oneDNN kernels on by
# default only on CPUs with AVX-512 VNNI or newer, and they answer some inputs differently (an
# empty-batch convolution with the input's channel count, a 5-D batch norm with an error) and sum in
# another order. Worker processes inherit this; the zoo and training-track tests set both values
# explicitly to measure TF-CPU's own noise. TF_ENABLE_ONEDNN_OPTS=1 runs the suite against oneDNN.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def wgpu_device():
    gpus = tf.config.list_physical_devices("GPU")
    assert gpus, "the WGPU plugin did not load: no GPU device"
    return gpus[0]


@pytest.fixture
def strict_placement():
    """Soft placement off: an op without a WGPU kernel must fail, not fall back to the CPU."""
    previous = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    yield
    tf.config.set_soft_device_placement(previous)


def seed_for(*key):
    """A seed that depends only on `key` and TF_WGPU_TEST_SEED (default 0), so a failure reproduces
    from run to run (Python's own str hash is salted per process); set the variable to draw other
    inputs."""
    return zlib.crc32(repr(key).encode()) ^ int(os.environ.get("TF_WGPU_TEST_SEED", "0"))


@pytest.fixture
def rng(request):
    return np.random.default_rng(seed_for(request.node.name))


@pytest.fixture(scope="session")
def variable_access():
    """Whether this TF exports kernels_experimental.h's variable functions (2.16 does, 2.19+ do
    not), checked the way the plugin checks: eager AssignAdd/AssignSub/ResourceGather/
    ResourceApplyGradientDescent run on the device only where it does."""
    import ctypes

    framework = ctypes.CDLL(os.path.join(os.path.dirname(tf.__file__), "libtensorflow_framework.so.2"))
    return all(hasattr(framework, f) for f in ("TF_MaybeLockVariableInputMutexesInOrder",
                                               "TF_GetInputTensorFromVariable", "TF_ReleaseVariableInputLockHolder"))


def registered_kernels():
    """The plugin's kernel table: (op, {type attribute: dtype name}) per registered kernel."""
    import ctypes

    import tensorflow_wgpu

    lib = ctypes.CDLL(tensorflow_wgpu.library_path())
    lib.tf_wgpu_kernel_table.restype = ctypes.c_char_p
    rows = []
    for line in lib.tf_wgpu_kernel_table().decode().splitlines():
        op, *attrs = line.split()
        rows.append((op, dict(a.split("=") for a in attrs)))
    return rows


def worker_result(done, what="worker"):
    """The JSON a worker process (`subprocess.run(..., capture_output=True, text=True)`) printed on
    its last `RESULT ` line. Fails the test, with the tail of the process's output, where it exited
    non-zero or printed no such line."""
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, \
        f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])
