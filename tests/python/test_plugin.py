"""The plugin under real TensorFlow: device, copies, slices, AddV2/Mul/Cast against TF-CPU, placement."""

import numpy as np
import pytest
import tensorflow as tf

GPU = "/GPU:0"

# Every dtype TF places on the device. int32 stays in host memory, as with CUDA TF.
DEVICE_DTYPES = [
    tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.uint8, tf.int16, tf.uint16,
    tf.uint32, tf.int64, tf.uint64, tf.bool, tf.complex64, tf.complex128,
]


def on_gpu(t):
    return t.device.endswith("device:GPU:0")


def random_values(rng, dtype, shape):
    """Random bit patterns for every dtype (NaN payloads included for floats)."""
    if dtype == tf.bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == tf.bfloat16:
        return tf.bitcast(tf.constant(rng.integers(0, 2**16, size=shape, dtype=np.uint16)), tf.bfloat16).numpy()
    np_dtype = dtype.as_numpy_dtype
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(np_dtype).itemsize, dtype=np.uint8)
    return raw.view(np_dtype).reshape(shape)


def test_device_is_listed(wgpu_device):
    assert wgpu_device.device_type == "GPU"
    details = tf.config.experimental.get_device_details(wgpu_device)
    assert details.get("device_name"), details
    assert any(d.name.endswith("GPU:0") for d in tf.config.list_logical_devices("GPU"))


