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

import functools
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
# expm1; trigonometry, its inverses, the hyperbolic functions, erf, erfc and pow are fdlibm's.
# Bound: 2 ulp (tanh: 4), or TF-CPU's own error where that is larger.


def _exact_pi(prec):
    """pi to `prec` digits (Machin's formula), computed once per precision."""
    from decimal import Decimal, localcontext

    cache = _exact_pi.__dict__.setdefault("cache", {})
    if prec not in cache:
        with localcontext() as c:
            c.prec = prec + 10

            def arctan_inverse(n):
                term = total = Decimal(1) / n
                k, eps = 1, Decimal(10) ** -(prec + 8)
                while abs(term) > eps:
                    term /= -n * n
                    k += 2
                    total += term / k
                return total

            cache[prec] = +(16 * arctan_inverse(5) - 4 * arctan_inverse(239))
    return cache[prec]


def _decimal_eps(digits):
    from decimal import Decimal

    return Decimal(10) ** -digits


def _exact_sin_cos(d):
    """(sin d, cos d) by Taylor series after reducing d mod pi/2 with 420 digits of pi (enough for
    every double, up to 1e308)."""
    from decimal import ROUND_HALF_EVEN, Decimal, localcontext

    with localcontext() as c:
        c.prec = 420
        half_pi = _exact_pi(420) / 2
        k = (d / half_pi).to_integral_value(rounding=ROUND_HALF_EVEN)
        r = d - k * half_pi
        c.prec = 60
        r = +r

        def series(term, n):
            total = term
            while term != 0 and abs(term) > abs(total) * _decimal_eps(65):
                term = -term * r * r / ((n + 1) * (n + 2))
                n += 2
                total += term
            return total

        s, co = series(r, 1), series(Decimal(1), 0)
        return [(s, co), (co, -s), (-s, -co), (-co, s)][int(k) % 4]


def _exact_atan(d):
    from decimal import Decimal, localcontext

    with localcontext() as c:
        c.prec = 70
        if d < 0:
            return -_exact_atan(-d)
        if d > 1:
            return _exact_pi(70) / 2 - _exact_atan(1 / d)
        halvings, x = 0, d
        while x > Decimal("0.05"):  # atan(x) = 2 atan(x / (1 + sqrt(1 + x^2)))
            x = x / (1 + (1 + x * x).sqrt())
            halvings += 1
        term = total = x
        n = 1
        while term != 0 and abs(term) > abs(total) * _decimal_eps(68):
            term = -term * x * x
            n += 2
            total += term / n
        return total * 2**halvings


def _exact_asin(d):
    from decimal import localcontext

    with localcontext() as c:
        c.prec = 70
        if abs(d) == 1:
            return d * _exact_pi(70) / 2
        return _exact_atan(d / ((1 - d) * (1 + d)).sqrt())


def _exact_acos(d):
    from decimal import Decimal, localcontext

    if d == 1:
        return Decimal(0)
    with localcontext() as c:
        c.prec = 80
        return _exact_pi(80) / 2 - _exact_asin(d)


def _exact_atan2(y, x):
    from decimal import localcontext

    with localcontext() as c:
        c.prec = 70
        pi = _exact_pi(70)
        if x > 0:
            return _exact_atan(y / x)
        if x < 0:
            return _exact_atan(y / x) + (pi if y >= 0 else -pi)
        return pi / 2 if y > 0 else -pi / 2


def _in_context(prec, f):
    """f evaluated with `prec` digits (for formulas that cancel)."""
    from decimal import localcontext

    def g(*args):
        with localcontext() as c:
            c.prec = prec
            return f(*args)

    return g


def _exact_erf_series(x, prec):
    """erf(x) = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), with `prec` digits."""
    from decimal import localcontext

    with localcontext() as c:
        c.prec = prec
        term = total = x
        n = 0
        while term != 0 and abs(term) > abs(total) * _decimal_eps(prec - 2):
            n += 1
            term = -term * x * x / n
            total += term / (2 * n + 1)
        return 2 * total / _exact_pi(prec).sqrt()


def _exact_erfc(d):
    """erfc: 1 - the series (110 digits) below 4, the continued fraction
    exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) (400 terms) from 4, where the two
    agree to 70 digits, and erfc(-x) = 2 - erfc(x)."""
    from decimal import localcontext

    with localcontext() as c:
        c.prec = 70
        if d < 0:
            return 2 - _exact_erfc(-d)
        if d < 4:
            c.prec = 100
            return 1 - _exact_erf_series(d, 110)
        f = d
        for k in range(400, 0, -1):
            f = d + k / f / 2
        return (-d * d).exp() / (_exact_pi(70).sqrt() * f)


