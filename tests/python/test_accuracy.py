"""Float32 accuracy of the plugin's math, against the exact result and beside TF-CPU's own error.

Each function is swept over 2^20 inputs (TF_WGPU_ULP_POINTS to change it): float32 bit patterns
drawn uniformly over its domain (so every binade is covered), plus special values (+-0, +-inf,
NaN, subnormals, the overflow and underflow edges). The exact result is float64 NumPy (or Python's
`math`), and the error is measured in units in the last place of the exact result, with
subnormal results in units of 2^-149.

The plugin must be within 4 ulp, or within TF-CPU's own error where that is larger. Reductions
(sums, means, column sums, bias gradients, moments, batch-norm statistics) must stay within 2^-22
relative of the float64 result at every size up to 1e8 elements (or within TF-CPU's error). TF-CPU flushes
subnormal inputs and results to zero, so its column leaves out points where the input or the exact
result is subnormal; the plugin's column keeps them. `python tests/python/test_accuracy.py` prints
the table that the README shows. A heavy suite: TF 2.21 only, or TF_WGPU_HEAVY=1.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.special  # scikit-learn's dependency: float64 lgamma and digamma

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"),
    reason="the ULP sweeps are a heavy suite: TF 2.21 only (TF_WGPU_HEAVY=1 runs them anywhere)")

POINTS = int(os.environ.get("TF_WGPU_ULP_POINTS", str(1 << 20)))
BOUND_ULP = 4.0
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)

SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, F32_TINY, -F32_TINY,
     1e-45, -1e-45, 1e-40, -1e-40, F32_MAX, -F32_MAX, 88.72283, 88.72284, -87.33654, -103.97208,
     -103.97207, 9.0, 9.1, -17.5, 1e-4, -1e-4, 0.000244140625, 65535.99, 65536.0, 1e4, 1e5, 1e20,
     np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi, 4.0, 10.1, 10.05, -10.05, 0.49999997, 0.5000001],
    dtype=np.float32)


def vectorize(f):
    return np.vectorize(lambda v: f(float(v)) if np.isfinite(v) else np.nan, otypes=[np.float64])


def erf64(x):
    return np.where(np.isnan(x), np.nan, np.where(np.isinf(x), np.sign(x), vectorize(math.erf)(x)))


def erfc64(x):
    return np.where(np.isnan(x), np.nan, np.where(np.isinf(x), 1.0 - np.sign(x), vectorize(math.erfc)(x)))


def lgamma64(x):
    # log|Gamma|: +inf at the poles and at both infinities, as TF (glibc) answers.
    with np.errstate(all="ignore"):
        return np.where(np.isinf(x), np.inf, scipy.special.gammaln(x))


def digamma64(x):
    # NaN at the poles (0, -1, ...) and at -inf, as TF (Eigen) answers.
    with np.errstate(all="ignore"):
        pole = ((x <= 0) & (x == np.round(x))) | np.isneginf(x)
        return np.where(pole, np.nan, scipy.special.psi(x))


def sigmoid64(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x)))


def softplus64(x):
    return np.logaddexp(0.0, x)


# name: (raw op, float64 reference, lowest input, highest input)
UNARY = {
    "Exp": (tf.raw_ops.Exp, np.exp, -104.0, 89.0),
    "Expm1": (tf.raw_ops.Expm1, np.expm1, -20.0, 89.0),
    "Log": (tf.raw_ops.Log, np.log, 0.0, F32_MAX),
    "Log1p": (tf.raw_ops.Log1p, np.log1p, -1.0, F32_MAX),
    "Tanh": (tf.raw_ops.Tanh, np.tanh, -12.0, 12.0),
    "Sigmoid": (tf.raw_ops.Sigmoid, sigmoid64, -110.0, 30.0),
    "Softplus": (lambda x: tf.raw_ops.Softplus(features=x), softplus64, -110.0, 100.0),
    "Softsign": (lambda x: tf.raw_ops.Softsign(features=x), lambda x: x / (1.0 + np.abs(x)), -F32_MAX, F32_MAX),
    "Erf": (tf.raw_ops.Erf, erf64, -5.0, 5.0),
    "Erfc": (tf.raw_ops.Erfc, erfc64, -5.0, 10.2),
    "Sin": (tf.raw_ops.Sin, np.sin, -F32_MAX, F32_MAX),
    "Cos": (tf.raw_ops.Cos, np.cos, -F32_MAX, F32_MAX),
    "Tan": (tf.raw_ops.Tan, np.tan, -F32_MAX, F32_MAX),
    "Sqrt": (tf.raw_ops.Sqrt, np.sqrt, 0.0, F32_MAX),
    "Rsqrt": (tf.raw_ops.Rsqrt, lambda x: 1.0 / np.sqrt(x), 0.0, F32_MAX),
    "Reciprocal": (tf.raw_ops.Reciprocal, lambda x: 1.0 / x, -F32_MAX, F32_MAX),
    "Sinh": (tf.raw_ops.Sinh, np.sinh, -90.0, 90.0),
    "Cosh": (tf.raw_ops.Cosh, np.cosh, -90.0, 90.0),
    "Asinh": (tf.raw_ops.Asinh, np.arcsinh, -F32_MAX, F32_MAX),
    "Acosh": (tf.raw_ops.Acosh, np.arccosh, 1.0, F32_MAX),
    "Atanh": (tf.raw_ops.Atanh, np.arctanh, -1.0, 1.0),
    "Atan": (tf.raw_ops.Atan, np.arctan, -F32_MAX, F32_MAX),
    "Asin": (tf.raw_ops.Asin, np.arcsin, -1.0, 1.0),
    "Acos": (tf.raw_ops.Acos, np.arccos, -1.0, 1.0),
    # Over the whole line, and again where the zeros and poles are (the negative zeros are where
    # the terms of the usual formulas cancel).
    "Lgamma": (tf.raw_ops.Lgamma, lgamma64, -F32_MAX, F32_MAX),
    "Lgamma on [-20, -1]": (tf.raw_ops.Lgamma, lgamma64, -20.0, -1.0),
    "Digamma": (tf.raw_ops.Digamma, digamma64, -F32_MAX, F32_MAX),
    "Digamma on [-20, -1]": (tf.raw_ops.Digamma, digamma64, -20.0, -1.0),
    "Digamma on [1, 2]": (tf.raw_ops.Digamma, digamma64, 1.0, 2.0),
}


def ordered(v):
    """float32 values to integers in the same order (a monotone map of the bit patterns)."""
    bits = np.asarray(v, np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def from_ordered(k):
    k = np.asarray(k, np.int64)
    bits = np.where(k < 0, (-k) | 0x80000000, k).astype(np.uint32)
    return bits.view(np.float32)


def sample(rng, lo, hi, n):
    """n float32 values uniform over the bit patterns between lo and hi, with the specials inside."""
    k = rng.integers(ordered(np.float32(lo)), ordered(np.float32(hi)) + 1, size=n)
    x = from_ordered(k)
    inside = SPECIALS[(~np.isfinite(SPECIALS)) | ((SPECIALS >= lo) & (SPECIALS <= hi))]
    x[: len(inside)] = inside
    return x


def ulp_error(got, exact):
    """|got - exact| in ulps of exact (float32 ulps; subnormal results in units of 2^-149)."""
    got = np.asarray(got, np.float64)
    exact = np.asarray(exact, np.float64)
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32).astype(np.float64)
        both_nan = np.isnan(got) & np.isnan(exact)
        same = (got == rounded) | both_nan
        _, exponent = np.frexp(np.where(np.isfinite(exact) & (exact != 0), exact, 1.0))
        ulp = np.ldexp(1.0, np.maximum(exponent - 24, -149))
        err = np.abs(got - exact) / ulp
        # Where the exact value lies past FLT_MAX, float32 infinity is the right answer.
        err = np.where(np.isinf(rounded) & (got == rounded), 0.0, err)
        err = np.where(np.isnan(err) | np.isinf(err), np.inf, err)
    return np.where(same, 0.0, err)


def run(op, x, device):
    with tf.device(device):
        return op(x=tf.constant(x)).numpy()


def subnormal(v):
    v = np.abs(np.asarray(v, np.float64))
    return (v > 0) & (v < F32_TINY)


def measure(name, points=POINTS, seed=0):
    op, ref, lo, hi = UNARY[name]
    x = sample(np.random.default_rng([seed, len(name)]), lo, hi, points)
    with np.errstate(all="ignore"):
        exact = ref(x.astype(np.float64))
    return table_row(name, [x], exact, run(op, x, "/GPU:0"), run(op, x, "/CPU:0"))


def table_row(name, inputs, exact, ours, cpu):
    """The largest ULP errors of our result and TF-CPU's; TF-CPU's leaves out subnormal inputs and
    results, which it flushes to zero."""
    ours, cpu = ulp_error(ours, exact), ulp_error(cpu, exact)
    keep = ~(np.logical_or.reduce([subnormal(x) for x in inputs]) | subnormal(exact))
    worst = int(np.argmax(ours))
    worst_input = tuple(float(x[worst]) for x in inputs)
    return {"name": name, "ours": float(ours.max()), "cpu": float(cpu[keep].max()),
            "worst_input": worst_input[0] if len(inputs) == 1 else worst_input}


def measure_pow(points=POINTS, seed=0):
    """Pow over positive bases of every binade and exponents that keep the result finite, plus
    negative bases with integer exponents and Adam's 1 - beta^t."""
    rng = np.random.default_rng([seed, 3])
    n = points
    x = sample(rng, 1e-45, F32_MAX, n)
    # Exponents whose product with log(x) stays within float32's range, both signs.
    with np.errstate(all="ignore"):
        limit = np.minimum(88.0 / np.maximum(np.abs(np.log(x.astype(np.float64))), 1e-30), 1e6)
    y = (rng.uniform(-1, 1, n) * limit).astype(np.float32)
    quarter = n // 4
    y[:quarter] = np.round(y[:quarter])
    x[quarter: 2 * quarter] = -np.abs(x[quarter: 2 * quarter])
    y[quarter: 2 * quarter] = np.round(y[quarter: 2 * quarter])
    beta = np.array([0.9, 0.999, 0.99, 0.9999], np.float32)
    steps = np.arange(1, 1 + quarter // 4, dtype=np.float32)
    adam = slice(2 * quarter, 2 * quarter + 4 * len(steps))
    x[adam] = np.repeat(beta, len(steps))
    y[adam] = np.tile(steps, 4)
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))

    def on(device):
        with tf.device(device):
            return tf.raw_ops.Pow(x=tf.constant(x), y=tf.constant(y)).numpy()

    return table_row("Pow", [x, y], exact, on("/GPU:0"), on("/CPU:0"))