@pytest.mark.parametrize("dtype", DEVICE_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("n", [0, 1, 3, 4097])
def test_round_trip_is_bit_exact(dtype, n, rng, strict_placement):
    host = random_values(rng, dtype, (n,))
    with tf.device(GPU):
        device_tensor = tf.identity(tf.constant(host))
    assert on_gpu(device_tensor)
    back = device_tensor.numpy()
    assert back.tobytes() == host.tobytes()


def test_int32_stays_in_host_memory_like_cuda_tf():
    x = tf.constant(np.arange(10, dtype=np.int32))
    with tf.device(GPU):
        y = tf.identity(x)
    np.testing.assert_array_equal(y.numpy(), np.arange(10))


INT32_LIKE_SCRIPT = """
import numpy as np, tensorflow as tf
a = tf.constant(np.array([[1, -2, 3], [4, 5, -6]], np.int32))
print(tf.zeros_like(a).numpy().sum(), tf.ones_like(a).numpy().sum(), tf.raw_ops.OnesLike(x=a).device)
"""


def test_int32_zeros_like_and_ones_like_of_an_eager_tensor():
    """TF core's DEVICE_DEFAULT int32 ZerosLike/OnesLike take `x` in device memory while TF's eager
    runtime passes an int32 handle as host memory: TF copied the device address as a host one and
    the process died (SIGSEGV). The plugin's own int32 kernels take that over (a subprocess, since
    a regression kills the interpreter)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", INT32_LIKE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    zeros, ones, device = out.stdout.split()[-3:]
    assert (zeros, ones) == ("0", "6") and device.endswith("GPU:0"), out.stdout


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
def test_int32_strided_slices_run_on_the_device_in_host_memory(graph, strict_placement):
    """CUDA TF registers int32 StridedSlice for the GPU with every argument in host memory; TF's
    optimizers colocate such slices with variables, so the device needs it too."""
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)

    def slices(t):
        return t[1], t[::-1, 1:3, ::2], t[..., -1], t[:, None, 2, 1:4:2], tf.shape(t)[0]

    with tf.device(GPU):
        t = tf.constant(x)
        got = tf.function(slices, autograph=False)(t) if graph else slices(t)
    want = (x[1], x[::-1, 1:3, ::2], x[..., -1], x[:, None, 2, 1:4:2], 3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)


SLICE_DTYPES = [tf.float32, tf.float16, tf.int8, tf.bool, tf.int64, tf.complex128]


@pytest.mark.parametrize("dtype", SLICE_DTYPES, ids=lambda d: d.name)
def test_slices_split_and_identity_of_device_tensors(dtype, rng, strict_placement):
    host = random_values(rng, dtype, (5, 7, 9))
    with tf.device(GPU):
        x = tf.identity(tf.constant(host))
        cases = {
            "x[1:4]": (x[1:4], host[1:4]),
            "x[::-2]": (x[::-2], host[::-2]),
            "x[:, 3]": (x[:, 3], host[:, 3]),
            "x[..., None, 1:-1:3]": (x[..., None, 1:-1:3], host[..., None, 1:-1:3]),
            "x[-1, ::-3, 2:]": (x[-1, ::-3, 2:], host[-1, ::-3, 2:]),
            "x[4:1]": (x[4:1], host[4:1]),
            "tf.slice": (tf.slice(x, [1, 2, 3], [2, -1, 4]), host[1:3, 2:, 3:7]),
            "identity": (tf.identity(x), host),
        }
        pieces = tf.split(x, 3, axis=2)
        uneven = tf.split(x, [2, -1, 1], axis=1)
    for name, (got, want) in cases.items():
        assert on_gpu(got), name
        assert got.shape == want.shape, name
        assert got.numpy().tobytes() == np.ascontiguousarray(want).tobytes(), name
    for got, want in zip(pieces, np.split(host, 3, axis=2)):
        assert on_gpu(got) and got.numpy().tobytes() == np.ascontiguousarray(want).tobytes()
    for got, want in zip(uneven, np.split(host, [2, 6], axis=1)):
        assert on_gpu(got) and got.numpy().tobytes() == np.ascontiguousarray(want).tobytes()


def test_slices_of_large_tensors(rng, strict_placement):
    host = rng.standard_normal((70000, 17)).astype(np.float32)
    with tf.device(GPU):
        x = tf.identity(tf.constant(host))
        y = x[5:-5:2, 3:]
    np.testing.assert_array_equal(y.numpy(), host[5:-5:2, 3:])


def random_shape_pair(rng):
    rank = int(rng.integers(0, 6))
    out = [int(d) for d in rng.integers(1, 6, size=rank)]
    a = [d if rng.random() < 0.7 else 1 for d in out]
    b = [d if rng.random() < 0.7 else 1 for d in out]
    # Drop leading dims from one side now and then (rank broadcasting).
    if rank and rng.random() < 0.3:
        b = b[int(rng.integers(0, rank)):]
    return a, b


def float_values(rng, shape, specials=True):
    values = (rng.standard_normal(shape) * 10).astype(np.float32)
    if specials and values.size:
        flat = values.reshape(-1)
        picks = rng.integers(0, flat.size, size=min(3, flat.size))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], size=picks.size)
    return values


def compare_with_cpu(op, *host_args):
    with tf.device("/CPU:0"):
        want = op(*[tf.constant(a) for a in host_args])
    with tf.device(GPU):
        got = op(*[tf.constant(a) for a in host_args])
    assert on_gpu(got), got.device
    assert got.shape == want.shape and got.dtype == want.dtype
    # IEEE add/mul are exact; the tolerance only admits flushed subnormals.
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-37, equal_nan=True)
    return got


@pytest.mark.parametrize("op", [tf.math.add, tf.math.multiply], ids=["AddV2", "Mul"])
@pytest.mark.parametrize("trial", range(12))
def test_binary_ops_match_cpu_with_broadcasting(op, trial, rng, strict_placement):
    a_shape, b_shape = random_shape_pair(rng)
    compare_with_cpu(op, float_values(rng, a_shape), float_values(rng, b_shape))


@pytest.mark.parametrize("op", [tf.math.add, tf.math.multiply], ids=["AddV2", "Mul"])
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [((0, 3), (1, 3)), ((2, 0, 4), (4,)), ((), ()), ((1,), ()), ((257,), (257,)), ((3, 1, 5), (1, 7, 1))],
)
def test_binary_ops_edge_shapes(op, a_shape, b_shape, rng, strict_placement):
    compare_with_cpu(op, float_values(rng, a_shape), float_values(rng, b_shape))


def test_binary_op_larger_than_65535_workgroups(rng, strict_placement):
    n = 65536 * 256 + 3  # needs a 2D dispatch grid
    a = rng.standard_normal(n).astype(np.float32)
    compare_with_cpu(tf.math.add, a, np.float32(0.5))


def test_incompatible_shapes_give_invalid_argument(strict_placement):
    with tf.device(GPU):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.math.add(tf.ones((2, 3)), tf.ones((3, 2))).numpy()


@pytest.mark.parametrize("src,dst", [(tf.float32, tf.int32), (tf.int32, tf.float32)])
def test_cast_matches_cpu(src, dst, rng, strict_placement):
    if src == tf.float32:
        host = (rng.standard_normal((3, 1000)) * 1e6).astype(np.float32)
    else:
        host = rng.integers(-(2**31), 2**31 - 1, size=(3, 1000), dtype=np.int32)
    with tf.device("/CPU:0"):
        want = tf.cast(tf.constant(host), dst)
    with tf.device(GPU):
        got = tf.cast(tf.constant(host), dst)
    assert on_gpu(got)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tf_function_graph_runs_on_device(rng, strict_placement):
    @tf.function
    def f(x, y):
        return (x * y + x) * y

    a, b = float_values(rng, (33, 5), specials=False), float_values(rng, (5,), specials=False)
    with tf.device("/CPU:0"):
        want = f(tf.constant(a), tf.constant(b))
    with tf.device(GPU):
        got = f(tf.constant(a), tf.constant(b))
    assert on_gpu(got)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_op_without_wgpu_kernel_runs_through_soft_placement():
    tf.config.set_soft_device_placement(True)
    with tf.device(GPU):
        x = tf.constant([0.0, 1.0, 2.0])
        # Betainc has no WGPU kernel (yet): TF places it on the CPU. I_x(1, 1) = x.
        y = tf.math.betainc(tf.ones_like(x), tf.ones_like(x), x / 2.0)
    assert y.device.endswith("CPU:0")
    np.testing.assert_allclose(y.numpy(), np.array([0.0, 0.5, 1.0]), rtol=1e-6, atol=1e-6)


def test_op_without_wgpu_kernel_fails_cleanly_without_soft_placement(strict_placement):
    with tf.device(GPU):
        x = tf.constant([0.0, 1.0, 2.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not satisfy device specification"):
            tf.math.betainc(x, x, x)
    # The process and the device are still fine.
    with tf.device(GPU):
        assert on_gpu(tf.math.add(x, x))


FLOAT64_TABLE_SCRIPT = """
import ctypes, tensorflow_wgpu
lib = ctypes.CDLL(tensorflow_wgpu.library_path())
lib.tf_wgpu_kernel_table.restype = ctypes.c_char_p
lib.tf_wgpu_describe.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.tf_wgpu_describe.restype = ctypes.c_size_t
size = lib.tf_wgpu_describe(None, 0) + 1
text = ctypes.create_string_buffer(size)
lib.tf_wgpu_describe(text, size)
rows = lib.tf_wgpu_kernel_table().decode().splitlines()
print("F64", "float64 kernels: yes" in text.value.decode())
for op in ("AddV2", "MatMul", "Sqrt", "Equal", "Transpose"):
    print(op, any(r.split()[0] == op and "T=float64" in r.split()[1:] for r in rows))
"""


@pytest.mark.parametrize("portable", [False, True], ids=["adapter-limits", "portable-limits"])
def test_float64_math_is_registered_only_where_the_device_computes_in_f64(portable):
    """float64 arithmetic kernels compute in f64 and register only where every adapter offers
    SHADER_F64 (lavapipe does; the portable profile, standing for Metal, does not): elsewhere
    TF's soft placement moves float64 math to the CPU. Data movement is registered either way."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TF_WGPU_PORTABLE_LIMITS="1" if portable else "0")
    out = subprocess.run([sys.executable, "-c", FLOAT64_TABLE_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = dict(line.split() for line in out.stdout.splitlines() if line.split()[0] in
                ("F64", "AddV2", "MatMul", "Sqrt", "Equal", "Transpose"))
    computes_in_f64 = seen["F64"] == "True"
    assert computes_in_f64 == (not portable), out.stdout
    for op in ("AddV2", "MatMul", "Sqrt", "Equal"):
        assert seen[op] == str(computes_in_f64), (op, out.stdout)
    assert seen["Transpose"] == "True"


def test_float64_math_matches_cpu_in_f64(rng):
    """Where float64 kernels exist they compute in f64 (f32 math would be off by ~1e-8), and where
    they do not (the portable profile) soft placement gives TF-CPU's answer."""
    tf.config.set_soft_device_placement(True)
    a = rng.standard_normal((33, 17))
    b = rng.standard_normal((17,)) + 3.0
    with tf.device(GPU):
        got = [tf.divide(a, b), tf.matmul(a, a.T), tf.sqrt(tf.abs(tf.constant(a))), tf.cast(a, tf.float32)]
    with tf.device("/CPU:0"):
        want = [tf.divide(a, b), tf.matmul(a, a.T), tf.sqrt(tf.abs(tf.constant(a))), tf.cast(a, tf.float32)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())


def test_long_dependent_chain_across_automatic_submits(strict_placement):
    """More operations than one submission holds (a stream submits every 64 on its own), each step
    with a fresh host constant staged through the upload arena: the order of kernels and uploads
    must survive the automatic submits, so every step sees its predecessor's result."""
    steps = np.linspace(0.5, 1.5, 301).astype(np.float32)
    want = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    with tf.device(GPU):
        t = tf.constant(want)
        for v in steps:
            t = t * v + tf.constant(np.float32(v / 7))
    for v in steps:
        want = want * v + np.float32(v / 7)
    assert t.device.endswith("GPU:0")
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("trial", range(3))
def test_buffer_freed_on_one_stream_is_not_overwritten_by_another_first(trial, rng, strict_placement):
    """TF frees MatMul's output as soon as BiasAdd (its last reader) is enqueued, and the buffer
    pool hands it out again. An eager `tf.function` whose result is a folded constant then uploads
    that constant on the host-to-device stream into the same buffer, without waiting for the
    compute stream. The upload must still reach the queue after BiasAdd has read the buffer, so
    the eager result keeps MatMul's values (before the fix it read the constant instead)."""
    a = rng.standard_normal((2, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    constant = tf.function(lambda: tf.fill([2, 4], 7.0 + trial) * 1.0)
    with tf.device(GPU):
        a_dev, b_dev, bias_dev = tf.constant(a), tf.constant(b), tf.constant(bias)
        y = tf.nn.bias_add(tf.matmul(a_dev, b_dev), bias_dev)
        folded = constant()
    np.testing.assert_allclose(y.numpy(), a @ b + bias, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(folded.numpy(), np.full((2, 4), 7.0 + trial, np.float32))


@pytest.mark.parametrize("n", [16_000_000, 16_777_216, 20_000_000])
def test_large_tensors_are_right(n):
    """llvmpipe ends a shader's loops after 65535 iterations (a sum of 2^24 ones, 65536 iterations
    per thread, gave 131070): long reductions go in two passes and column sums in slices, so every
    answer here is right (a kernel may refuse a tensor, with its reason, but never answer wrong)."""
    x = np.ones(n, np.float32)
    x[-1] = 3.0
    checks = [("sum", lambda t: float(tf.reduce_sum(t)), n + 2.0),
              ("mean", lambda t: float(tf.reduce_mean(t)), (n + 2.0) / n),
              ("max", lambda t: float(tf.reduce_max(t)), 3.0),
              ("l2loss", lambda t: float(tf.nn.l2_loss(t)), (n + 8.0) / 2),
              ("elementwise", lambda t: float((t * 2.0).numpy().astype(np.float64).sum()), 2.0 * (n + 2)),
              ("unary", lambda t: float(tf.exp(t).numpy()[-1]), float(np.exp(np.float32(3.0)))),
              ("columns", lambda t: float(tf.reduce_sum(tf.reshape(t, [-1, 8]), axis=0).numpy()[-1]), n // 8 + 2.0)]
    with tf.device("/GPU:0"):
        t = tf.constant(x)
        for name, run, want in checks:
            try:
                got = run(t)
            except tf.errors.UnimplementedError as e:
                assert name not in ("sum", "mean", "max", "l2loss", "columns"), (name, e)
                assert "loop iterations per invocation exceed" in str(e), (name, e)
                continue
            assert got == pytest.approx(want, rel=1e-6), (name, got, want)


def test_depthwise_filter_gradient_over_many_pixels():
    """Each filter element sums over every output pixel: 90,000 here, past llvmpipe's 65,535 loop
    iterations per invocation (the sum was cut short before it was split into slices)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1, 300, 300, 2)).astype(np.float32)
    dy = rng.normal(size=(1, 300, 300, 2)).astype(np.float32)
    results = []
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            results.append(tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
                input=x, filter_sizes=[3, 3, 2, 1], out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME").numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-3)