def _exact_erf(d):
    from decimal import localcontext

    if abs(d) < 6:
        return _exact_erf_series(d, 90)
    with localcontext() as c:
        c.prec = 70
        return (1 - _exact_erfc(abs(d))).copy_sign(d)


@functools.lru_cache
def _bernoulli_even(count):
    """B_2, B_4, ..., B_(2 count) as fractions (Akiyama-Tanigawa)."""
    from fractions import Fraction

    a, out = [], []
    for m in range(2 * count + 1):
        a.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out[2::2]


def _exact_gamma_series(x, digamma):
    """log Gamma(x) or digamma(x) for x > 0: shifted up to 40 by the recurrence, then Stirling's
    series (19 terms: below 1e-48 there)."""
    from decimal import Decimal, localcontext

    with localcontext() as c:
        c.prec = 90
        shift, z = (Decimal(0) if digamma else Decimal(1)), x
        while z < 40:
            shift = shift + 1 / z if digamma else shift * z
            z += 1
        if digamma:
            total = z.ln() - 1 / (2 * z)
        else:
            total = (z - Decimal("0.5")) * z.ln() - z + (2 * _exact_pi(90)).ln() / 2
        # - B_2k / (2k z^2k) for digamma, B_2k / (2k (2k - 1) z^(2k - 1)) for lgamma.
        power = z * z if digamma else z
        for k, b in enumerate(_bernoulli_even(19), 1):
            term = Decimal(b.numerator) / Decimal(b.denominator)
            if digamma:
                total -= term / (2 * k * power)
            else:
                total += term / (2 * k * (2 * k - 1) * power)
            power *= z * z
        return total - (shift if digamma else shift.ln())


def _exact_reflected(d, digamma):
    """lgamma or digamma, by the reflection formulas for d <= 0."""
    from decimal import Decimal, localcontext

    if not digamma and d in (1, 2):
        return Decimal(0)
    if d > 0:
        return _exact_gamma_series(d, digamma)
    with localcontext() as c:
        c.prec = 430
        s, co = _exact_sin_cos(_exact_pi(430) * d)
        c.prec = 90
        if digamma:  # psi(x) = psi(1 - x) - pi cot(pi x)
            return _exact_gamma_series(1 - d, True) - _exact_pi(90) * co / s
        return (_exact_pi(90) / abs(s)).ln() - _exact_gamma_series(1 - d, False)


FLOAT64_EXACT = {
    "exp": (tf.exp, lambda d: d.exp(), 2.0),
    "log": (tf.math.log, lambda d: d.ln(), 2.0),
    "expm1": (tf.math.expm1, lambda d: d.exp() - 1, 2.0),
    "log1p": (tf.math.log1p, lambda d: (1 + d).ln(), 2.0),
    "tanh": (tf.tanh, lambda d: ((2 * d).exp() - 1) / ((2 * d).exp() + 1), 4.0),
    "sin": (tf.sin, lambda d: _exact_sin_cos(d)[0], 2.0),
    "cos": (tf.cos, lambda d: _exact_sin_cos(d)[1], 2.0),
    "tan": (tf.tan, lambda d: _in_context(60, lambda s, co: s / co)(*_exact_sin_cos(d)), 2.0),
    "asin": (tf.math.asin, _exact_asin, 2.0),
    "acos": (tf.math.acos, _exact_acos, 2.0),
    "atan": (tf.math.atan, _exact_atan, 2.0),
    "sinh": (tf.math.sinh, _in_context(90, lambda d: (d.exp() - (-d).exp()) / 2), 2.0),
    "cosh": (tf.math.cosh, _in_context(60, lambda d: (d.exp() + (-d).exp()) / 2), 2.0),
    "asinh": (tf.math.asinh, _in_context(90, lambda d: (abs(d) + (d * d + 1).sqrt()).ln().copy_sign(d)), 2.0),
    "acosh": (tf.math.acosh, _in_context(90, lambda d: (d + ((d - 1) * (d + 1)).sqrt()).ln()), 2.0),
    "atanh": (tf.math.atanh, _in_context(90, lambda d: ((1 + d) / (1 - d)).ln() / 2), 2.0),
    "erf": (tf.math.erf, _exact_erf, 2.0),
    "erfc": (tf.math.erfc, _exact_erfc, 2.0),
    # lgamma for x > 0 (negative x: test_float64_lgamma_of_negative_x); digamma is Eigen's formula,
    # as TF-CPU's, whose error near the zeros of digamma (1.4616..., and one in each (-n, 1 - n)) is
    # thousands of ulp of the result: the bound is TF-CPU's.
    "lgamma": (tf.math.lgamma, lambda d: _exact_reflected(d, False), 2.0),
    "digamma": (tf.math.digamma, lambda d: _exact_reflected(d, True), 2.0),
}


