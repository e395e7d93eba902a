import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % (2**32))