NAMES = list(UNARY) + ["Pow"]


def measure_any(name):
    return measure_pow() if name == "Pow" else measure(name)


@pytest.mark.parametrize("name", NAMES)
def test_within_four_ulp_or_tf_cpu(name):
    row = measure_any(name)
    bound = max(BOUND_ULP, row["cpu"])
    print(f"{name}: ours {row['ours']:.2f} ulp, TF-CPU {row['cpu']:.2f} ulp, worst at {row['worst_input']}")
    assert row["ours"] <= bound, row


# Reductions: sizes up to what one lavapipe invocation's loops reach (65535 iterations x 256 threads),
# and 10^8 (the largest: past one binding, so windows and two passes); the error must not
# grow with n. Values in [1, 2) so that no cancellation hides the drift.
REDUCTION_SIZES = [1_200, 100_000, 1_000_000, 4_000_000, 16_000_000, 100_000_000]
REDUCTION_BOUND = 2.0**-22


def reductions(t, n):
    """(name, result) of each reduction family over the n values of t."""
    columns = tf.reshape(t, [-1, 100])
    image = tf.reshape(t, [-1, 10, 10, 4])
    mean, variance = tf.nn.moments(columns, axes=[0])
    batch = tf.raw_ops.FusedBatchNormV3(x=image, scale=tf.ones([4]), offset=tf.zeros([4]), mean=tf.zeros([0]),
                                        variance=tf.zeros([0]), is_training=True)
    return [("sum", tf.reduce_sum(t)), ("mean", tf.reduce_mean(t)), ("column sums", tf.reduce_sum(columns, axis=0)),
            ("bias gradient", tf.raw_ops.BiasAddGrad(out_backprop=columns)), ("moments mean", mean),
            ("moments variance", variance), ("batch-norm mean", batch.batch_mean),
            ("batch-norm variance", batch.batch_variance)]