def float64_inputs(name, rng):
    """Each binade over the function's domain (both signs where it takes them), the cancellation
    zones (near 0 and 1, near multiples of pi/2, near the ends of [-1, 1]) and the edges of the
    range reductions and of overflow."""
    mags = np.exp2(rng.uniform(-60, 9.4, 6000))
    x = np.concatenate([mags, -mags, rng.uniform(-1e-3, 1e-3, 500), 1 + rng.uniform(-1e-3, 1e-3, 500),
                        [709.7, -708.3, 0.5 * np.log(2), 22.0, -0.29, 0.41]])
    if name in ("sin", "cos", "tan"):
        huge = np.exp2(rng.uniform(9.4, 1023.9, 3000))
        multiples = np.arange(1, 400) * (np.pi / 2)
        # The double that comes closest to a multiple of pi/2 (Kahan and McDonald), and both sides
        # of the switch to the large-argument reduction at 2^20 pi/2.
        hard = [6381956970095103 * 2.0**797, 5261692873635770 * 2.0**499, 1647098.9, 1647099.0, 1647099.1]
        x = np.concatenate([x, huge, -huge, multiples, -multiples, np.nextafter(multiples, 0),
                            multiples * 1e5, hard])
    if name in ("asin", "acos", "atanh"):
        edges = 1 - np.exp2(rng.uniform(-53, -1, 1000))
        x = np.concatenate([x, rng.uniform(-1, 1, 2000), edges, -edges, [0.5, -0.5, 0.975, -0.975]])
        x = x[np.abs(x) < 1] if name == "atanh" else np.concatenate([x[np.abs(x) < 1], [1.0, -1.0]])
    if name == "atan":
        x = np.concatenate([x, np.exp2(rng.uniform(9.4, 80, 2000)), [0.4375, 0.6875, 1.1875, 2.4375]])
    if name in ("sinh", "cosh"):
        x = np.concatenate([x[np.abs(x) < 710.4], [710.47, -710.47, 709.78, 0.3465, 1e-300]])
    if name == "asinh":
        huge = np.exp2(rng.uniform(9.4, 1023.9, 2000))
        x = np.concatenate([x, huge, -huge, [2.0, -2.0, 2.0**28, 2.0**28 + 1]])
    if name == "acosh":
        x = np.concatenate([1 + np.abs(x), 1 + np.exp2(rng.uniform(-52, 0, 1000)),
                            np.exp2(rng.uniform(9.4, 1023.9, 2000)), [1.0, 2.0, 2.0**28]])
    if name == "erf":
        x = np.concatenate([x[np.abs(x) < 6.5], rng.uniform(-6.5, 6.5, 2000), [0.84375, 1.25, 2.857142857142857]])
    if name == "erfc":
        x = np.concatenate([x[np.abs(x) < 6.5], rng.uniform(-6.5, 27.3, 3000), [0.25, 0.84375, 1.25, 28.0]])
    if name == "lgamma":
        x = np.concatenate([np.abs(x), np.exp2(rng.uniform(9.4, 1020, 2000)), rng.uniform(0, 10, 2000),
                            [0.9, 1.0, 2.0, 0.2316, 0.7316, 1.2316, 1.7316, 8.0, 2.0**58]])
        x = x[x > 0]
    if name == "digamma":
        x = np.concatenate([x, np.exp2(rng.uniform(9.4, 60, 1000)), rng.uniform(-20, 10, 2000)])
        x = x[x != np.round(x)]
    if name == "log":
        x = np.abs(x[x != 0])
    if name == "log1p":
        x = x[x > -1]
    if name in ("exp", "expm1"):
        x = x[x < 709.78]
    return x


def _float64_kernels_registered():
    from conftest import registered_kernels

    if not any(op == "Exp" and attrs.get("T") == "float64" for op, attrs in registered_kernels()):
        pytest.skip("no float64 kernels on this adapter (no SHADER_F64)")


def float64_ulps(ours, cpu, exact, *inputs):
    """The ULP errors of our result and TF-CPU's against the exact one, rounded to float64. Results
    below the normal range are left out, and for TF-CPU subnormal inputs too: it flushes both to
    zero."""
    keep = (np.abs(exact) >= np.finfo(np.float64).tiny) & np.isfinite(exact)
    normal = keep.copy()
    for x in inputs:
        normal &= (x == 0) | (np.abs(x) >= np.finfo(np.float64).tiny)

    def ulps(y, k):
        with np.errstate(invalid="ignore"):
            err = np.abs(y[k] - exact[k]) / np.spacing(np.abs(exact[k]))
        return np.where(np.isnan(err), np.inf, err)

    return ulps(ours, keep), ulps(cpu, normal), keep


@pytest.mark.parametrize("name", list(FLOAT64_EXACT))
def test_float64_functions_within_two_ulp_of_exact(name):
    """float64 transcendental functions computed in f64 on the device (adapters with SHADER_F64)."""
    from decimal import Decimal, getcontext

    _float64_kernels_registered()
    getcontext().prec = 40
    fn, exact_of, bound = FLOAT64_EXACT[name]
    x = float64_inputs(name, np.random.default_rng(64))
    with tf.device("/GPU:0"):
        got = fn(tf.constant(x))
    assert got.device.endswith("GPU:0")
    with tf.device("/CPU:0"):
        cpu = fn(tf.constant(x)).numpy()
    exact = np.array([float(exact_of(Decimal(float(v)))) for v in x])
    ours, theirs, keep = float64_ulps(got.numpy(), cpu, exact, x)
    print(f"\nfloat64 {name}: max {ours.max():.1f} ulp (TF-CPU {theirs.max():.1f}) over {keep.sum()} points")
    assert ours.max() <= max(bound, theirs.max()), x[keep][np.argmax(ours)]


def test_float64_lgamma_of_negative_x():
    """lgamma(x) for x < 0, log(pi / |x sin(pi x)|) - lgamma(-x) as fdlibm computes it: the two
    terms cancel near the zeros of lgamma (x = -2.457..., -2.747..., -3.143..., ...), so the error
    is bounded by a few ulp of the terms, not of the result (TF-CPU's glibc has a special method for
    (-28, -2) there, within 3 ulp of the result)."""
    from decimal import Decimal

    _float64_kernels_registered()
    rng = np.random.default_rng(64)
    x = -np.concatenate([np.exp2(rng.uniform(-60, 50, 3000)), rng.uniform(0, 30, 3000),
                         2.4570247382208006 + rng.uniform(-1e-3, 1e-3, 200)])
    x = x[x != np.round(x)]
    with tf.device("/GPU:0"):
        got = tf.math.lgamma(tf.constant(x)).numpy()
    with tf.device("/CPU:0"):
        cpu = tf.math.lgamma(tf.constant(x)).numpy()
    exact = np.array([float(_exact_reflected(Decimal(float(v)), False)) for v in x])
    # |log(pi / |x sin(pi x)|)| + |lgamma(-x)|, at most |lgamma(x)| + 2 |lgamma(-x)|.
    terms = np.abs(exact) + 2 * np.abs(scipy.special.gammaln(-x))
    ours = np.abs(got - exact) / np.spacing(terms)
    relative, theirs, _ = float64_ulps(got, cpu, exact, x)
    print(f"\nfloat64 lgamma of x < 0: max {ours.max():.1f} ulp of the terms, {relative.max():.1f} ulp of the "
          f"result (TF-CPU {theirs.max():.1f}) over {len(x)} points")
    assert ours.max() <= 8.0, x[np.argmax(ours)]