def exact_reductions(x):
    x = x.astype(np.float64)
    columns = x.reshape(-1, 100)
    image = x.reshape(-1, 4)
    return [np.sum(x), np.mean(x), columns.sum(0), columns.sum(0), columns.mean(0), columns.var(0),
            image.mean(0), image.var(0) * len(image) / (len(image) - 1)]


@pytest.mark.parametrize("n", REDUCTION_SIZES)
def test_reductions_do_not_drift_with_n(n):
    x = (1.0 + np.random.default_rng(n).random(n)).astype(np.float32)
    exact = exact_reductions(x)
    rows = {}
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            got = reductions(tf.constant(x), n)
        for (name, value), want in zip(got, exact):
            err = float(np.max(np.abs(value.numpy().astype(np.float64) - want) / np.abs(want)))
            rows.setdefault(name, []).append(err)
    print(f"n={n}: " + ", ".join(f"{k} {v[0]:.1e} (TF-CPU {v[1]:.1e})" for k, v in rows.items()))
    over = {k: v for k, v in rows.items() if v[0] > max(REDUCTION_BOUND, v[1])}
    assert not over, over


@pytest.mark.parametrize("cols", [1_000, 100_000, 4_000_000])
def test_softmax_denominators_do_not_drift(cols):
    """One long row: the cross-entropy loss (log of the softmax denominator, minus the label's
    logit) and LogSoftmax against float64."""
    x = np.random.default_rng(cols).normal(size=(1, cols)).astype(np.float32)
    x64 = x.astype(np.float64)
    log_total = np.log(np.sum(np.exp(x64 - x64.max()))) + x64.max()
    exact = {"cross-entropy": log_total - x64[0, 0], "log-softmax": x64[0, -1] - log_total}
    errors = {}
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            t = tf.constant(x)
            loss = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=t, labels=tf.constant([0]))[0]
            got = {"cross-entropy": float(loss[0]), "log-softmax": float(tf.nn.log_softmax(t)[0, -1])}
        for k, want in exact.items():
            errors.setdefault(k, []).append(abs(got[k] - want) / abs(want))
    print(f"cols={cols}: " + ", ".join(f"{k} {v[0]:.1e} (TF-CPU {v[1]:.1e})" for k, v in errors.items()))
    over = {k: v for k, v in errors.items() if v[0] > max(REDUCTION_BOUND, v[1])}
    assert not over, over