def float64_pow_inputs(rng):
    """Positive bases of every binade (subnormal ones too) with exponents that keep the result
    between underflow and overflow or just past them, bases near 1 with exponents past 2^31,
    negative bases with integer exponents, small integers (exact results) and Adam's beta^t."""
    n = 3000
    x = np.exp2(rng.uniform(-1074, 1024, n))
    near = 1 + rng.uniform(-1, 1, n) * np.exp2(rng.uniform(-52, -1, n))
    with np.errstate(divide="ignore"):
        y = rng.uniform(-1, 1, n) * np.minimum(1100.0 / np.abs(np.log2(x)), 1e300)
        near_y = rng.uniform(-1, 1, n) * np.minimum(1100.0 / np.abs(np.log2(near)), 1e300)
    negative = -np.exp2(rng.uniform(-20, 20, n))
    whole_limit = np.minimum(1000.0 / np.maximum(np.abs(np.log2(-negative)), 1e-3), 2**40)
    whole = np.round(rng.uniform(-1, 1, n) * whole_limit)
    small, small_y = np.round(rng.uniform(-50, 50, n)), np.round(rng.uniform(-20, 20, n))
    beta = np.repeat([0.9, 0.999, 0.99, 0.9999], n // 4)
    steps = rng.integers(1, 100000, len(beta)).astype(np.float64)
    x = np.concatenate([x, near, negative, small, beta])
    y = np.concatenate([y, near_y, whole, small_y, steps])
    keep = np.isfinite(y) & (x != 0)
    return x[keep], y[keep]


def float64_atan2_inputs(rng):
    """y and x of every binade and sign (so quotients that overflow and underflow), and near 0."""
    n = 3000
    sign = lambda: rng.choice([-1.0, 1.0], n)
    y = np.concatenate([np.exp2(rng.uniform(-1074, 1024, n)) * sign(), rng.uniform(-10, 10, n),
                        np.exp2(rng.uniform(-60, 60, n)) * sign(), [0.3, -1e-300]])
    x = np.concatenate([np.exp2(rng.uniform(-1074, 1024, n)) * sign(), rng.uniform(-10, 10, n),
                        np.exp2(rng.uniform(-60, 60, n)) * sign(), [1.0, 1.0]])
    keep = (x != 0) & (y != 0)
    return y[keep], x[keep]


# name: (TF function, exact result of two Decimals, inputs, C99 reference for the special values)
FLOAT64_BINARY = {
    "pow": (tf.pow, _in_context(60, lambda x, y: x**y), float64_pow_inputs, np.power),
    "atan2": (tf.math.atan2, _exact_atan2, float64_atan2_inputs, np.arctan2),
}


@pytest.mark.parametrize("name", list(FLOAT64_BINARY))
def test_float64_binary_functions_within_two_ulp_of_exact(name):
    """Pow and Atan2 in f64 on the device against the exact result, beside TF-CPU's error. The
    bound is 2 ulp whatever TF-CPU's error: its pow answers 0 and inf for (1 - 2^-53)^(+-5e18),
    which is about e^(-+560)."""
    from decimal import Decimal

    _float64_kernels_registered()
    fn, exact_of, inputs, _ = FLOAT64_BINARY[name]
    a, b = inputs(np.random.default_rng(64))
    with tf.device("/GPU:0"):
        got = fn(tf.constant(a), tf.constant(b))
    assert got.device.endswith("GPU:0")
    with tf.device("/CPU:0"):
        cpu = fn(tf.constant(a), tf.constant(b)).numpy()
    exact = np.array([float(exact_of(Decimal(float(u)), Decimal(float(v)))) for u, v in zip(a, b)])
    ours, theirs, keep = float64_ulps(got.numpy(), cpu, exact, a, b)
    print(f"\nfloat64 {name}: max {ours.max():.1f} ulp (TF-CPU {theirs.max():.1f}) over {keep.sum()} points")
    assert ours.max() <= 2.0, (a[keep][np.argmax(ours)], b[keep][np.argmax(ours)])
    # Past the range: infinities and zeros (and subnormal results within an ulp of 2^-1074).
    edge, g = ~keep, got.numpy()
    with np.errstate(invalid="ignore"):
        near = (g[edge] == exact[edge]) | (np.abs(g[edge] - exact[edge]) <= np.finfo(np.float64).smallest_subnormal)
    assert near.all(), (a[edge][~near], b[edge][~near], g[edge][~near], exact[edge][~near])


@pytest.mark.parametrize("name", list(FLOAT64_BINARY))
def test_float64_binary_special_values(name):
    """Every pair of signed zeros, infinities, NaN, +-1, subnormals, huge values, odd and even
    integers and halves: C99's answers (NumPy's), zeros and infinities with their signs. (TF-CPU
    flushes subnormal inputs and results to zero, so its answers differ there.)"""
    import itertools

    _float64_kernels_registered()
    fn, _, _, c99 = FLOAT64_BINARY[name]
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310,
               1e308, -1e308, 0.3, 2.5, -2.5, 1e-300, 7.0, -7.0, 1024.0, -1075.0, 2.0**53, 2.0**53 + 2,
               2.0**31 + 0.5]
    a, b = np.array(list(itertools.product(special, special))).T
    with tf.device("/GPU:0"):
        got = fn(tf.constant(a), tf.constant(b)).numpy()
    with np.errstate(all="ignore"):
        want = c99(a, b)
    same_bits = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    exceptional = ~np.isfinite(want) | (want == 0)
    bad = exceptional & ~same_bits
    assert not bad.any(), list(zip(a[bad], b[bad], got[bad], want[bad]))
    with np.errstate(invalid="ignore"):
        far = ~exceptional & ~(np.abs(got - want) <= 2 * np.spacing(np.abs(want)))
    assert not far.any(), list(zip(a[far], b[far], got[far], want[far]))


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