MATMUL_DEPTHS = [1_200, 100_000, 300_000]
# Blocked sums' error grows like sqrt(k) (TF-CPU's too): the bound is 4 x 2^-22, or twice TF-CPU's.
MATMUL_BOUND = 4 * REDUCTION_BOUND


def matmul_errors(depths=MATMUL_DEPTHS):
    """Relative error (worst output) of a [32, k] x [k, 32] MatMul of values in [1, 2) against
    float64, on WGPU and TF-CPU, per k."""
    rng = np.random.default_rng(5)
    rows = {}
    for k in depths:
        a = rng.uniform(1, 2, (32, k)).astype(np.float32)
        b = rng.uniform(1, 2, (k, 32)).astype(np.float32)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        for device in ("/GPU:0", "/CPU:0"):
            with tf.device(device):
                got = tf.matmul(a, b).numpy().astype(np.float64)
            rows.setdefault(k, []).append(float(np.max(np.abs(got - exact) / exact)))
    return rows


@pytest.mark.parametrize("kernel", ["default", "direct"])
def test_matmul_contractions_do_not_drift(kernel):
    """The matmul's k loop sums in blocks on both kernels: the tiled one (this adapter's default)
    and the direct one that GPUs take (forced in a subprocess). A single running sum over k = 10^5
    was 16x over the bound."""
    if kernel == "default":
        rows = matmul_errors()
    else:
        env = dict(os.environ, TF_WGPU_MATMUL="direct")
        done = subprocess.run([sys.executable, __file__, "--matmul"], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-4000:]
        rows = {int(k): v for k, v in json.loads(done.stdout.splitlines()[-1]).items()}
    print(f"{kernel}: " + ", ".join(f"k={k} {v[0]:.1e} (TF-CPU {v[1]:.1e})" for k, v in rows.items()))
    over = {k: v for k, v in rows.items() if v[0] > max(MATMUL_BOUND, 2 * v[1])}
    assert not over, over


# float64 functions (math_f64.wgsl) against the exact result in 40-digit decimal arithmetic, beside
# TF-CPU's error: exp and log are fdlibm's, expm1 Eigen's formula, log1p fdlibm's kernel, tanh from
# expm1. Bound: 2 ulp (tanh: 4), or TF-CPU's own error where that is larger.
FLOAT64_EXACT = {
    "exp": (tf.exp, lambda d: d.exp(), 2.0),
    "log": (tf.math.log, lambda d: d.ln(), 2.0),
    "expm1": (tf.math.expm1, lambda d: d.exp() - 1, 2.0),
    "log1p": (tf.math.log1p, lambda d: (1 + d).ln(), 2.0),
    "tanh": (tf.tanh, lambda d: ((2 * d).exp() - 1) / ((2 * d).exp() + 1), 4.0),
}


def float64_inputs(name, rng):
    """Each binade from 2^-60 to 2^9 (both signs where the function takes them), the cancellation
    zones near 0 and 1, and the overflow edge."""
    mags = np.exp2(rng.uniform(-60, 9.4, 6000))
    x = np.concatenate([mags, -mags, rng.uniform(-1e-3, 1e-3, 500), 1 + rng.uniform(-1e-3, 1e-3, 500),
                        [709.7, -708.3, 0.5 * np.log(2), 22.0, -0.29, 0.41]])
    if name == "log":
        x = np.abs(x[x != 0])
    if name == "log1p":
        x = x[x > -1]
    if name in ("exp", "expm1"):
        x = x[x < 709.78]
    return x


@pytest.mark.parametrize("name", list(FLOAT64_EXACT))
def test_float64_functions_within_two_ulp_of_exact(name):
    """float64 transcendental functions computed in f64 on the device (adapters with SHADER_F64)."""
    from decimal import Decimal, getcontext

    from conftest import registered_kernels

    if not any(op == "Exp" and attrs.get("T") == "float64" for op, attrs in registered_kernels()):
        pytest.skip("no float64 kernels on this adapter (no SHADER_F64)")
    getcontext().prec = 40
    fn, exact_of, bound = FLOAT64_EXACT[name]
    x = float64_inputs(name, np.random.default_rng(64))
    with tf.device("/GPU:0"):
        got = fn(tf.constant(x))
    assert got.device.endswith("GPU:0")
    with tf.device("/CPU:0"):
        cpu = fn(tf.constant(x)).numpy()
    exact = np.array([float(exact_of(Decimal(float(v)))) for v in x])
    # Results below the normal range are left out: TF-CPU flushes them to zero.
    keep = np.abs(exact) >= np.finfo(np.float64).tiny
    ulps = lambda y: np.abs(y[keep] - exact[keep]) / np.spacing(np.abs(exact[keep]))
    ours, theirs = ulps(got.numpy()), ulps(cpu)
    print(f"\nfloat64 {name}: max {ours.max():.1f} ulp (TF-CPU {theirs.max():.1f}) over {keep.sum()} points")
    assert ours.max() <= max(bound, theirs.max()), x[keep][np.argmax(ours)]


def test_ulp_measure_is_not_vacuous():
    """The measure itself: one ulp off reads as 1, a float16-grade answer as thousands."""
    exact = np.array([1.0, 3.0, 1e-42, 1e30])
    got = np.nextafter(exact.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    assert np.allclose(ulp_error(got, exact), [1.0, 1.0, 1.0, 1.0], atol=0.51)
    assert ulp_error(np.float16(np.pi), np.pi) > 1000
    assert ulp_error(np.nan, 1.0) == np.inf and ulp_error(np.inf, np.inf) == 0.0


if __name__ == "__main__":
    if sys.argv[1:] == ["--matmul"]:
        print(json.dumps(matmul_errors()))
        sys.exit(0)
    names = sys.argv[1:] or NAMES
    print("| function | max ulp, plugin | max ulp, TF-CPU |")
    print("|---|---|---|")
    for name in names:
        row = measure_any(name)
        print(f"| {name} | {row['ours']:.2f} | {row['cpu']:.2f} |", flush=True)
        if os.environ.get("VERBOSE"):
            print("   worst input", row["worst_input"], file=sys.stderr)
