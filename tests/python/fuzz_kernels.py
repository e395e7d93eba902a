"""Adversarial fuzzing of every registered (op, dtype) of the WGPU kernel table (issue 20, item 2).

Each case picks a row of the kernel table (rows are cycled in a seeded shuffled order, so every
row gets cases) and builds inputs and attributes for it: small valid inputs most of the time, and
otherwise adversarial ones: negative, zero and huge dimensions, mismatched ranks, empty tensors,
NaN/Inf/-0.0/subnormals, out-of-range indices and axes, huge multiples, paddings and strides, zero
strides, wrong-length list attributes and invalid enum strings.

A case runs the op on /GPU:0 (the WGPU device) with soft placement off. It passes when
  * the WGPU op raises a Python exception (the CPU run is then skipped), or
  * its result equals TF-CPU's (same dtype and shape; ints and bools exact, floats within a
    tolerance, NaN == NaN), or
  * TF-CPU rejects the input but TF-GPU documents another answer and the result equals that
    answer, computed from TF-CPU: zeros for out-of-range gather indices; out-of-range scatter
    updates and segment ids dropped; NaN rows for out-of-range sparse cross-entropy labels; and
    subnormal inputs flushed to zero (TF's GPU kernels are built with
    -fcuda-flush-denormals-to-zero and WGSL lets GPUs flush them).
A signal, a hang or a silent difference fails it, and so does a result where TF-CPU raises.
TF-CPU has no CudnnRNN* kernels: those cases compare with cuDNN's semantics as the reference of
test_rnn_ops.py computes them in plain TF ops (documented answers), and fail where the WGPU op
accepts what TF's cuDNN kernels reject. Reported but not failing: results TF-CPU cannot check
("unverified": its kernel lacks the feature, an UnimplementedError, a oneDNN AbortedError or "does
not support"; for CudnnRNN*, dropout between layers, projections, a reserve space no forward pass
made from the inputs, non-finite inputs), cases where TF-CPU's own kernel aborted after the WGPU op
returned ("reference crashes"), and exceptions that were caught Rust panics. Float16 inputs of
accumulating ops also accept TF-CPU's float32 kernel on the widened inputs, rounded to half (as
test_ops.py does); subnormal inputs that the WGPU op does not treat as zero are failures of their
own kind ("subnormal").

Cases run in worker processes (`python fuzz_kernels.py --worker`) that take many cases each: a
worker reads one JSON request per line on stdin and writes a "start" line (op, dtype, inputs)
before it runs the case and a "result" line after, flushing both. The driver (`run_fuzz`) pins a
dying or hanging worker to its case, records it as a failure with the signal and the worker's
stderr tail, restarts the worker and goes on with the next case.

    python tests/python/fuzz_kernels.py --cases 5000 --seed 20     # totals and failing cases
    python tests/python/fuzz_kernels.py --replay 1234 --seed 20    # a case (or ids,in,order) in this process
    python tests/python/fuzz_kernels.py --ops MaxPoolV2,Conv2D --cases 50   # 50 cases of each op
"""

import argparse
import collections
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

import optimizer_ops

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_WGPU_MEMORY_LIMIT_MB": "1024"}
GPU, CPU = "/GPU:0", "/CPU:0"

# Ops whose float16 TF-CPU kernels keep partial sums in half: their reference is TF-CPU's float32
# kernel on the (exactly widened) inputs, rounded to half, as in test_ops.py. Float results of
# these ops also get an absolute tolerance scaled by the size of the terms (another summation
# order), and their generated data has no huge finite values (an overflow to inf would then depend
# on the order of the sum).
ACCUMULATING = {
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter", "AvgPoolGrad", "BiasAddGrad", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "Sum", "Mean", "Prod", "MatMul", "BatchMatMulV2", "BatchMatMulV3",
    "Einsum", "Conv2D", "DepthwiseConv2dNative", "AvgPool", "FusedBatchNormV3", "AddN", "L2Loss", "EuclideanNorm",
    "UnsortedSegmentSum", "Bincount", "DenseBincount", "ScatterNd", "TensorScatterAdd", "ScatterNdNonAliasingAdd", "FusedBatchNormGradV3",
    "SegmentSum", "SegmentProd", "SegmentMean",
    "_FusedConv2D", "_FusedMatMul",
    "Softmax", "LogSoftmax", "ResourceApplyAdam", "ResourceApplyRMSProp", "ResourceApplyAdagrad",
    "ResourceApplyMomentum", "ResourceApplyKerasMomentum", "UnsortedSegmentProd", "TensorScatterSub",
    "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterAdd",
    "ResourceScatterSub",
    "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormGrad", "FusedBatchNormGradV2", "Conv2DBackpropInputV2",
    "MaxPoolGradWithArgmax", "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "AvgPool3D", "AvgPool3DGrad",
    "MaxPool3DGrad", "Conv", "Cumsum", "Cumprod", "CumulativeLogsumexp",
}
GRADS = {
    "ReluGrad": ("gradients", "features"), "Relu6Grad": ("gradients", "features"),
    "EluGrad": ("gradients", "outputs"), "SeluGrad": ("gradients", "outputs"),
    "LeakyReluGrad": ("gradients", "features"), "SoftplusGrad": ("gradients", "features"),
    "SigmoidGrad": ("y", "dy"), "TanhGrad": ("y", "dy"), "RsqrtGrad": ("y", "dy"), "SqrtGrad": ("y", "dy"),
    "ReciprocalGrad": ("y", "dy"), "InvGrad": ("y", "dy"), "SoftsignGrad": ("gradients", "features"),
}
UNARY = set("Abs Neg Sign Square Sqrt Rsqrt Reciprocal Inv Exp Expm1 Log Log1p Sin Cos Tan Tanh Sigmoid Erf Erfc "
            "Sinh Cosh Asinh Acosh Atanh Atan Asin Acos Lgamma Digamma "
            "Floor Ceil Round Rint Relu Relu6 Elu Selu LeakyRelu Softplus Softsign ZerosLike OnesLike IsNan IsInf "
            "IsFinite LogicalNot Invert PopulationCount Real Imag Conj ComplexAbs Angle Ndtri Erfinv BesselI0 BesselI0e "
            "BesselI1 BesselI1e BesselK0 BesselK0e BesselK1 BesselK1e BesselJ0 BesselJ1 BesselY0 BesselY1 Dawsn Expint "
            "FresnelCos FresnelSin Spence".split())
BINARY = set("AddV2 Add Mul Sub RealDiv Div DivNoNan FloorDiv FloorMod Maximum Minimum Pow SquaredDifference Equal "
             "NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr Xlogy Xdivy Xlog1py Atan2 TruncateDiv "
             "TruncateMod BitwiseAnd BitwiseOr BitwiseXor LeftShift RightShift Complex MulNoNan NextAfter Igamma Igammac "
             "IgammaGradA RandomGammaGrad Zeta Polygamma".split())
OPTIMIZERS = optimizer_ops.SIGNATURES
ACCUMULATING |= {op for op in OPTIMIZERS if op != "ResourceApplyGradientDescent"}
OPTIMIZER_FLAGS = optimizer_ops.FLAGS
# Ops with float16 kernels here and none on TF-CPU (see `references`).
NO_HALF_ON_CPU = {"ResourceApplyProximalGradientDescent", "ResourceApplyProximalAdagrad", "MaxPool3D", "AvgPool3D",
                  "AvgPool3DGrad", "MaxPool3DGrad", "MaxPool3DGradGrad"}
OPT_SCALARS = {"alpha": 0.25, "logbase": 0.5, "sign_decay": 0.9, "beta": 0.9, "lr": 0.1, "momentum": 0.9, "beta1_power": 0.729, "beta2_power": 0.997, "beta1": 0.9,
               "beta2": 0.999, "epsilon": 1e-7, "rho": 0.9, "l1": 0.05, "l2": 0.1, "lr_power": -0.5,
               "l2_shrinkage": 0.05, "global_step": 3}
# Resource variable scatters by rows (ResourceScatter*) and by index tuples (ResourceScatterNd*,
# whose variable input is named ref).
RESOURCE_SCATTERS = {f"ResourceScatter{c}" for c in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")}
RESOURCE_SCATTERS_ND = {f"ResourceScatterNd{c}" for c in ("Add", "Sub", "Min", "Max", "Update")}
TENSOR_SCATTERS = {f"TensorScatter{c}" for c in ("Add", "Sub", "Min", "Max", "Update")} | {"ScatterNdNonAliasingAdd"}
# The sorted segment reductions.
SORTED_SEGMENTS = ("SegmentSum", "SegmentProd", "SegmentMin", "SegmentMax", "SegmentMean")
# Ops whose duplicate indices have no defined order (one update wins): their generators give
# repeated indices equal updates (`same_updates_for_repeats`), and the sparse optimizers no repeats.
ASSIGNING = {"TensorScatterUpdate", "ResourceScatterUpdate", "ResourceScatterNdUpdate"}
BAD_ENUMS = ["BOGUS", "NCDHW", "NDHWC", "", "WRAP", "same", "NCHW_VECT_C", "HWNC"]
HUGE = [10**16, 2**62, 2**31, 2**32, 2**31 - 1, 2**63 - 1, 10**9]
BAD_INTS = [0, -1, -2, -(2**31), 2**31, 2**62, 10**16, 100]


# ----------------------------------------------------------------------------------------------
# The kernel table (needs the plugin installed; the worker imports TensorFlow first).

def registered_kernels():
    from conftest import registered_kernels as kernel_table

    rows = kernel_table()
    # TF_WGPU_FUZZ_OPS=Op1,Op2 fuzzes those ops' rows only (a developer's focused run).
    only = [o for o in os.environ.get("TF_WGPU_FUZZ_OPS", "").split(",") if o]
    return [r for r in rows if r[0] in only] if only else rows


def row_name(op, row):
    return " ".join([op] + [f"{k}={v}" for k, v in row.items()])


def pick_row(n_rows, seed, case_id):
    """Rows cycle in a seeded shuffled order: every row gets a case before any gets a second."""
    cycle, pos = divmod(case_id, n_rows)
    return int(np.random.default_rng([seed, cycle, 7]).permutation(n_rows)[pos])


# ----------------------------------------------------------------------------------------------
# Case generation.

def npdtype(name):
    import tensorflow as tf

    return np.dtype(tf.as_dtype(name).as_numpy_dtype)


def prod(shape):
    out = 1
    for d in shape:
        out *= int(d)
    return out


class Case:
    def __init__(self, op, row, case_id, seed):
        self.op, self.row, self.id, self.seed = op, row, case_id, seed
        self.args = {}  # op input or attribute name -> value (np.ndarray / list of them for inputs)
        self.variables = {}  # resource input name -> initial value (variable ops)
        self.mode = "raw"  # raw | exec (internal ops) | eager | function (variable ops)
        self.outputs = None  # how many leading outputs to compare (None: all)
        self.tags = []  # mutations applied

    def describe(self):
        parts = [f"{k}=var:{describe_value(v)}" for k, v in self.variables.items()]
        parts += [f"{k}={describe_value(v)}" for k, v in self.args.items()]
        if self.mode in ("eager", "function"):
            parts.append(f"mode={self.mode}")
        return " ".join(parts)


def describe_value(v):
    with np.errstate(all="ignore"):
        return _describe_value(v)


def _describe_value(v):
    if isinstance(v, np.generic):
        v = np.asarray(v)
    if isinstance(v, np.ndarray):
        head = f"{v.dtype.name if v.dtype.names is None else v.dtype}{list(v.shape)}"
        if v.size and v.size <= 12 and v.dtype.kind in "iub":
            return head + "=" + np.array2string(v.reshape(-1), separator=",").replace("\n", "")
        if v.size and v.size <= 6 and v.dtype.kind in "fc" or (v.dtype.kind == "V" and v.size <= 6):
            return head + "=" + np.array2string(v.astype(np.float32 if v.dtype.kind != "c" else v.dtype).reshape(-1),
                                                separator=",").replace("\n", "")
        if v.size and v.dtype.kind == "f":
            flags = [n for n, f in (("nan", np.isnan), ("inf", np.isinf)) if f(v).any()]
            tiny = (v != 0) & (np.abs(v) < np.finfo(v.dtype).tiny)
            if tiny.any():
                flags.append("subnormal")
            finite = np.abs(v[np.isfinite(v)])
            if finite.size and finite.max() >= float(np.finfo(v.dtype).max) / 16:
                flags.append("huge")
            return head + (f"({','.join(flags)})" if flags else "")
        return head
    if isinstance(v, list) and v and all(isinstance(x, np.ndarray) for x in v):
        return "[" + ", ".join(describe_value(x) for x in v) + "]"
    return repr(v)


class Gen:
    """Random choices for one case, and the helpers that draw inputs."""

    def __init__(self, rng, case):
        self.rng, self.case = rng, case
        self.op, self.row = case.op, case.row
        self.adv = rng.random() < 0.45  # adversarial case
        self.specials = rng.random() < 0.5  # NaN/Inf/-0.0/subnormals in float data
        self.no_huge = self.op in ACCUMULATING

    # random helpers
    def chance(self, p):
        return self.rng.random() < p

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def int(self, lo, hi):  # inclusive
        return int(self.rng.integers(lo, hi + 1))

    def tag(self, t):
        self.case.tags.append(t)

    def adversary(self, name, p=1.0):
        """In an adversarial case, whether to apply mutation `name` (recorded)."""
        if self.adv and self.chance(p):
            self.tag(name)
            return True
        return False

    def shape(self, rank=None, lo=1, hi=5, max_elems=2000):
        rank = self.int(0, 4) if rank is None else rank
        for _ in range(10):
            s = [self.int(lo, hi) for _ in range(rank)]
            if prod(s) <= max_elems:
                return s
        return [1] * rank

    def bad_axis(self, rank):
        return self.pick([rank, -rank - 1, rank + 1, 100, -100, 2**31 - 1, -(2**31), 2**40])

    def index_dtype(self, values=()):
        big = any(not (-(2**31) <= int(v) < 2**31) for v in np.asarray(values).reshape(-1))
        return np.int64 if big or self.chance(0.4) else np.int32

    def ivec(self, values, dtype=None):
        values = [int(v) for v in np.asarray(values).reshape(-1)]
        dtype = dtype or self.index_dtype(values)
        if dtype == np.int32 and any(not (-(2**31) <= v < 2**31) for v in values):
            dtype = np.int64
        return np.array(values, dtype=dtype)

    def data(self, dtype, shape, specials=None, scale=3.0, lo=None, hi=None):
        dt = npdtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        n = prod(shape)
        if n == 0:
            return np.zeros(shape, dt)
        specials = self.specials if specials is None else specials
        name = dt.name
        if dt.kind == "b":
            return self.rng.integers(0, 2, size=shape).astype(bool)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            lo = max(info.min, -5 if lo is None else lo) if dt.kind == "i" else max(0, 0 if lo is None else lo)
            hi = min(info.max, 9 if hi is None else hi)
            v = self.rng.integers(lo, hi + 1, size=n, dtype=np.int64).astype(dt)
            if specials and n:
                k = self.int(1, min(n, 3))
                extremes = np.array([info.min, info.max, 0], dtype=dt)
                v[self.rng.choice(n, k, replace=False)] = extremes[self.rng.integers(0, 3, size=k)]
            return v.reshape(shape)
        if dt.kind == "c":
            v = (self.rng.standard_normal(n) * scale + 1j * self.rng.standard_normal(n) * scale).astype(dt)
            if specials:
                v[self.int(0, n - 1)] = complex(np.nan, 1.0)
            return v.reshape(shape)
        # floats: float16, bfloat16, float32, float64
        v = self.rng.standard_normal(n) * scale
        if specials:
            tiny = {"float16": 3e-6, "float64": 1e-310}.get(name, 1e-40)
            big = {"float16": 6e4, "float64": 1e300}.get(name, 3e38)
            pool = [np.nan, np.inf, -np.inf, -0.0, tiny, -tiny] + ([] if self.no_huge else [big, -big])
            k = self.int(1, min(n, 4))
            v[self.rng.choice(n, k, replace=False)] = self.rng.choice(pool, k)
        if name == "bfloat16":
            return v.astype(np.float32).astype(dt).reshape(shape)
        with np.errstate(over="ignore"):
            return v.astype(dt).reshape(shape)

    def scalar(self, dtype, value):
        return np.array(value, dtype=npdtype(dtype) if isinstance(dtype, str) else dtype)


def broadcast_pair(g):
    out = g.shape(g.int(0, 4))
    a = [d if g.chance(0.7) else 1 for d in out]
    b = [d if g.chance(0.7) else 1 for d in out]
    if out and g.chance(0.4):
        b = b[g.int(0, len(out)):]
    return a, b


def adversarial_pair(g):
    """Shapes that do not broadcast, or broadcast in unusual ways."""
    return g.pick([
        ([3, 4], [5]), ([2, 3], [3, 2]), ([0], [2]), ([0, 3], [1, 3]), ([2, 1, 2, 1, 2, 1, 2, 1, 2], [1, 2, 1, 2, 1, 2, 1, 2, 1]),
        ([1] * 10, [3]), ([0, 2**40], [0, 1]), ([2**31, 0], [1]), ([], [0]), ([4, 1], [1, 0]), ([7], [7, 1, 1, 1, 1, 1, 1, 1, 1]),
        ([2, 1, 3, 1, 2], [1, 3, 1, 2, 1]),
    ])


def make_case(rows, seed, case_id):
    index = pick_row(len(rows), seed, case_id)
    op, row = rows[index]
    case = Case(op, row, case_id, seed)
    rng = np.random.default_rng([seed, case_id])
    g = Gen(rng, case)
    generator = GENERATORS.get(op)
    if generator is None:
        raise KeyError(f"no fuzz generator for {op}")
    generator(g, case)
    if g.adv and not case.tags and case.mode in ("raw", "exec"):
        generic_mutation(g, case)
    return case


# --- generic mutations: any tensor input or attribute --------------------------------------------

def generic_mutation(g, case):
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(case.op)
    inputs = {a.name for a in op_def.input_arg}
    tensors = [k for k, v in case.args.items() if k in inputs and isinstance(v, np.ndarray)]
    attrs = [k for k, v in case.args.items() if k not in inputs and not isinstance(v, np.ndarray)]
    if tensors and (not attrs or g.chance(0.7)):
        name = g.pick(tensors)
        v = case.args[name]
        kind = g.pick(["empty", "rank_up", "rank_down", "scalar", "big_rank", "huge_empty", "all_nan", "extremes"])
        if kind == "empty":
            s = list(v.shape) or [1]
            s[g.int(0, len(s) - 1)] = 0
            v = np.zeros(s, v.dtype)
        elif kind == "rank_up":
            v = v.reshape((1,) + v.shape) if g.chance(0.5) else np.stack([v, v], axis=-1)
        elif kind == "rank_down":
            v = v[0] if v.ndim and v.shape[0] else v.reshape(-1)
        elif kind == "scalar":
            v = v.reshape(-1)[:1].reshape(()) if v.size else np.zeros((), v.dtype)
        elif kind == "big_rank":
            v = v.reshape((1,) * g.int(max(1, 9 - v.ndim), 10) + v.shape)
        elif kind == "huge_empty":
            v = np.zeros(g.pick([(0, 2**40), (2**31, 0), (0,) + tuple(v.shape), (2**33, 0, 3)]), v.dtype)
        elif kind == "all_nan" and v.dtype.kind == "f":
            v = np.full(v.shape, g.pick([np.nan, np.inf, -np.inf]), v.dtype)
        elif v.dtype.kind in "iu" and v.size:
            info = np.iinfo(v.dtype)
            v = v.copy()
            v.reshape(-1)[g.int(0, v.size - 1)] = g.pick([info.min, info.max, -1, 2**31 - 1 if info.max >= 2**31 else info.max])
        else:
            kind = "empty"
            v = np.zeros((0,) + v.shape[1:], v.dtype)
        case.args[name] = v
        g.tag(f"{kind}:{name}")
        return
    if not attrs:
        return
    name = g.pick(attrs)
    v = case.args[name]
    if isinstance(v, bool):
        v = not v
    elif isinstance(v, int):
        v = g.pick(BAD_INTS)
    elif isinstance(v, float):
        v = g.pick([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    elif isinstance(v, (str, bytes)):
        v = g.pick(BAD_ENUMS)
    elif isinstance(v, list) and all(isinstance(x, int) for x in v):
        v = list(v)
        kind = g.int(0, 2)
        if kind == 0 and v:
            v[g.int(0, len(v) - 1)] = g.pick(BAD_INTS)
        elif kind == 1 and v:
            v = v[:-1]
        else:
            v = v + [1]
    else:
        return
    case.args[name] = v
    g.tag(f"attr:{name}")


# --- elementwise -------------------------------------------------------------------------------

def elementwise_shape(g):
    r = g.rng.random()
    if r < 0.08:
        return g.pick([[4099], [64, 66], [1001], [4096]])
    return g.shape(g.int(0, 4))


def gen_unary(g, case):
    from tensorflow.python.framework import op_def_registry

    name = op_def_registry.get(case.op).input_arg[0].name
    dtype = case.row.get("T", "bool" if case.op == "LogicalNot" else "float32")
    shape = elementwise_shape(g)
    if g.adversary("shape"):
        shape = g.pick([[0], [2, 0, 3], [0, 2**40], [2**31, 0], [1] * 9, [1] * 12 + [3], [0] * 9])
    case.args[name] = g.data(dtype, shape)
    if "Tout" in case.row:  # Real, Imag, ComplexAbs, Angle: the part's type
        import tensorflow as tf

        case.args["Tout"] = tf.as_dtype(case.row["Tout"])
    if case.op == "LeakyRelu":
        case.args["alpha"] = g.pick([0.2, 0.0, 1.0, -0.5, 3.0]) if not g.adversary("alpha", 0.4) else \
            g.pick([float("nan"), float("inf"), -1e30, 1e30])


def gen_binary(g, case):
    from tensorflow.python.framework import op_def_registry

    names = [a.name for a in op_def_registry.get(case.op).input_arg]
    dtype = case.row.get("T", "bool")
    same = case.op in GRADS
    if same:
        a = elementwise_shape(g)
        b = list(a)
    else:
        a, b = broadcast_pair(g) if g.chance(0.92) else (elementwise_shape(g),) * 2
    if g.adversary("shapes"):
        a, b = adversarial_pair(g) if not same or g.chance(0.5) else g.pick([([3, 1], [3, 4]), ([4], []), ([2, 3], [3, 2]), ([0], [1])])
        if g.chance(0.5):
            a, b = b, a
    x, y = g.data(dtype, a), g.data(dtype, b)
    if dtype == "int64":
        x, y = g.data(dtype, a, lo=-(2**40), hi=2**40), g.data(dtype, b, lo=-(2**40), hi=2**40)
        if case.op in INTEGER_DIVISION_OPS:
            # INT64_MIN / -1 traps (SIGFPE) in TF-CPU's own kernel: keep it out of the reference.
            x[x == np.iinfo(np.int64).min] = 7
            if y.size and g.chance(0.3):
                y.reshape(-1)[g.int(0, y.size - 1)] = 0
                g.tag("divide-by-zero")
    if dtype in ("float32", "float16") and case.op in ("FloorDiv", "FloorMod", "RealDiv", "Div", "DivNoNan") and y.size and g.chance(0.3):
        y.reshape(-1)[g.int(0, y.size - 1)] = 0
    if case.op in ("Igamma", "Igammac", "IgammaGradA", "RandomGammaGrad", "Zeta", "Polygamma") and g.chance(0.7):
        # Mostly their domains (positive; whole orders for Polygamma), some of it outside.
        x, y = np.abs(x), np.abs(y)
        if case.op == "Polygamma":
            x = np.floor(np.minimum(x, 8)).astype(x.dtype)
    if case.op == "MulNoNan" and y.size and g.chance(0.4):
        y.reshape(-1)[g.int(0, y.size - 1)] = 0  # 0 there, whatever x is
    if case.op in ("Xlogy", "Xdivy", "Xlog1py") and x.size and g.chance(0.4):
        x.reshape(-1)[g.int(0, x.size - 1)] = 0  # TF's answer there is 0, whatever y is
    case.args[names[0]], case.args[names[1]] = x, y
    if "Tout" in case.row:  # Complex
        import tensorflow as tf

        case.args["Tout"] = tf.as_dtype(case.row["Tout"])
    if case.op == "LeakyReluGrad":
        case.args["alpha"] = g.pick([0.2, 0.0, -0.5]) if not g.adversary("alpha", 0.3) else g.pick([float("nan"), float("inf")])
    if case.op in ("Equal", "NotEqual") and g.chance(0.3):
        case.args["incompatible_shape_error"] = False
        if g.chance(0.5):
            g.tag("incompatible_shape_error=False")
            a, b = adversarial_pair(g)
            case.args[names[0]], case.args[names[1]] = g.data(dtype, a), g.data(dtype, b)


def gen_sort(g, case):
    """TopKV2, InTopKV2/InTopK, LowerBound/UpperBound and Bucketize: rows with ties and Inf, k from 0
    past the row; adversarially bad ranks, negative k, mismatched rows, unsorted boundaries."""
    T = "float32"
    if case.op == "TopKV2":
        shape = g.shape(g.int(1, 3), hi=9)
        x = np.round(g.data(T, shape, scale=2.0)) if g.chance(0.5) else g.data(T, shape)
        k = g.int(0, shape[-1])
        if g.adversary("k"):
            k, x = g.pick([(-1, x), (shape[-1] + 1, x), (1, g.data(T, []))])
        case.args.update(input=x, k=np.array(k, np.int32))  # (sorted=False leaves the order open)
    elif case.op in ("InTopKV2", "InTopK"):
        it = npdtype(case.row["T"])
        rows, classes = g.int(0, 6), g.int(0, 7)
        pred = np.round(g.data(T, [rows, classes], scale=2.0))
        targets = g.rng.integers(-1, classes + 2, size=rows).astype(it)
        k = g.int(-1, classes + 1)
        if g.adversary("shapes"):
            targets, pred = g.pick([(targets[:-1], pred), (targets, pred.reshape(-1)), (targets.reshape(-1, 1), pred)])
        case.args.update(predictions=pred, targets=targets, k=np.array(k, it) if case.op == "InTopKV2" else k)
    elif case.op in ("LowerBound", "UpperBound"):
        rows, n, m = g.int(0, 4), g.int(0, 9), g.int(0, 7)
        sorted_inputs = np.sort(np.round(g.data(T, [rows, n], scale=2.0)), axis=1)
        values = np.round(g.data(T, [rows, m], scale=2.0))
        if g.adversary("shapes"):
            values = g.pick([values.reshape(-1), g.data(T, [rows + 1, m])])
        import tensorflow as tf

        case.args.update(sorted_inputs=sorted_inputs, values=values, out_type=tf.as_dtype(case.row["out_type"]))
    else:
        boundaries = sorted(float(v) for v in np.round(g.data(T, [g.int(0, 8)], scale=2.0)) if np.isfinite(v))
        if g.adversary("boundaries") and len(boundaries) > 1:
            boundaries = boundaries[::-1]
        case.args.update(input=np.round(g.data(T, g.shape(g.int(0, 3), hi=6), scale=2.0)), boundaries=boundaries)


DIAG_OPS = ("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3", "MatrixDiagPart", "MatrixDiagPartV2", "MatrixDiagPartV3",
            "MatrixSetDiag", "MatrixSetDiagV2", "MatrixSetDiagV3", "Diag", "DiagPart")


def gen_diag(g, case):
    """The diagonal ops: random bands within (and adversarially past) the matrices, alignments,
    explicit and inferred sizes, mismatched diagonal shapes, odd ranks for DiagPart."""
    T, op = case.row["T"], case.op
    rows, cols = g.int(0, 5), g.int(0, 5)
    batch = g.shape(g.int(0, 2), hi=3)
    lo = g.int(-max(rows - 1, 0), max(cols - 1, 0))
    hi = g.int(lo, max(cols - 1, lo))
    if g.adversary("k"):
        lo, hi = g.pick([(hi + 1, hi), (-rows - 2, hi), (lo, cols + 3), (-(2**31), 2**31 - 1)])
    k = np.array([lo, hi], np.int32) if lo != hi or g.chance(0.3) else np.array(lo, np.int32)
    align = {"align": g.pick(["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"] + (["BOGUS"] if g.adv else []))} \
        if op.endswith("V3") else {}
    length = min(max(min(rows + min(hi, 0), cols - max(lo, 0)), 0), 8)
    band = [min(hi - lo + 1, 8)] if lo != hi else []
    if op == "Diag":
        case.args["diagonal"] = g.data(T, g.shape(g.int(0 if g.adv else 1, 3), hi=4))
    elif op == "DiagPart":
        half = g.shape(g.int(1, 3), hi=4)
        shape = half + half
        if g.adversary("shape"):
            shape = g.pick([half, half + [half[0] + 1] + half[1:], []])
        case.args["input"] = g.data(T, shape)
    elif op == "MatrixDiag":
        case.args["diagonal"] = g.data(T, batch + [g.int(0, 5)])
    elif op == "MatrixDiagPart":
        case.args["input"] = g.data(T, batch + [rows, cols] if not g.adversary("rank") else [rows])
    elif op == "MatrixSetDiag":
        n = min(rows, cols) + (1 if g.adversary("diagonal") else 0)
        case.args.update(input=g.data(T, batch + [rows, cols]), diagonal=g.data(T, batch + [n]))
    elif op.startswith("MatrixDiagPart"):
        case.args.update(input=g.data(T, batch + [rows, cols]), k=k, padding_value=g.data(T, []), **align)
    elif op.startswith("MatrixSetDiag"):
        shape = batch + band + [length + (1 if g.adversary("diagonal") else 0)]
        case.args.update(input=g.data(T, batch + [rows, cols]), diagonal=g.data(T, shape), k=k, **align)
    else:
        r, c = g.pick([(-1, -1), (rows, cols), (rows, -1), (-1, cols), (rows + 2, cols + 2), (0, 0)])
        case.args.update(diagonal=g.data(T, batch + band + [max(length, 1)]), k=k, num_rows=np.array(r, np.int32),
                         num_cols=np.array(c, np.int32), padding_value=g.data(T, []), **align)


def gen_approximate_equal(g, case):
    shape = elementwise_shape(g)
    x = g.data(case.row["T"], shape)
    y = x + g.data(case.row["T"], shape, scale=1e-4) if g.chance(0.7) else g.data(case.row["T"], shape)
    if g.adversary("shapes"):
        y = g.data(case.row["T"], shape + [2])
    # (An array even where x is 0-d, so that subnormal checks see it.)
    case.args.update(x=x, y=np.asarray(y).astype(x.dtype))
    if g.chance(0.8):
        case.args["tolerance"] = g.pick([1e-5, 1e-4, 0.0, 1.0, float("inf"), float("nan"), -1.0])


def gen_bincount(g, case):
    """Bincount and DenseBincount: values past the size and negative ones, weights of the values'
    shape or none, matrices (DenseBincount), bad sizes and weights."""
    dense = case.op == "DenseBincount"
    it = npdtype(case.row.get("Tidx", "int32"))
    dt = npdtype(case.row["T"])
    size = g.int(0, 9)
    shape = g.shape(g.int(1, 2) if dense else g.int(0, 2), hi=40)
    values = g.rng.integers(0, size + 3, size=shape).astype(it)
    if g.adversary("values") and values.size:
        values.reshape(-1)[g.int(0, values.size - 1)] = g.pick([-1, -(2**31), 2**31 - 1])
    weights = np.zeros(0, dt) if g.chance(0.5) else g.data(case.row["T"], shape)
    if g.adversary("weights"):
        weights = g.data(case.row["T"], [g.int(1, 5)])
    size_arr = np.array(size, it if dense else np.int32)
    if g.adversary("size"):
        size_arr = g.pick([np.array(-1, size_arr.dtype), np.array([size], size_arr.dtype)])
    if dense:
        if g.adversary("rank"):
            values = values.reshape(1, 1, 1, -1)
        case.args.update(input=values, size=size_arr, weights=weights, binary_output=g.chance(0.3))
    else:
        case.args.update(arr=values, size=size_arr, weights=weights)


def gen_unique(g, case):
    """Unique, UniqueWithCounts and ListDiff: vectors with many duplicates (drawn from a few
    values, NaN and signed zeros among the specials), empty ones, and inputs of the wrong rank."""
    def vector():
        n = g.int(0, 60) if not g.chance(0.05) else 3000
        pool = g.data(case.row["T"], [g.int(1, 8)])
        x = pool[g.rng.integers(0, len(pool), size=n)] if g.chance(0.7) else g.data(case.row["T"], [n])
        if g.adversary("rank"):
            x = x.reshape(1, -1) if g.chance(0.5) else (x[:1].reshape(()) if x.size else x.reshape(0, 1))
        return x
    out_idx = npdtype(case.row["out_idx"])
    if case.op == "ListDiff":
        x = vector()
        y = np.concatenate([x.reshape(-1)[: g.int(0, x.size)], g.data(case.row["T"], [g.int(0, 4)])]).astype(x.dtype)
        case.args.update(x=x, y=y[g.rng.permutation(y.size)] if y.ndim == 1 else y, out_idx=out_idx)
    else:
        case.args.update(x=vector(), out_idx=out_idx)


def gen_where(g, case):
    """Where: masks of every density and rank 1 to 8 (0 and 9 are refused), subnormals, empty."""
    rank = g.int(1, 4) if not g.adversary("rank") else g.pick([0, 9, 8])
    shape = g.shape(rank, hi=7) if rank < 8 else [1] * (rank - 2) + [g.int(0, 5), g.int(1, 5)]
    x = g.data(case.row["T"], shape)
    if x.size and g.chance(0.6):
        keep = g.rng.random(x.shape) < g.pick([0.0, 0.1, 0.5, 1.0])
        x = np.where(keep, x, np.zeros_like(x)).astype(x.dtype)
    case.args["condition"] = x


def gen_select(g, case):
    dtype = case.row["T"]
    if case.op == "SelectV2":
        a, b = broadcast_pair(g)
        c = g.pick([a, b, [], a[-1:]])
        if g.adversary("shapes"):
            a, b = adversarial_pair(g)
        case.args.update(condition=g.data("bool", c), t=g.data(dtype, a), e=g.data(dtype, b))
        return
    shape = g.shape(g.int(0, 4))
    cond = g.pick([shape, shape[:1], []])
    tshape = eshape = shape
    if g.adversary("shapes"):
        kind = g.int(0, 3)
        if kind == 0:
            cond = [shape[0] + 1] if shape else [2]
        elif kind == 1:
            eshape = shape + [2]
        elif kind == 2:
            cond = shape[:-1] + [1] if shape else [1]
        else:
            cond, tshape, eshape = [0], [0, 3], [0, 3]
    case.args.update(condition=g.data("bool", cond), t=g.data(dtype, tshape), e=g.data(dtype, eshape))


def gen_cast(g, case):
    src, dst = case.row["SrcT"], case.row["DstT"]
    shape = elementwise_shape(g)
    if g.adversary("shape"):
        shape = g.pick([[0], [0, 2**40], [1] * 9])
    if src in ("float32", "float16"):
        x = g.data(src, shape, scale=g.pick([3.0, 1e3, 1e5 if src == "float32" else 1e3, 1e10 if src == "float32" else 6e4]))
        if x.size and g.chance(0.3):
            flat = x.reshape(-1)
            edges = [0.5, -0.5, 1.5, -2.5, 2.0**31, -(2.0**31), 2.0**31 - 128, 2.0**63, -(2.0**63), 1e19, -1e19]
            if src == "float16":
                edges = [0.5, -0.5, 1.5, -2.5, 65504.0, -65504.0]
            k = g.int(1, min(flat.size, 4))
            flat[g.rng.choice(flat.size, k, replace=False)] = g.rng.choice(edges, k)
    elif src == "int64":
        x = g.data(src, shape, lo=-(2**40), hi=2**40)
    elif src == "int32":
        x = g.data(src, shape, lo=-(2**31), hi=2**31 - 1)
    else:
        x = g.data(src, shape)
    import tensorflow as tf

    case.args.update(x=x, DstT=tf.as_dtype(dst))
    if g.chance(0.2):
        case.args["Truncate"] = True


# --- misc math ---------------------------------------------------------------------------------

def gen_bias_add(g, case):
    T = case.row["T"]
    shape = g.shape(g.int(2, 4))
    fmt = "NHWC" if g.chance(0.85) else "NCHW"
    c = shape[-1] if fmt == "NHWC" else shape[1]
    bias = [c]
    if g.adversary("bias/format"):
        kind = g.int(0, 4)
        if kind == 0:
            bias = [c + 1]
        elif kind == 1:
            shape = shape[:1]
            bias = shape[-1:]
        elif kind == 2:
            fmt = g.pick(BAD_ENUMS)
        elif kind == 3:
            bias = [c, 1]
        else:
            shape, bias = [0, c], [c]
    if case.op == "BiasAddV1":
        case.args.update(value=g.data(T, shape), bias=g.data(T, bias if fmt == "NHWC" else shape[-1:]))
    elif case.op == "BiasAdd":
        case.args.update(value=g.data(T, shape), bias=g.data(T, bias), data_format=fmt)
    else:
        case.args.update(out_backprop=g.data(T, shape if not g.adversary("rank", 0.3) else g.pick([[3], [], [0, 0]])),
                         data_format=fmt)


def gen_add_n(g, case):
    T = case.row["T"]
    shape = elementwise_shape(g)
    n = g.int(1, 4)
    shapes = [shape] * n
    if g.adversary("shapes"):
        shapes = [shape] * (n - 1) + [g.pick([shape + [1], [0], [2**31, 0], shape[:-1], [7, 7]])]
    case.args["inputs"] = [g.data(T, s) for s in shapes]


def gen_clip(g, case):
    T = case.row["T"]
    shape = g.shape(g.int(0, 3))
    lo, hi = g.pick([([], []), (shape, shape), ([], shape)])
    t = g.data(T, shape)
    lov = g.data(T, lo, specials=False) - 1
    hiv = g.data(T, hi, specials=False) + 1
    if g.adversary("bounds"):
        kind = g.int(0, 3)
        if kind == 0:
            lov = g.data(T, shape + [2])
        elif kind == 1:
            lov, hiv = hiv, lov  # min above max
        elif kind == 2:
            lov = np.full(lov.shape, np.nan, lov.dtype)
        else:
            hiv = g.data(T, [3, 1, 1, 1, 1])
    case.args.update(t=t, clip_value_min=lov, clip_value_max=hiv)


def gen_l2loss(g, case):
    shape = elementwise_shape(g)
    if g.adversary("shape"):
        shape = g.pick([[0], [0, 2**40], [1] * 9])
    case.args["t"] = g.data(case.row["T"], shape, scale=1.0)


def gen_softmax(g, case):
    shape = g.shape(g.int(1, 4))
    if g.chance(0.1):
        shape = g.pick([[3, 1000], [2, 65, 9], [130, 7]])
    if g.adversary("shape"):
        shape = g.pick([[], [0], [3, 0], [0, 5], [1] * 9, [2**31, 0]])
    case.args["logits"] = g.data(case.row["T"], shape, scale=5.0)


def gen_xent(g, case):
    T = case.row["T"]
    b, c = g.int(0, 6), g.int(1, 8)
    if g.chance(0.1):
        b, c = g.pick([(130, 10), (3, 1000)])
    if case.op == "SoftmaxCrossEntropyWithLogits":
        probs = np.abs(g.data("float32", [b, c], specials=False))
        labels = probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-3)
        fshape, lshape = [b, c], [b, c]
        if g.adversary("shapes"):
            fshape, lshape = g.pick([([b, c], [b, c + 1]), ([b, c], [1, c]), ([c], [c]), ([b, c, 1], [b, c, 1]),
                                     ([b, 0], [b, 0]), ([2, 3], [3, 2])])
            labels = np.abs(g.data("float32", lshape))
        case.args.update(features=g.data(T, fshape, scale=4.0), labels=labels.astype(npdtype(T)).reshape(lshape))
        return
    it = npdtype(case.row["Tlabels"])
    labels = g.rng.integers(0, c, size=b)
    fshape = [b, c]
    if g.adversary("labels"):
        kind = g.int(0, 3)
        if kind == 0 and b:
            labels[g.int(0, b - 1)] = g.pick([c, -1, 2**31 - 1, 1000])  # out of range
        elif kind == 1:
            labels = labels[:-1] if b else np.zeros(1, np.int64)
        elif kind == 2:
            fshape = [b, 0]
            labels = np.zeros(b, np.int64)
        else:
            fshape = [b]
    case.args.update(features=g.data(T, fshape, scale=4.0), labels=labels.astype(it))


# --- matmuls -----------------------------------------------------------------------------------

def gen_matmul(g, case):
    T = case.row.get("T") or case.row.get("Ta")
    m, k, n = g.int(0 if g.chance(0.1) else 1, 9), g.int(0 if g.chance(0.1) else 1, 9), g.int(1, 9)
    if g.chance(0.08):
        m, k, n = g.pick([(33, 17, 65), (40, 70, 33), (130, 20, 40)])
    batched = case.op != "MatMul" and case.op != "_FusedMatMul"
    ta, tb = g.chance(0.3), g.chance(0.3)
    abatch, bbatch = ([], [])
    if batched:
        abatch, bbatch = broadcast_pair(g)
        abatch, bbatch = abatch[:2], bbatch[:2]
    ashape = abatch + ([k, m] if ta else [m, k])
    bshape = bbatch + ([n, k] if tb else [k, n])
    if g.adversary("shapes"):
        kind = g.int(0, 5)
        if kind == 0:
            bshape[-2 if not tb else -1] += 1  # inner dimensions differ
        elif kind == 1:
            ashape = ashape[-1:]  # rank 1
        elif kind == 2:
            ashape = [2] + ashape if not batched else [3, 5] + ashape[-2:]
            bshape = bshape if not batched else [4] + bshape[-2:]
        elif kind == 3:
            ashape, bshape = ([0, 2**40], [2**40, 0]) if not ta and not tb else ([2**40, 0], [0, 2**40])
        elif kind == 4:
            ashape, bshape = [3, 0], [0, 2**33]
            ta = tb = False
        else:
            ashape = [1] * 7 + ashape[-2:]
    a, b = g.data(T, ashape, scale=1.0), g.data(T, bshape, scale=1.0)
    if case.op == "MatMul":
        case.args.update(a=a, b=b, transpose_a=ta, transpose_b=tb)
    elif case.op == "_FusedMatMul":
        gen_fused_matmul(g, case, a, b, ta, tb, n)
    else:
        case.args.update(x=a, y=b, adj_x=ta, adj_y=tb)
        if case.op == "BatchMatMulV3":
            import tensorflow as tf

            case.args["Tout"] = tf.float32


def gen_fused_matmul(g, case, a, b, ta, tb, n):
    import tensorflow as tf

    case.mode = "exec"
    fused = g.pick([["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Relu6"], ["BiasAdd", "Elu"], ["BiasAdd", "LeakyRelu"],
                    ["BiasAdd", "GeluExact"], ["BiasAdd", "GeluApproximate"], ["BiasAdd", "Tanh"], ["BiasAdd", "Sigmoid"]])
    bias = [n]
    args = None
    if g.adversary("fused", 0.5):
        kind = g.int(0, 3)
        if kind == 0:
            fused = g.pick([["Relu"], ["BiasAdd", "Bogus"], [], ["BiasAdd", "Relu", "Relu"], ["FusedBatchNorm"]])
        elif kind == 1:
            bias = [n + 1]
        elif kind == 2:
            bias = [n, 1]
        else:
            args = [g.data("float32", [n]), g.data("float32", [n])]
    args = args if args is not None else [g.data("float32", bias, scale=1.0)]
    case.args.update(a=a, b=b, args=args, T=tf.float32, num_args=len(args), fused_ops=fused, transpose_a=ta,
                     transpose_b=tb, epsilon=1e-4, leakyrelu_alpha=g.pick([0.2, 0.0, -1.0]))


def einsum_shapes(g, equation):
    """Consistent operand shapes for `equation` (None where it cannot be parsed)."""
    if "->" not in equation:
        return None
    lhs, _ = equation.split("->", 1)
    sizes, ellipsis = {}, g.shape(g.int(0, 2), hi=3)
    shapes = []
    for operand in lhs.split(","):
        shape = []
        rest = operand
        if "..." in rest:
            pre, post = rest.split("...", 1)
            shape += [sizes.setdefault(c, g.int(1, 5)) for c in pre]
            shape += [d if g.chance(0.8) else 1 for d in ellipsis]
            shape += [sizes.setdefault(c, g.int(1, 5)) for c in post]
        else:
            shape += [sizes.setdefault(c, g.int(1, 5)) for c in rest if c.isalpha()]
        shapes.append(shape)
    return shapes


def gen_einsum(g, case):
    T = case.row["T"]
    eq = g.pick(["ij,jk->ik", "bij,bjk->bik", "ij->ji", "ij->", "i,i->", "ij,ij->ij", "bi,bj->bij", "...ij,...jk->...ik",
                 "abc,cd->abd", "aecd,abcd->acbe", "acbe,aecd->abcd", "ij,j->i", "i,j->ij", "ii->i", "ii->", "iij,jk->ik",
                 "ab...,b->a...", "bhqd,bhkd->bhqk"])
    shapes = einsum_shapes(g, eq)
    if g.adversary("equation/shapes"):
        kind = g.int(0, 2)
        if kind == 0:
            eq = g.pick(["ij,jk->il", "ij,jk", "ij;jk->ik", "i j,jk->ik", "ij,jk->ikk", "->", "", "ij,jk,kl->il", "IJ,JK->IK",
                         "ij,jk->ik->i", "...,...->...", "i..j,jk->ik", "ß,ß->"])
        elif kind == 1 and shapes and shapes[0]:
            shapes[0][-1] += 2  # shared label with two sizes
        else:
            shapes = [s + [2] for s in shapes] if shapes else shapes
    shapes = shapes or [[2, 3], [3, 4]]
    case.args.update(inputs=[g.data(T, s, scale=1.0) for s in shapes], equation=eq)


# --- reductions --------------------------------------------------------------------------------

def gen_reduce(g, case):
    T = case.row.get("T", "bool")
    shape = g.shape(g.int(0, 4))
    if g.chance(0.1):
        shape = g.pick([[5000, 3], [3, 0, 2], [70001], [6, 40, 3]])
    rank = len(shape)
    axes = [a for a in range(rank) if g.chance(0.5)]
    axes = [a - rank if g.chance(0.3) else a for a in axes]
    axes_shape = None
    if g.adversary("axes"):
        kind = g.int(0, 4)
        if kind == 0:
            axes = axes + [g.bad_axis(rank)]
        elif kind == 1 and rank:
            axes = [0, 0 - rank] if g.chance(0.5) else [0, 0]  # duplicates
        elif kind == 2:
            axes_shape = [1, len(axes)] if axes else [0, 1]
        elif kind == 3:
            shape = g.pick([[0, 2**40], [2**31, 0], [1] * 9])
            axes = [0] if g.chance(0.5) else [1]
        else:
            axes = list(range(-rank, rank)) + [rank]
    scale = 0.05 if case.op == "Prod" else 0.8
    x = g.data(T, shape, scale=scale) if T != "bool" else g.data(T, shape)
    if case.op == "Prod" and x.dtype.kind == "f":
        x = (np.exp(x.astype(np.float32))).astype(x.dtype)
    idx = g.ivec(axes)
    if axes_shape is not None:
        idx = idx.reshape(axes_shape)
    if rank and not axes and g.chance(0.3):
        idx = g.ivec([g.int(-rank, rank - 1)]).reshape(())  # a scalar axis
    case.args.update(input=x, reduction_indices=idx, keep_dims=g.chance(0.5))


def gen_arg(g, case):
    T = case.row["T"]
    shape = g.shape(g.int(1, 4))
    if g.chance(0.1):
        shape = [4, 5, 300]
    axis = g.int(-len(shape), len(shape) - 1)
    dim = g.ivec([axis]).reshape(())
    if g.adversary("axis"):
        kind = g.int(0, 3)
        if kind == 0:
            dim = g.ivec([g.bad_axis(len(shape))]).reshape(())
        elif kind == 1:
            shape[axis] = 0  # reducing an empty axis
        elif kind == 2:
            dim = g.ivec([axis, axis])
        else:
            shape, dim = [], g.ivec([0]).reshape(())
    x = g.data(T, shape, scale=1.0)
    if x.size and g.chance(0.3):  # ties
        x = np.round(x).astype(x.dtype)
    case.args.update(input=x, dimension=dim, output_type=__import__("tensorflow").as_dtype(case.row["output_type"]))


# --- convolutions and pooling -------------------------------------------------------------------

def conv_out(size, k, s, d, padding, pads=(0, 0)):
    eff = (k - 1) * d + 1
    if padding == "SAME":
        return -(-size // s)
    if padding == "VALID":
        return max(0, (size - eff) // s + 1) if size >= eff else 0
    return max(0, (size + pads[0] + pads[1] - eff) // s + 1)


def conv_config(g, depthwise=False, pool=False):
    n, h, w, c = g.int(1, 2), g.int(1, 8), g.int(1, 8), g.int(1, 4)
    kh, kw = g.int(1, 3), g.int(1, 3)
    sh, sw = g.int(1, 3), g.int(1, 3)
    if depthwise:
        sw = sh
    dh, dw = (1, 1) if pool or g.chance(0.7) else (g.int(1, 2), g.int(1, 2))
    padding = g.pick(["SAME", "VALID"] if pool or depthwise else ["SAME", "VALID", "EXPLICIT"])
    explicit = [0, 0, g.int(0, 2), g.int(0, 2), g.int(0, 2), g.int(0, 2), 0, 0] if padding == "EXPLICIT" else []
    if padding == "VALID":
        h, w = max(h, (kh - 1) * dh + 1), max(w, (kw - 1) * dw + 1)
    return dict(n=n, h=h, w=w, c=c, kh=kh, kw=kw, strides=[1, sh, sw, 1], dilations=[1, dh, dw, 1], padding=padding,
                explicit=explicit)


def conv_attr_mutation(g, cfg, attrs, allow=("strides", "dilations", "padding", "explicit", "format")):
    """Adversarial strides, dilations, paddings and enums (returns the tag)."""
    kind = g.pick(list(allow))
    if kind == "strides":
        v = g.pick([[1, 0, 1, 1], [1, 1, -1, 1], [2, 1, 1, 1], [1, 1, 1, 2], [1, 2, 1], [1, 2**31, 1, 1], [1, 2**40, 2**40, 1],
                    [], [1, 1, 1, 1, 1]])
        attrs["strides"] = v
    elif kind == "dilations":
        attrs["dilations"] = g.pick([[1, 0, 1, 1], [1, -2, 1, 1], [2, 1, 1, 1], [1, 2**31, 1, 1], [1, 1, 1], [1, 1, 2, 2]])
    elif kind == "padding":
        attrs["padding"] = g.pick(["EXPLICIT", "BOGUS", "same", ""])
        if attrs["padding"] == "EXPLICIT" and "explicit_paddings" in attrs and not attrs["explicit_paddings"]:
            attrs["explicit_paddings"] = [0, 0, 1, 1, 1, 1, 0, 0]
    elif kind == "explicit":
        attrs["padding"] = "EXPLICIT"
        attrs["explicit_paddings"] = g.pick([[0, 0, 10**9, 10**9, 0, 0, 0, 0], [0, 0, 2**62, 1, 1, 1, 0, 0],
                                             [0, 0, -1, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0, 0, 0],
                                             [0, 0, 2**31, 2**31, 2**31, 2**31, 0, 0], [0, 0, 1, 1, 1, 1, 0, 0, 0, 0],
                                             [0, 0, 0, 0, 0, 0, 3, 3]])
    else:
        attrs["data_format"] = g.pick(["NCHW", "NCDHW", "NDHWC", "BOGUS", "HWNC"])
    return kind


def gen_conv(g, case):
    T = case.row["T"]
    depthwise = "Depthwise" in case.op
    cfg = conv_config(g, depthwise=depthwise)
    groups = 1
    if case.op == "Conv2D" and g.chance(0.15):
        groups = 2
        cfg["c"] *= 2
    mult = g.int(1, 3)
    cout = g.int(1, 5) * groups
    filt = [cfg["kh"], cfg["kw"], cfg["c"], mult] if depthwise else [cfg["kh"], cfg["kw"], cfg["c"] // groups, cout]
    xshape = [cfg["n"], cfg["h"], cfg["w"], cfg["c"]]
    attrs = dict(strides=cfg["strides"], padding=cfg["padding"], dilations=cfg["dilations"])
    if cfg["padding"] == "EXPLICIT" or case.op in ("Conv2D", "_FusedConv2D") or g.chance(0.3):
        attrs["explicit_paddings"] = cfg["explicit"]
    if g.adversary("conv"):
        if g.chance(0.35):
            kind = g.int(0, 5)
            if kind == 0:
                filt[2] += 1  # channels mismatch
            elif kind == 1:
                filt = filt[:3]
            elif kind == 2:
                xshape = xshape[1:]
            elif kind == 3:
                xshape = [1, 2, 2, cfg["c"]]
                filt[0] = filt[1] = 5
                attrs["padding"] = "VALID"
            elif kind == 4:
                xshape[g.pick([0, 1, 3])] = 0
            else:
                xshape = [0, 2**40, 2, cfg["c"]]
            g.tag(f"shape{kind}")
        else:
            g.tag(conv_attr_mutation(g, cfg, attrs))
    x, f = g.data(T, xshape, scale=1.0), g.data(T, filt, scale=1.0)
    if case.op == "_FusedConv2D":
        gen_fused_conv(g, case, x, f, attrs, filt[-1])
        return
    case.args.update(input=x, filter=f, **attrs)
    if "data_format" not in attrs and g.chance(0.1):
        case.args["data_format"] = "NHWC"


def gen_fused_conv(g, case, x, f, attrs, cout):
    import tensorflow as tf

    case.mode = "exec"
    fused = g.pick([["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Relu6"], ["BiasAdd", "Elu"], ["BiasAdd", "LeakyRelu"],
                    ["FusedBatchNorm"], ["FusedBatchNorm", "Relu"], ["FusedBatchNorm", "Relu6"], ["FusedBatchNorm", "LeakyRelu"]])
    nargs = 1 if fused[0] == "BiasAdd" else 4
    shapes = [[cout]] * nargs
    if g.adversary("fused", 0.3):
        kind = g.int(0, 2)
        if kind == 0:
            fused = g.pick([["Relu"], ["BiasAdd", "Bogus"], ["BiasAdd", "Add"], []])
        elif kind == 1:
            shapes = [[cout + 1]] * nargs
        else:
            shapes = shapes[:-1] or [[cout], [cout]]
    args = [g.data("float32", s, scale=1.0, specials=False) for s in shapes]
    if nargs == 4 and len(args) == 4:
        args[3] = np.abs(args[3]) + 0.5
    case.args.update(input=x, filter=f, args=[a.astype(x.dtype) for a in args], host_args=[], T=tf.as_dtype(x.dtype),
                     TArgs=[tf.as_dtype(x.dtype)] * len(args), num_args=len(args), num_host_args=0, fused_ops=fused,
                     filter_format="HWIO", data_format=attrs.get("data_format", "NHWC"), use_cudnn_on_gpu=True,
                     epsilon=1e-3, leakyrelu_alpha=0.2, strides=attrs["strides"], padding=attrs["padding"],
                     explicit_paddings=attrs.get("explicit_paddings", []), dilations=attrs["dilations"])


def gen_conv_grad(g, case):
    T = case.row["T"]
    depthwise = "Depthwise" in case.op
    cfg = conv_config(g, depthwise=depthwise)
    mult = g.int(1, 3)
    cout = cfg["c"] * mult if depthwise else g.int(1, 5)
    filt = [cfg["kh"], cfg["kw"], cfg["c"], mult] if depthwise else [cfg["kh"], cfg["kw"], cfg["c"], cout]
    xshape = [cfg["n"], cfg["h"], cfg["w"], cfg["c"]]
    pads = cfg["explicit"] or [0] * 8
    oh = conv_out(cfg["h"], cfg["kh"], cfg["strides"][1], cfg["dilations"][1], cfg["padding"], pads[2:4])
    ow = conv_out(cfg["w"], cfg["kw"], cfg["strides"][2], cfg["dilations"][2], cfg["padding"], pads[4:6])
    dy = [cfg["n"], oh, ow, cout]
    attrs = dict(strides=cfg["strides"], padding=cfg["padding"], dilations=cfg["dilations"])
    if cfg["padding"] == "EXPLICIT" or g.chance(0.3):
        attrs["explicit_paddings"] = cfg["explicit"]
    sizes = xshape if "Input" in case.op else filt
    if g.adversary("conv"):
        if g.chance(0.45):
            kind = g.int(0, 5)
            if kind == 0:
                sizes = list(sizes)
                sizes[g.int(0, 3)] = g.pick([-1, 0, 2**31 - 1, -(2**31)])
            elif kind == 1:
                sizes = sizes[:3]
            elif kind == 2:
                dy = list(dy)
                dy[g.int(1, 3)] += 1
            elif kind == 3:
                dy = dy[1:]
            elif kind == 4:
                sizes = list(sizes)
                sizes[-1] += 1
            else:
                sizes = list(sizes)
                sizes[0] = 0
                if "Input" in case.op:
                    dy = [0] + dy[1:]
            g.tag(f"shape{kind}")
        else:
            g.tag(conv_attr_mutation(g, cfg, attrs))
    sizes = np.array(sizes, np.int32) if all(-(2**31) <= s < 2**31 for s in sizes) else np.array(sizes, np.int64)
    if case.op.endswith("Input"):
        case.args.update(input_sizes=sizes, filter=g.data(T, filt, scale=1.0), out_backprop=g.data(T, dy, scale=1.0), **attrs)
    elif case.op.endswith("InputV2"):  # sized by its input's shape (huge sizes become empty inputs)
        shape = [int(v) if 0 <= v <= 64 else 0 for v in sizes]
        case.args.update(input=g.data(T, shape, scale=1.0), filter=g.data(T, filt, scale=1.0),
                         out_backprop=g.data(T, dy, scale=1.0), **attrs)
    else:
        case.args.update(input=g.data(T, xshape, scale=1.0), filter_sizes=sizes, out_backprop=g.data(T, dy, scale=1.0), **attrs)


def gen_pool(g, case):
    T = case.row["T"]
    cfg = conv_config(g, pool=True)
    ksize = [1, cfg["kh"], cfg["kw"], 1]
    attrs = dict(ksize=ksize, strides=cfg["strides"], padding=cfg["padding"])
    xshape = [cfg["n"], cfg["h"], cfg["w"], cfg["c"]]
    if g.adversary("pool"):
        if g.chance(0.4):
            kind = g.int(0, 4)
            if kind == 0:
                attrs["ksize"] = g.pick([[1, 0, 2, 1], [1, -1, 2, 1], [2, 2, 2, 1], [1, 2, 2, 2], [1, 2, 2], [1, 2**31, 1, 1],
                                         [1, 100, 100, 1]])
            elif kind == 1:
                xshape = xshape[1:]
            elif kind == 2:
                xshape[g.pick([0, 1, 3])] = 0
            elif kind == 3 and case.op == "MaxPool":
                attrs["padding"] = "EXPLICIT"
                attrs["explicit_paddings"] = g.pick([[0, 0, 1, 1, 1, 1, 0, 0], [0, 0, 10**9, 0, 0, 0, 0, 0], [0, 0, 1, 1]])
            else:
                attrs["ksize"] = [1, 100, 100, 1]
                attrs["padding"] = "VALID"
            g.tag(f"shape{kind}")
        else:
            g.tag(conv_attr_mutation(g, cfg, attrs, ("strides", "padding", "format")))
    x = g.data(T, xshape, scale=1.0)
    if case.op == "MaxPool":
        case.args.update(input=x, **attrs)
    elif case.op == "MaxPoolV2":  # ksize and strides as int32 tensors
        case.args.update(input=x, **_pool_lists_as_tensors(attrs))
    elif case.op == "MaxPoolWithArgmax":  # NHWC only, no explicit paddings
        attrs.pop("data_format", None)
        attrs.pop("explicit_paddings", None)
        case.args.update(input=x, include_batch_in_index=g.chance(0.5), **attrs)
    else:
        case.args.update(value=x, **attrs)


def _pool_lists_as_tensors(attrs):
    """MaxPoolV2's and MaxPoolGradV2's arguments: ksize and strides as int32 tensors (huge entries
    wrapped, as TF would read them), no explicit paddings."""
    attrs = dict(attrs)
    attrs.pop("explicit_paddings", None)
    for name in ("ksize", "strides"):
        attrs[name] = np.array(attrs[name], np.int64).astype(np.int32)
    return attrs


def gen_pool_grad(g, case):
    import tensorflow as tf

    T = case.row["T"]
    cfg = conv_config(g, pool=True)
    ties = g.chance(0.25)
    attrs = dict(ksize=[1, cfg["kh"], cfg["kw"], 1], strides=cfg["strides"], padding=cfg["padding"])
    xshape = [cfg["n"], cfg["h"], cfg["w"], cfg["c"]]
    x = g.data(T, xshape, scale=1.0)
    if ties:
        x = np.round(x.astype(np.float32)).clip(-1, 1).astype(x.dtype)
    oh = conv_out(cfg["h"], cfg["kh"], cfg["strides"][1], 1, cfg["padding"])
    ow = conv_out(cfg["w"], cfg["kw"], cfg["strides"][2], 1, cfg["padding"])
    yshape = [cfg["n"], oh, ow, cfg["c"]]
    max_pool = case.op.startswith("MaxPoolGrad")
    with_argmax = case.op == "MaxPoolGradWithArgmax"
    batch_index = g.chance(0.5)
    if max_pool:
        with tf.device(CPU):
            y = tf.raw_ops.MaxPool(input=x, **attrs).numpy()
    adv_shape = None
    if g.adversary("pool"):
        if g.chance(0.5):
            kind = g.int(0, 4)
            if kind == 0:
                adv_shape = list(yshape)
                adv_shape[g.int(1, 3)] += 1
            elif kind == 1:
                adv_shape = yshape[1:]
            elif kind == 2 and case.op == "AvgPoolGrad":
                xshape = list(xshape)
                xshape[g.int(0, 3)] = g.pick([-1, 0, 2**31 - 1])
            elif kind == 3 and max_pool:
                y = g.data(T, y.shape)  # orig_output not the pool of orig_input
            else:
                attrs["ksize"] = g.pick([[1, 0, 2, 1], [1, 2, 2], [2, 1, 1, 1], [1, -3, 1, 1]])
            g.tag(f"shape{kind}")
        else:
            g.tag(conv_attr_mutation(g, cfg, attrs, ("strides", "padding", "format")))
    dy = g.data(T, adv_shape or yshape, scale=1.0)
    if case.op.startswith("MaxPoolGradGrad"):  # the second-order gradient is shaped like the input
        dy = g.data(T, adv_shape or xshape, scale=1.0)
        lists = _pool_lists_as_tensors(attrs) if case.op.endswith("V2") else attrs
        case.args.update(orig_input=x, orig_output=y.astype(x.dtype), grad=dy, **lists)
    elif with_argmax:
        attrs.pop("data_format", None)
        attrs.pop("explicit_paddings", None)
        argmax = np.zeros(yshape, np.int64)
        if not g.adv:  # (TF-CPU aborts on some adversarial attributes: any indices will do for those)
            with tf.device(CPU):
                argmax = tf.raw_ops.MaxPoolWithArgmax(input=x.astype(np.float32), include_batch_in_index=batch_index,
                                                      **attrs)[1].numpy()
        if g.adversary("argmax", 0.5) and argmax.size:
            # Indices outside the image: TF's kernels add them wherever they point, and so does the
            # plugin inside the tensor; outside it the plugin drops them (TF-CPU aborts, which the
            # run reports as a reference crash).
            argmax = argmax.copy()
            argmax.reshape(-1)[g.int(0, argmax.size - 1)] = g.pick([-1, x.size, 2**40])
        case.args.update(input=x, grad=dy, argmax=argmax, include_batch_in_index=batch_index, **attrs)
    elif case.op == "MaxPoolGrad":
        case.args.update(orig_input=x, orig_output=y.astype(x.dtype), grad=dy, **attrs)
    elif case.op == "MaxPoolGradV2":
        case.args.update(orig_input=x, orig_output=y.astype(x.dtype), grad=dy, **_pool_lists_as_tensors(attrs))
    else:
        case.args.update(orig_input_shape=np.array(xshape, np.int32 if all(abs(s) < 2**31 for s in xshape) else np.int64),
                         grad=dy, **attrs)


def gen_volume(g, case):
    """Conv3D (and its gradients) and the 3-D pools: small NDHWC volumes, strides, dilations
    (convolutions), SAME/VALID; adversarially bad ranks and list lengths, zero and huge strides and
    windows, mismatched depths and gradients, empty volumes and bad formats."""
    import tensorflow as tf

    T = case.row["T"]
    conv = case.op.startswith("Conv3D")
    n, c = g.int(0, 2) if g.chance(0.1) else g.int(1, 2), g.int(1, 3)
    size = [g.int(1, 6) for _ in range(3)]
    k = [g.int(1, 3) for _ in range(3)]
    strides = [g.int(1, 2) for _ in range(3)]
    dilations = [g.int(1, 2) for _ in range(3)] if conv and g.chance(0.25) else [1, 1, 1]
    padding = g.pick(["SAME", "VALID"])
    if padding == "VALID":
        size = [max(s, (kk - 1) * d + 1) for s, kk, d in zip(size, k, dilations)]
    oc = g.int(1, 3)
    xshape = [n, *size, c]
    fshape = [*k, c, oc]
    attrs = dict(strides=[1, *strides, 1], padding=padding)
    if conv:
        attrs["dilations"] = [1, *dilations, 1]
    else:
        attrs["ksize"] = [1, *k, 1]
    out = [conv_out(sz, kk, st, d, padding) for sz, kk, st, d in zip(size, k, strides, dilations)]
    yshape = [n, *out, oc if conv else c]
    if g.adversary("volume"):
        kind = g.int(0, 5)
        if kind == 0:
            xshape = xshape[1:]
        elif kind == 1:
            attrs["strides"] = g.pick([[1, 0, 1, 1, 1], [1, 1, 1, 1], [2, 1, 1, 1, 1], [1, 2**31, 1, 1, 1]])
        elif kind == 2 and conv:
            fshape = [*k, c + 1, oc]
        elif kind == 2:
            attrs["ksize"] = g.pick([[1, 0, 1, 1, 1], [1, 2, 2, 2], [1, 1, 1, 1, 2], [1, 2**31, 1, 1, 1]])
        elif kind == 3:
            yshape = [n, *[o + 1 for o in out], yshape[-1]]
        elif kind == 4:
            attrs["data_format"] = g.pick(["NCHW", "BOGUS", "NHWC"])
        else:
            xshape = [n, 0, *size[1:], c]
            out[0] = 0 if padding == "SAME" else out[0]
        g.tag(f"volume{kind}")
    x = g.data(T, xshape, scale=1.0)
    dy = g.data(T, yshape, scale=1.0)
    if case.op == "Conv3D":
        case.args.update(input=x, filter=g.data(T, fshape, scale=1.0), **attrs)
    elif case.op == "Conv3DBackpropInputV2":
        sizes = np.array(xshape, np.int64 if case.row.get("Tshape") == "int64" else np.int32)
        case.args.update(input_sizes=sizes, filter=g.data(T, fshape, scale=1.0), out_backprop=dy, **attrs)
    elif case.op == "Conv3DBackpropFilterV2":
        case.args.update(input=x, filter_sizes=np.array(fshape, np.int32), out_backprop=dy, **attrs)
    elif case.op in ("MaxPool3D", "AvgPool3D"):
        case.args.update(input=x, **attrs)
    elif case.op == "AvgPool3DGrad":
        case.args.update(orig_input_shape=np.array(xshape, np.int32), grad=dy, **attrs)
    else:
        y = g.data(T, yshape, scale=1.0)
        if not g.adv:  # (TF-CPU aborts on some adversarial strides: no reference pool for those)
            with tf.device(CPU):
                y = tf.raw_ops.MaxPool3D(input=x.astype(np.float32), **attrs).numpy().astype(x.dtype)
        grad = dy if case.op == "MaxPool3DGrad" else g.data(T, xshape, scale=1.0)
        case.args.update(orig_input=x, orig_output=y, grad=grad, **attrs)


def gen_generic_conv(g, case):
    """The generic Conv op: 2 or 3 spatial dimensions, 1 or 2 batch dimensions, groups, both
    channel orders, SAME/VALID/EXPLICIT, dilations; adversarially 1 or 4 spatial dimensions, bad
    batch_dims and groups, list lengths and formats."""
    T = case.row["T"]
    spatial = g.pick([2, 3])
    batch = [g.int(1, 2) for _ in range(g.pick([1, 1, 2]))]
    groups = g.pick([1, 1, 2])
    cin, cout = g.int(1, 2) * groups, g.int(1, 2) * groups
    size = [g.int(1, 6) for _ in range(spatial)]
    k = [g.int(1, 3) for _ in range(spatial)]
    first = g.chance(0.25)
    strides = [1, *[g.int(1, 2) for _ in range(spatial)], 1]
    dilations = [1, *[g.int(1, 2) for _ in range(spatial)], 1] if g.chance(0.25) else [1] * (spatial + 2)
    padding = g.pick(["SAME", "VALID", "EXPLICIT"])
    attrs = dict(strides=strides, padding=padding, dilations=dilations, batch_dims=len(batch), groups=groups,
                 data_format="CHANNELS_FIRST" if first else "CHANNELS_LAST")
    if padding == "EXPLICIT":
        attrs["explicit_paddings"] = [0, 0, *[g.int(0, 2) for _ in range(2 * spatial)], 0, 0]
    else:
        size = [max(sz, (kk - 1) * d + 1) for sz, kk, d in zip(size, k, dilations[1:-1])]
    fshape = [*k, cin // groups, cout]
    if g.adversary("conv"):
        kind = g.int(0, 5)
        if kind == 0:
            size = size[:1] if spatial == 2 else size + [2]
        elif kind == 1:
            attrs["batch_dims"] = g.pick([0, -1, 7])
        elif kind == 2:
            attrs["groups"] = g.pick([0, -1, 3])
        elif kind == 3:
            attrs["strides"] = g.pick([[1, 1, 1], strides + [1], [1, 0] + strides[2:], [2] + strides[1:]])
        elif kind == 4:
            attrs["data_format"] = g.pick(["NHWC", "BOGUS"])
        else:
            fshape = [*k, cin + 1, cout]
        g.tag(f"conv{kind}")
    xshape = [*batch, cin, *size] if first else [*batch, *size, cin]
    case.args.update(input=g.data(T, xshape, scale=1.0), filter=g.data(T, fshape, scale=1.0), **attrs)


def gen_batch_norm(g, case):
    T = case.row["T"]
    n, h, w, c = g.int(1, 3), g.int(1, 5), g.int(1, 5), g.int(1, 5)
    xshape = [n, h, w, c]
    training = g.chance(0.6)
    f32 = lambda s, **kw: g.data("float32", s, specials=False, **kw)
    fmt = "NHWC"
    cs = [c] * 4
    eps = g.pick([1e-3, 1e-5, 0.01])
    if g.adversary("batchnorm"):
        kind = g.int(0, 5)
        if kind == 0:
            cs = [c, c + 1, c, c]
        elif kind == 1:
            xshape = g.pick([[n, h, c], [n, h, w, 1, c], [0, h, w, c], [n, 0, 0, c]])
        elif kind == 2:
            fmt = g.pick(["NCHW", "NCDHW", "BOGUS"])
        elif kind == 3:
            eps = g.pick([-1.0, 0.0, float("nan"), 1e30])
        elif kind == 4:
            cs = [c, c, 0, 0]
        else:
            cs = [0] * 4
    x = g.data(T, xshape, scale=1.0)
    if not case.op.startswith("FusedBatchNormGrad"):
        mean, var = f32([cs[2]]), np.abs(f32([cs[3]])) + 0.1
        if training and not g.adv and g.chance(0.5):
            mean, var = np.zeros(0, np.float32), np.zeros(0, np.float32)
        case.args.update(x=x, scale=f32([cs[0]]), offset=f32([cs[1]]), mean=mean, variance=var, epsilon=eps,
                         is_training=training, data_format=fmt)
        if training and g.chance(0.4):
            case.args["exponential_avg_factor"] = g.pick([0.1, 0.5]) if not g.adv else g.pick([0.0, 2.0, float("nan")])
        # With an empty batch TF-CPU's float16 kernel leaves reserve_space_1/2 uninitialised.
        case.outputs = 5 if training and x.size else 3
    else:
        wide = x.astype(np.float32)
        if wide.ndim == 4 and wide.size and xshape[-1] == c:
            mean = wide.mean(axis=(0, 1, 2)) if training else f32([c])
            var = wide.var(axis=(0, 1, 2)) if training else np.abs(f32([c])) + 0.1
        else:
            mean, var = f32([c]), np.abs(f32([c])) + 0.1
        if cs[2] != c:
            mean = f32([cs[2]])
        case.args.update(y_backprop=g.data(T, xshape, scale=1.0), x=x, scale=f32([cs[0]]),
                         reserve_space_1=mean.astype(np.float32), reserve_space_2=var.astype(np.float32),
                         epsilon=eps, is_training=training, data_format=fmt)
        if case.op == "FusedBatchNormGradV3":
            case.args["reserve_space_3"] = np.zeros(0, np.float32)
        case.outputs = 3


# --- random ------------------------------------------------------------------------------------

def gen_random(g, case):
    import tensorflow as tf

    if case.op == "StatelessRandomGetAlg":
        return
    int_type = npdtype(case.row.get("Tseed") or case.row.get("Tshape") or case.row["T"])
    if case.op in ("StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg"):
        seed = [g.int(-(2**31), 2**31 - 1), g.int(-(2**31), 2**31 - 1)]
        shape = [2]
        if g.adversary("seed"):
            shape = g.pick([[3], [1], [], [2, 2], [0]])
            seed = list(g.rng.integers(-100, 100, size=prod(shape)))
        case.args["seed"] = np.array(seed, int_type).reshape(shape)
        return
    shape = g.shape(g.int(0, 3), hi=9)
    if g.chance(0.05):
        shape = [3, 1001]
    if not case.op.startswith("Stateless"):
        gen_stateful_random(g, case, shape)
        return
    with tf.device(CPU):
        key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=np.array([g.int(0, 1000), g.int(0, 1000)], int_type))
    key, counter = key.numpy(), counter.numpy()
    if g.chance(0.2):
        counter = np.array([2**64 - g.int(1, 5), 2**32 - 1], np.uint64)  # about to carry
    alg = g.pick([1, 3])
    if g.adversary("random"):
        kind = g.int(0, 5)
        if kind == 0:
            shape = g.pick([[-1], [3, -2], [10**16], [2**31, 2**31], [2**62, 4], [2**40, 0], [2**16, 2**16]])
        elif kind == 1:
            alg = g.pick([0, 2, 4, -1, 2**31 - 1])
        elif kind == 2:
            key = np.array([1, 2], np.uint64) if g.chance(0.5) else np.zeros(0, np.uint64)
        elif kind == 3:
            counter = g.pick([np.array([1], np.uint64), np.array([1, 2, 3], np.uint64), np.zeros((2, 1), np.uint64)])
        elif kind == 4:
            shape = [0, 5]
        else:
            alg = None
    shape_type = npdtype(case.row.get("Tshape") or case.row["T"])
    shape_arr = np.array(shape, shape_type) if all(np.iinfo(shape_type).min <= s <= np.iinfo(shape_type).max for s in shape) \
        else np.array(shape, np.int64)
    if g.adv and g.chance(0.2):
        shape_arr = shape_arr.reshape(1, -1)
        g.tag("shape-rank2")
    dtype = tf.as_dtype(case.row["dtype"])
    case.args["shape"] = shape_arr
    if "UniformInt" not in case.op:  # (its dtype is its bounds')
        case.args["dtype"] = dtype
    if case.op.endswith("V2"):
        case.args.update(key=key, counter=counter, alg=np.array(alg if alg is not None else [1, 1], np.int32))
    else:
        seed = np.array([g.int(-(2**31), 2**31 - 1), g.int(-(2**31), 2**31 - 1)], int_type)
        if g.adversary("seed"):
            seed = g.pick([seed[:1], np.concatenate([seed, seed]), seed.reshape(1, 2), np.zeros(0, int_type)])
        case.args["seed"] = seed
    if "UniformInt" in case.op:
        info = np.iinfo(dtype.as_numpy_dtype)
        lo, hi = sorted(g.pick([(0, 10), (-5, 5), (info.min, info.max), (g.int(-1000, 1000), g.int(-1000, 1000)),
                               (info.max - 3, info.max), (info.min, info.min + 1)]))
        lo, hi = min(max(lo, info.min), info.max), min(max(hi, info.min), info.max)
        if g.adversary("bounds"):
            lo, hi = g.pick([(hi, lo), (lo, lo)])
        minval, maxval = np.array(lo, dtype.as_numpy_dtype), np.array(hi, dtype.as_numpy_dtype)
        if g.adversary("bounds-rank"):
            minval = minval.reshape(1)
        case.args.update(minval=minval, maxval=maxval)


def gen_stateful_random(g, case, shape):
    """RandomUniform, RandomStandardNormal, TruncatedNormal and RandomUniformInt: seeds drawn wide
    (a case's node is fresh on both devices only if no earlier case shared its attributes), bad
    shapes and bounds."""
    import tensorflow as tf

    shape_type = npdtype(case.row["T"])
    if g.adversary("random"):
        shape = g.pick([[-1], [3, -2], [10**16], [2**31, 2**31], [2**62, 4], [2**40, 0], [2**16, 2**16], [0, 5]])
    shape_arr = np.array(shape, np.int64) if any(abs(s) >= 2**31 for s in shape) else np.array(shape, shape_type)
    if g.adv and g.chance(0.2):
        shape_arr = shape_arr.reshape(1, -1)
        g.tag("shape-rank2")
    case.args["shape"] = shape_arr
    case.args["seed"] = int(g.rng.integers(1, 2**62)) * g.pick([1, -1])
    case.args["seed2"] = int(g.rng.integers(-(2**62), 2**62))
    if case.op != "RandomUniformInt":
        case.args["dtype"] = tf.as_dtype(case.row["dtype"])
        return
    int_type = npdtype(case.row["Tout"])
    info = np.iinfo(int_type)
    lo, hi = g.pick([(0, 10), (-5, 5), (info.min, info.max), (info.max - 3, info.max), (info.min, info.min + 1)])
    if g.adversary("bounds"):
        lo, hi = g.pick([(hi, lo), (lo, lo)])
    minval, maxval = np.array(lo, int_type), np.array(hi, int_type)
    if g.adversary("bounds-rank"):
        minval = minval.reshape(1)
    case.args.update(minval=minval, maxval=maxval)


# --- scatter, segments, one-hot, range -----------------------------------------------------------

def gen_segment_sum(g, case):
    it, st = npdtype(case.row["Tindices"]), npdtype(case.row["Tnumsegments"])
    shape = g.shape(g.int(1, 3))
    k = g.int(1, len(shape))
    nseg = g.int(0, 6)
    ids = g.rng.integers(-1, max(nseg, 1), size=shape[:k])
    if g.adversary("segments"):
        kind = g.int(0, 4)
        if kind == 0 and ids.size:
            ids.reshape(-1)[g.int(0, ids.size - 1)] = g.pick([nseg, nseg + 5, 2**31 - 1])  # out of range
        elif kind == 1:
            nseg = g.pick([-1, -(2**31), 2**40 if st == np.int64 else 2**31 - 1, 10**9])
        elif kind == 2:
            ids = g.rng.integers(0, max(nseg, 1), size=shape[:k] + [2])  # not a prefix
        elif kind == 3:
            ids = np.array(g.int(0, max(nseg - 1, 0)))
        else:
            shape = [0] + shape[1:]
            ids = np.zeros(shape[:k], np.int64)
    nseg_arr = np.array(nseg, np.int64) if not (-(2**31) <= nseg < 2**31) else np.array(nseg, st)
    if nseg_arr.dtype != st:
        nseg_arr = nseg_arr.astype(st) if st == np.int64 else nseg_arr
    case.args.update(data=g.data(case.row["T"], shape, scale=1.0), segment_ids=ids.astype(it), num_segments=nseg_arr)


def gen_sorted_segment(g, case):
    """SegmentSum/Prod/Min/Max/Mean: sorted ids with gaps (empty segments) and repeats; adversarially
    unsorted or negative ids (TF-GPU checks neither), a matrix of ids, a length mismatch."""
    it = npdtype(case.row["Tindices"])
    shape = g.shape(g.int(1, 3))
    ids = np.sort(g.rng.integers(0, g.int(1, 7), size=shape[0]))
    if g.adversary("segments"):
        kind = g.int(0, 4)
        if kind == 0 and ids.size > 1:
            ids = ids[::-1].copy()
        elif kind == 1 and ids.size:
            ids[0] = -1
        elif kind == 2:
            ids = ids.reshape(1, -1)
        elif kind == 3:
            ids = np.concatenate([ids, [ids.max(initial=0) + 1]])
        else:
            shape = [0] + shape[1:]
            ids = np.zeros(0, np.int64)
    case.args.update(data=g.data(case.row["T"], shape, scale=1.0), segment_ids=ids.astype(it))


def gen_scatter(g, case):
    it = npdtype(case.row["Tindices"])
    shape = g.shape(g.int(1, 3), hi=6)
    k = g.int(1, len(shape))
    nidx = g.shape(g.int(1, 2), lo=0 if g.chance(0.1) else 1, hi=4)
    idx = np.stack([g.rng.integers(0, shape[j], size=nidx) for j in range(k)], axis=-1)
    upd = nidx + shape[k:]
    policy = None
    if g.chance(0.15):
        policy = g.pick(["", "DEFAULT", "IGNORE", "ERROR"])
    if g.adversary("scatter"):
        kind = g.int(0, 5)
        if kind == 0 and idx.size:
            flat = idx.reshape(-1, k)
            flat[g.int(0, flat.shape[0] - 1), g.int(0, k - 1)] = g.pick([-1, shape[0] + 3, 2**31 - 1, 1000])
        elif kind == 1:
            upd = upd + [2]
        elif kind == 2:
            idx = np.zeros(nidx + [len(shape) + 1], np.int64)
        elif kind == 3 and case.op == "ScatterNd":
            shape = list(shape)
            shape[0] = g.pick([-1, 2**40, 0])
        elif kind == 4:
            policy = g.pick(["BOGUS", "ERROR"])
            if idx.size:
                idx.reshape(-1)[0] = -1
        else:
            idx = idx.reshape(-1)[:0].reshape(0, 0) if g.chance(0.5) else idx[..., :0]
            upd = list(idx.shape[:-1]) + shape[idx.shape[-1]:]
    updates = g.data(case.row["T"], upd, scale=1.0)
    if case.op in ASSIGNING:
        updates = same_updates_for_repeats(idx, updates)
    if case.op == "ScatterNd":
        case.args.update(indices=idx.astype(it), updates=updates,
                         shape=np.array(shape, it if all(abs(s) < 2**31 for s in shape) else np.int64))
    else:
        tshape = shape if all(0 <= s <= 64 for s in shape) else [3, 3]
        first = "input" if case.op == "ScatterNdNonAliasingAdd" else "tensor"
        case.args.update({first: g.data(case.row["T"], tshape, scale=1.0)}, indices=idx.astype(it), updates=updates)
    if policy is not None:
        case.args["bad_indices_policy"] = policy


def same_updates_for_repeats(idx, updates, tuples=True):
    """`updates` with the updates of repeated indices made equal: an assigning scatter keeps one of
    them, in no defined order, so that any may win. `idx` holds index tuples along its last axis
    (the TensorScatter and ScatterNd ops), or with `tuples=False` one row index per element."""
    idx, updates = np.asarray(idx), np.asarray(updates)
    lead = idx.ndim - 1 if tuples else idx.ndim
    if lead < 0 or updates.ndim < lead or list(updates.shape[:lead]) != list(idx.shape[:lead]):
        return updates  # a scalar update for every named row, or shapes the op rejects
    keys = idx.reshape(prod(idx.shape[:lead]), idx.shape[-1] if tuples else 1)
    if not keys.shape[0]:
        return updates
    rows = updates.reshape((keys.shape[0],) + updates.shape[lead:])
    if keys.shape[1] == 0:
        first = np.zeros(keys.shape[0], np.int64)  # depth 0: every tuple names the whole tensor
    else:
        _, index, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        first = index[inverse.reshape(-1)]
    return rows[first].reshape(updates.shape)


def gen_one_hot(g, case):
    T, it = case.row["T"], npdtype(case.row["TI"])
    shape = g.shape(g.int(0, 3))
    depth = g.int(0, 6)
    idx = g.rng.integers(-2, depth + 2, size=shape)  # out-of-range ids give off_value rows
    axis = g.int(-1, len(shape))
    on, off = g.scalar(T, 2), g.scalar(T, 0 if T.startswith("uint") else -1)
    if T == "bool":
        on, off = np.array(True), np.array(False)
    depth_arr = np.array(depth, np.int32)
    if g.adversary("onehot"):
        kind = g.int(0, 4)
        if kind == 0:
            depth_arr = np.array(g.pick([-1, -(2**31), 2**31 - 1, 10**8]), np.int32)
        elif kind == 1:
            axis = g.pick([-2, len(shape) + 1, 100, -(2**31)])
        elif kind == 2:
            depth_arr = np.array([depth, depth], np.int32)
        elif kind == 3:
            on = np.array([1, 2], on.dtype)
        else:
            idx = np.full(shape, np.iinfo(it).min)
    case.args.update(indices=idx.astype(it), depth=depth_arr, on_value=on, off_value=off, axis=axis)


def gen_range(g, case):
    start, delta = float(np.round(g.rng.standard_normal() * 5, 2)), g.pick([0.5, 0.75, 1.0, -1.5, 2.0, 0.1])
    limit = start + delta * g.int(0, 40) + g.pick([0.0, 0.3 * delta])
    if g.adversary("range"):
        start, limit, delta = g.pick([(0.0, 10.0, 0.0), (0.0, 10.0, -1.0), (10.0, 0.0, 1.0), (0.0, 1e12, 1e-3),
                                      (0.0, float("nan"), 1.0), (0.0, float("inf"), 1.0), (float("-inf"), 0.0, 1.0),
                                      (0.0, 1.0, float("nan")), (0.0, 3e38, 1.0), (-3e38, 3e38, 1e-30), (0.0, 1.0, 1e-45),
                                      (0.0, 1e9, 1e-3)])
    f = np.float32
    case.args.update(start=np.array(start, f), limit=np.array(limit, f), delta=np.array(delta, f))


def gen_lin_space(g, case):
    """LinSpace: spans up, down and empty, one value, huge and non-finite ends; adversarially
    non-positive and huge counts, non-scalar arguments."""
    T, it = npdtype(case.row["T"]), npdtype(case.row["Tidx"])
    start, stop = float(np.round(g.rng.standard_normal() * 5, 2)), float(np.round(g.rng.standard_normal() * 50, 2))
    num = g.pick([1, 2, 3, 7, 100, 1001])
    start_arg, stop_arg, num_arg = np.array(start, T), np.array(stop, T), np.array(num, it)
    if g.adversary("linspace"):
        kind = g.int(0, 3)
        if kind == 0:
            num_arg = np.array(g.pick([0, -1, np.iinfo(it).max]), it)
        elif kind == 1:
            start_arg = np.array([start], T)
        elif kind == 2:
            num_arg = np.array([num], it)
        else:
            start_arg, stop_arg = np.array(g.pick([np.nan, np.inf, -3e38]), T), np.array(g.pick([np.inf, 3e38, 0.0]), T)
        g.tag(f"linspace{kind}")
    case.args.update(start=start_arg, stop=stop_arg, num=num_arg)


# --- data movement -----------------------------------------------------------------------------

def movable(g, case, shape):
    return g.data(case.row.get("T") or case.row.get("Tparams") or case.row["dtype"], shape)


def gen_strided_slice(g, case):
    shape = g.shape(g.int(1, 4), hi=6)
    begin, end, strides, masks = strided_slice_spec(g, shape)
    dt = g.index_dtype(begin + end + strides)
    case.args.update(input=movable(g, case, shape), begin=g.ivec(begin, dt), end=g.ivec(end, dt),
                     strides=g.ivec(strides, dt), **masks)


def strided_slice_spec(g, shape):
    """begin, end, strides and the masks of a slice of `shape` (adversarial ones tagged "slice")."""
    r = len(shape)
    nspec = g.int(1, r)
    begin, end, strides = [], [], []
    for d in shape[:nspec]:
        s = g.pick([1, 1, 2, -1, -2, 3])
        begin.append(g.int(-d - 1, d + 1))
        end.append(g.int(-d - 1, d + 1))
        strides.append(s)
    masks = {m: 0 for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    if g.chance(0.6):
        masks["begin_mask"], masks["end_mask"] = g.int(0, 2**nspec - 1), g.int(0, 2**nspec - 1)
    if g.chance(0.2):
        masks["ellipsis_mask"] = 1 << g.int(0, nspec - 1)
    if g.chance(0.2):
        masks["new_axis_mask"] = 1 << g.int(0, nspec - 1)
    if g.chance(0.3):
        j = g.int(0, nspec - 1)
        if not (masks["ellipsis_mask"] >> j) & 1 and not (masks["new_axis_mask"] >> j) & 1:
            masks["shrink_axis_mask"] = 1 << j
            begin[j] = g.int(-shape[j], shape[j] - 1)
            end[j], strides[j] = begin[j] + 1, 1
    if g.adversary("slice"):
        kind = g.int(0, 5)
        if kind == 0:
            strides[g.int(0, nspec - 1)] = 0
        elif kind == 1:
            begin[0], end[0] = g.pick([(2**62, -(2**62)), (-(2**62), 2**62), (2**31 - 1, 2**31 - 1), (10**16, 0)])
        elif kind == 2:
            masks["ellipsis_mask"] = 3 if nspec > 1 else 1
            masks["new_axis_mask"] = 1
            masks["shrink_axis_mask"] = 1
        elif kind == 3:
            end = end[:-1] if len(end) > 1 else end + [1]
        elif kind == 4:
            masks["shrink_axis_mask"] = 1
            begin[0], end[0], strides[0] = shape[0] + 2, shape[0] + 3, 1  # index out of bounds
        else:
            masks = {m: g.int(-1, 2**10) for m in masks}
            strides[0] = g.pick([2**62, -(2**62), -(2**63)])
    return begin, end, strides, masks


def fit(values, dtype):
    """`values` as an array of the integer `dtype`, clamped to its range (an int32 row keeps its
    index dtype: extremes become int32's own)."""
    info = np.iinfo(dtype)
    return np.array([min(max(int(v), int(info.min)), int(info.max)) for v in np.asarray(values).reshape(-1)],
                    dtype).reshape(np.shape(values))


def sliced_shape(shape, begin, end, strides, masks, it):
    """StridedSlice's output shape from TF's shape function (no data: huge shapes too), or None."""
    import tensorflow as tf

    if any(int(d) < 0 for d in shape):
        return None
    try:
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.int8, shape=[int(d) for d in shape])
            out = tf.raw_ops.StridedSlice(input=x, begin=tf.constant(fit(begin, it)), end=tf.constant(fit(end, it)),
                                          strides=tf.constant(fit(strides, it)), **masks)
    except Exception:  # noqa: BLE001 - TF rejects the spec
        return None
    return [int(d) for d in out.shape] if out.shape.is_fully_defined() else None


def gen_strided_slice_grad(g, case):
    it = npdtype(case.row["Index"])
    shape = g.shape(g.int(1, 4), hi=6)
    begin, end, strides, masks = strided_slice_spec(g, shape)
    dy = sliced_shape(shape, begin, end, strides, masks, it)
    if g.adversary("grad", 0.6):
        kind = g.pick(["dy", "negative", "huge", "rank", "masks", "strides"])
        g.tag(f"grad:{kind}")
        if kind == "dy" and dy is not None:
            dy = g.pick([dy + [2], dy[:-1], [0] + dy, [d + 1 for d in dy]])
        elif kind == "negative":
            shape = list(shape)
            shape[g.int(0, len(shape) - 1)] = g.pick([-1, -2, -(2**31), -(2**62)])
        elif kind == "huge":
            shape = g.pick([[2**40, 2**40], [2**31, 2**31, 4], [2**62, 2], [0, 2**62], [2**31 - 1, 3], [2**32 + 1],
                            [2**63 - 1, 2], [3, 0, 2**40]])
            dy = sliced_shape(shape, begin, end, strides, masks, it)
        elif kind == "rank":
            shape = g.pick([[shape], [], shape[:1] * 9])
        elif kind == "masks":
            masks = dict(masks)
            masks[g.pick(list(masks))] = g.pick([-1, 2**31 - 1, -(2**31), 2**40, 0x5555])
        else:
            strides = list(strides)
            strides[g.int(0, len(strides) - 1)] = g.pick([0, 2**62, -(2**63), 2**31 - 1, -(2**31)])
    if dy is None or prod(dy) > 10**5 or min(dy, default=0) < 0 or prod(d for d in dy if d) > 2**50:
        dy = g.shape(g.int(0, 3))  # no valid slice (or too big to make): any dy
    case.args.update(shape=fit(shape, it), begin=fit(begin, it), end=fit(end, it), strides=fit(strides, it),
                     dy=movable(g, case, dy), **masks)


def gen_reverse_sequence(g, case):
    lt = npdtype(case.row["Tlen"])
    rank = g.int(2, 4)
    shape = g.shape(rank, lo=0 if g.chance(0.15) else 1, hi=6)
    seq_dim, batch_dim = (int(a) for a in g.rng.choice(rank, 2, replace=False))
    top = shape[seq_dim]
    lengths = [int(v) for v in g.rng.integers(0, top + 1, size=shape[batch_dim])]
    if len(lengths) >= 2 and g.chance(0.5):
        lengths[0], lengths[-1] = 0, top  # an empty and a full sequence
    elif g.chance(0.2):
        lengths = [top] * len(lengths)
    lengths = np.array(lengths, np.int64)
    if g.adversary("reverse"):
        kind = g.pick(["negative_axis", "same_axis", "bad_axis", "length_range", "length_count", "rank", "huge"])
        g.tag(f"reverse:{kind}")
        if kind == "negative_axis":  # TF-CPU rejects negative dims ("Invalid seq_dim -1")
            if g.chance(0.5):
                seq_dim -= rank
            else:
                batch_dim -= rank
        elif kind == "same_axis":
            seq_dim = g.pick([batch_dim, batch_dim - rank])
        elif kind == "bad_axis":
            if g.chance(0.5):
                seq_dim = g.bad_axis(rank)
            else:
                batch_dim = g.bad_axis(rank)
        elif kind == "length_range" and lengths.size:
            lengths[g.int(0, lengths.size - 1)] = g.pick([top + 1, -1, 2**31 - 1, -(2**31), 2**62, -(2**63)])
        elif kind == "length_count":
            lengths = g.pick([np.concatenate([lengths, [0]]), lengths[:-1], lengths.reshape(1, -1), np.array(top)])
        elif kind == "rank":
            shape = g.pick([shape[:1], []])
        else:
            shape, seq_dim, batch_dim, lengths = g.pick([
                ([0, 2**40], 1, 0, np.zeros(0, np.int64)), ([2**40, 0], 0, 1, np.zeros(0, np.int64)),
                ([3, 2**33, 0], 1, 0, np.array([2**33, 0, 5])), ([2, 0, 2**31], 2, 0, np.array([2**31, 7])),
            ])
    case.args.update(input=movable(g, case, shape), seq_lengths=fit(lengths, lt), seq_dim=seq_dim,
                     batch_dim=batch_dim)


def gen_slice(g, case):
    shape = g.shape(g.int(0, 4), hi=6)
    begin = [g.int(0, d) for d in shape]
    size = [g.pick([-1, g.int(0, d - b)]) for b, d in zip(begin, shape)]
    if g.adversary("slice"):
        kind = g.int(0, 4)
        if kind == 0 and shape:
            begin[0] = g.pick([-1, shape[0] + 1, 2**62, -(2**31)])
        elif kind == 1 and shape:
            size[0] = g.pick([-2, shape[0] + 1, 2**62, 10**16])
        elif kind == 2:
            size = size + [1]
        elif kind == 3 and shape:
            begin[0], size[0] = 2**63 - 2, 2**62
        else:
            shape = [0, 2**40]
            begin, size = [0, 0], [0, -1]
    dt = g.index_dtype(begin + size)
    case.args.update(input=movable(g, case, shape), begin=g.ivec(begin, dt), size=g.ivec(size, dt))


def gen_split(g, case):
    shape = g.shape(g.int(1, 4), hi=6)
    axis = g.int(0, len(shape) - 1)
    if case.op == "Split":
        n = g.pick([d for d in range(1, shape[axis] + 1) if shape[axis] % d == 0])
        if g.adversary("split"):
            kind = g.int(0, 2)
            if kind == 0:
                n = shape[axis] + 1 if shape[axis] > 1 else 3
            elif kind == 1:
                axis = g.bad_axis(len(shape))
            else:
                shape[axis] = 0
                n = g.int(1, 3)
        elif g.chance(0.3):
            axis -= len(shape)
        case.args.update(split_dim=np.array(axis, np.int32) if abs(axis) < 2**31 else np.array(0, np.int32),
                         value=movable(g, case, shape), num_split=n)
        return
    d = shape[axis]
    cuts = sorted(g.rng.integers(0, d + 1, size=g.int(0, 3)).tolist())
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [d])]
    if g.chance(0.3):
        sizes[g.int(0, len(sizes) - 1)] = -1
    n = len(sizes)
    if g.adversary("splitv"):
        kind = g.int(0, 5)
        if kind == 0:
            sizes = [-2, d + 2]
        elif kind == 1:
            sizes = [-1, -1] + sizes
        elif kind == 2:
            sizes = sizes + [1]
        elif kind == 3:
            sizes = [2**62, -(2**62) + d]
        elif kind == 4:
            axis = g.bad_axis(len(shape))
            if abs(axis) >= 2**31:
                axis = 100
        else:
            sizes = [d + 1]
        n = len(sizes) if g.chance(0.8) else len(sizes) + 1
    dt = g.index_dtype(sizes)
    case.args.update(value=movable(g, case, shape), size_splits=g.ivec(sizes, dt), split_dim=np.array(axis, np.int32),
                     num_split=max(n, 1))


def gen_transpose(g, case):
    shape = g.shape(g.int(0, 5), hi=5)
    perm = list(g.rng.permutation(len(shape)))
    if g.chance(0.1):
        shape = [3, 1, 0]
        perm = [2, 1, 0]
    if g.adversary("perm"):
        kind = g.int(0, 3)
        if kind == 0 and perm:
            perm[0] = g.pick([len(shape), -1, 2**31 - 1, -(2**31)])
        elif kind == 1 and len(perm) > 1:
            perm[1] = perm[0]
        elif kind == 2:
            perm = perm + [len(perm)]
        else:
            shape, perm = [1] * 9, list(range(8, -1, -1))
    perm = g.ivec(perm)
    if "Tperm" in case.row:
        perm = perm.astype(npdtype(case.row["Tperm"])) if np.all(np.abs(perm.astype(np.int64)) < 2**31) else perm
    case.args.update(x=movable(g, case, shape), perm=perm)


def gen_space_depth(g, case):
    block = g.int(2, 4)
    fmt = "NHWC" if g.chance(0.7) else "NCHW"
    if case.op == "SpaceToDepth":
        n, c, h, w = g.int(0, 3), g.int(1, 4), block * g.int(0, 3), block * g.int(1, 3)
    else:
        n, c, h, w = g.int(0, 3), block * block * g.int(1, 3), g.int(0, 3), g.int(1, 3)
    shape = [n, c, h, w] if fmt == "NCHW" else [n, h, w, c]
    if g.adversary("block/shape/format"):
        kind = g.int(0, 4)
        if kind == 0:
            block = g.pick([1, 0, -1, 2**31 - 1, 2**62])
        elif kind == 1:
            shape = [s + 1 for s in shape]  # not divisible
        elif kind == 2:
            shape = g.pick([shape[:3], shape + [1], [], [2**31, 2, 2, 4]])
        elif kind == 3:
            fmt = g.pick(BAD_ENUMS)
        else:
            shape, block = [1, 2**20, 2**20, 4] if fmt == "NHWC" else [1, 4, 2**20, 2**20], 2**20
    data = movable(g, case, shape) if np.prod(shape, dtype=np.float64) < 10**6 else np.zeros([1, 1, 1, 1], np.float32)
    case.args.update(input=data, block_size=block, data_format=fmt)


def gen_resize(g, case):
    """ResizeBilinear/Bicubic/NearestNeighbor and their gradients: up- and downsampling, odd factors, every
    mode; adversarially both modes at once, bad ranks and sizes, empty images, huge outputs."""
    T = case.row["T"]
    align, half = g.pick([(False, False), (True, False), (False, True)])
    n, h, w, c = g.int(0, 3), g.int(1, 9), g.int(1, 9), g.int(1, 4)
    size = [g.int(1, 12), g.int(1, 12)]
    if g.chance(0.1):
        h, w, size = g.int(1, 4), g.int(1, 4), [g.int(60, 200), g.int(1, 3)]
    if g.adversary("modes/shapes/size"):
        kind = g.int(0, 6)
        if kind == 0:
            align, half = True, True
        elif kind == 1:
            size = g.pick([[0, 3], [-1, 4], [3], [2, 2, 2], [2**31 - 1, 2**31 - 1]])
        elif kind == 2:
            h, w = g.pick([(0, 3), (3, 0), (2**24, 1)])
        elif kind == 3:
            c = 0
        elif kind == 4:
            n = 0
        else:
            size = [g.int(1, 3), g.int(1, 3)]
    image = [n, h, w, c]
    # Sizes with zeros counted as ones: NumPy refuses an empty array whose other dims overflow.
    small = np.prod([max(d, 1) for d in image], dtype=np.float64) < 10**6
    if case.op in ("ResizeBilinear", "ResizeBicubic", "ResizeNearestNeighbor"):
        data = g.data(T, image, scale=3.0) if small else np.zeros([1, 1, 1, 1], np.float32)
        case.args.update(images=data, size=np.array(size, np.int32))
    else:
        grads_shape = [n, *(size if len(size) == 2 else [2, 2]), c]
        ok = np.prod([max(d, 1) for d in grads_shape], dtype=np.float64) < 10**6 and min(grads_shape) >= 0
        grads_T = "float32" if case.op in ("ResizeBilinearGrad", "ResizeBicubicGrad") else T
        grads = g.data(grads_T, grads_shape, scale=1.0, specials=False) if ok else np.zeros([1, 2, 2, 1], np.float32)
        if case.op in ("ResizeBilinearGrad", "ResizeBicubicGrad"):
            original = g.data(T, image, scale=1.0) if small else np.zeros([1, 1, 1, 1], np.float32)
            case.args.update(grads=grads, original_image=original)
        else:
            case.args.update(grads=grads, size=np.array([h, w] if g.chance(0.8) else size, np.int32))
    case.args.update(align_corners=align, half_pixel_centers=half)


def gen_scale_and_translate(g, case):
    """ScaleAndTranslate and its gradient: every sampling kernel, antialiasing, scales and
    translations; adversarially zero, negative, NaN and huge scales, bad sizes and shapes, unknown
    kernels."""
    T = case.row["T"]
    n, h, w, c = g.int(0, 2), g.int(1, 7), g.int(1, 7), g.int(1, 3)
    size = [g.int(1, 9), g.int(1, 9)]
    scale = [float(g.pick([0.3, 0.5, 1.0, 1.7, 2.5, 4.0])) for _ in range(2)]
    translation = [float(g.pick([0.0, 0.5, -1.3, 2.0])) for _ in range(2)]
    kernel = g.pick(["lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic"])
    if g.adversary("transform"):
        kind = g.int(0, 4)
        if kind == 0:
            scale[g.int(0, 1)] = g.pick([0.0, -1.0, float("nan"), 1e-30, 1e30, float("inf")])
        elif kind == 1:
            translation[g.int(0, 1)] = g.pick([float("nan"), 1e30, -1e30, float("inf")])
        elif kind == 2:
            size = g.pick([[0, 3], [-1, 2], [3], [2**31 - 1, 1]])
        elif kind == 3:
            kernel = g.pick(["lanczos2", "BOX", ""])
        else:
            h = g.pick([0, 2**31])
        g.tag(f"transform{kind}")
    image = [n, h, w, c]
    small = np.prod([max(d, 1) for d in image], dtype=np.float64) < 10**5
    data = g.data(T, image, scale=3.0) if small else np.zeros([1, 1, 1, 1], np.dtype(T) if T != "bfloat16" else np.float32)
    transform = dict(scale=np.array(scale, np.float32), translation=np.array(translation, np.float32), kernel_type=kernel,
                     antialias=g.chance(0.5))
    if case.op == "ScaleAndTranslate":
        case.args.update(images=data, size=np.array(size, np.int32), **transform)
    else:
        grads_shape = [n, *(size if len(size) == 2 and min(size) >= 0 and max(size) < 64 else [2, 2]), c]
        case.args.update(grads=g.data("float32", grads_shape, scale=1.0, specials=False), original_image=data, **transform)


def gen_band_part(g, case):
    """MatrixBandPart: batches of matrices and bands; adversarially limits past the matrix, non-scalar
    limits, ranks below 2."""
    T = case.row["T"]
    it = npdtype(case.row["Tindex"])
    shape = g.shape(g.int(2, 4), lo=0 if g.chance(0.1) else 1, hi=7)
    lower, upper = g.int(-1, shape[-2]), g.int(-1, shape[-1])
    lower_arg, upper_arg = np.array(lower, it), np.array(upper, it)
    if g.adversary("band"):
        kind = g.int(0, 3)
        if kind == 0:
            lower_arg = np.array(shape[-2] + g.int(1, 5), it)
        elif kind == 1:
            upper_arg = np.array([upper], it)
        elif kind == 2:
            shape = shape[-1:]
        else:
            lower_arg = np.array(np.iinfo(it).min, it)
        g.tag(f"band{kind}")
    case.args.update(input=g.data(T, shape, scale=3.0), num_lower=lower_arg, num_upper=upper_arg)


def gen_scan(g, case):
    """Cumsum and Cumprod: any axis, exclusive, reverse; adversarially axes out of range, non-scalar
    axes, scalars, empty tensors and an axis past llvmpipe's loop limit."""
    T = case.row["T"]
    it = npdtype(case.row["Tidx"])
    shape = g.shape(g.int(1, 4), hi=6)
    if g.chance(0.03):
        shape = [g.int(1, 2), 65536 + g.int(0, 3000)]
    axis = g.int(-len(shape), len(shape) - 1)
    axis_arg = np.array(axis, it)
    if g.adversary("scan"):
        kind = g.int(0, 3)
        if kind == 0:
            axis_arg = np.array(g.pick([len(shape), -len(shape) - 1, np.iinfo(it).max, np.iinfo(it).min]), it)
        elif kind == 1:
            axis_arg = np.array([axis], it)
        elif kind == 2:
            shape = []
            axis_arg = np.array(0, it)
        else:
            shape[axis] = 0
        g.tag(f"scan{kind}")
    scale = 1.0 if case.op == "Cumsum" else 0.3
    x = g.data(T, shape, scale=scale)
    if case.op == "Cumprod":
        x = (x.astype(np.float32) * 0.1 + 1.0).astype(x.dtype) if prod(shape) > 1000 else x
    case.args.update(x=x, axis=axis_arg, exclusive=g.chance(0.5), reverse=g.chance(0.5))


def gen_mirror_pad_grad(g, case):
    """MirrorPadGrad: both modes, paddings up to and past their limits, negative paddings, bad
    shapes of `paddings`, ranks past 5, bad modes."""
    rank = g.int(0, 5)
    shape = [g.int(1, 5) for _ in range(rank)]
    mode = g.pick(["REFLECT", "SYMMETRIC"])
    limit = 1 if mode == "REFLECT" else 0
    pads = [[g.int(0, max(d - limit, 0) + 1) if g.chance(0.7) else 0 for _ in range(2)] for d in shape]
    pads = [[min(p, max(d - limit, 0)) for p in pair] for d, pair in zip(shape, pads)]
    padded = [d + sum(pair) for d, pair in zip(shape, pads)]
    ptype = g.pick([np.int32, np.int64])
    if g.adversary("paddings/mode/rank"):
        kind = g.int(0, 5)
        if kind == 0 and rank:
            pads[0][g.int(0, 1)] = g.pick([-1, shape[0], shape[0] + 1, 2**31 - 1])
        elif kind == 1:
            pads = g.pick([[[0, 0]] * (rank + 1), [[1]] * rank, []])
        elif kind == 2:
            mode = g.pick(BAD_ENUMS)
        elif kind == 3:
            padded, pads = [2] * 6, [[0, 0]] * 6
        else:
            padded = [0] + padded[1:] if rank else padded
    grad = g.data(case.row["T"], padded, scale=1.0, specials=False)
    case.args.update(input=grad, paddings=np.array(pads, ptype) if pads else np.zeros([0, 2], ptype), mode=mode)


def gen_space_batch(g, case):
    to_batch = case.op == "SpaceToBatchND"
    m = g.int(0, 3)
    block = [g.int(1, 3) for _ in range(m)]
    spatial = [g.int(0, 4) for _ in range(m)]
    pads = [[g.int(0, 2), g.int(0, 2)] for _ in range(m)]
    if to_batch:
        for k in range(m):  # padded sizes divisible by the block
            pads[k][1] += -(spatial[k] + sum(pads[k])) % block[k]
        batch = g.int(0, 3)
    else:
        for k in range(m):  # crops within the expanded size
            pads[k] = [min(p, spatial[k] * block[k] // 2) for p in pads[k]]
        batch = g.int(0, 2) * int(np.prod(block))
    shape = [batch] + spatial + [g.int(1, 3) for _ in range(g.int(0, 2))]
    if g.adversary("block/paddings/shape"):
        kind = g.int(0, 6)
        if kind == 0 and m:
            block[0] = g.pick([0, -1, 2**31 - 1, 2**62])
        elif kind == 1 and m:
            pads[0][g.int(0, 1)] = g.pick([-1, -(2**31), 2**62])
        elif kind == 2:
            pads = pads + [[0, 0]]
        elif kind == 3:
            shape = shape[:m]  # rank too small
        elif kind == 4 and m:
            shape[1] += 1  # not divisible (SpaceToBatch) / larger crop room
            shape[0] += 1  # batch not divisible (BatchToSpace)
        elif kind == 5:
            m = 5
            block, pads, shape = [2] * m, [[0, 0]] * m, [1] + [2] * m
        else:
            block, pads, shape = [2**31, 2**31], [[0, 0], [0, 0]], [1, 2, 2]
    bt = np.dtype(case.row.get("Tblock_shape", "int32"))
    pt = np.dtype(case.row.get("Tpaddings") or case.row.get("Tcrops") or "int32")
    if any(not (-(2**31) <= v < 2**31) for v in block):
        bt = np.dtype(np.int64)
    if any(not (-(2**31) <= v < 2**31) for p in pads for v in p):
        pt = np.dtype(np.int64)
    case.args.update(input=movable(g, case, shape), block_shape=np.array(block, bt).reshape(-1),
                     **{"paddings" if to_batch else "crops": np.array(pads, pt).reshape(-1, 2)})


def gen_tile(g, case):
    shape = g.shape(g.int(0, 4), hi=4)
    mult = [g.int(0 if g.chance(0.1) else 1, 3) for _ in shape]
    if g.adversary("multiples"):
        kind = g.int(0, 4)
        if kind == 0 and mult:
            mult[0] = -1
        elif kind == 1:
            shape, mult = [2, 3, 1], [10**16, 10**8, 1]
        elif kind == 2:
            mult = mult + [2]
        elif kind == 3:
            shape, mult = [1, 1], [2**31, 2**31]
        else:
            shape, mult = [0, 3], [2**62, 2]
    case.args.update(input=movable(g, case, shape), multiples=g.ivec(mult))


def gen_pad(g, case):
    shape = g.shape(g.int(0, 4), hi=5)
    mirror = case.op == "MirrorPad"
    mode = g.pick(["REFLECT", "SYMMETRIC"])
    pads = []
    for d in shape:
        hi = (d - 1 if mode == "REFLECT" else d) if mirror else 3
        pads.append([g.int(0, max(hi, 0)), g.int(0, max(hi, 0))])
    pshape = None
    if g.adversary("paddings"):
        kind = g.int(0, 5)
        if kind == 0 and pads:
            pads[0][g.int(0, 1)] = g.pick([-1, -3, -(2**31)])
        elif kind == 1 and pads:
            pads[-1][1] = g.pick([2**40, 2**31 - 1, 10**16, 10**9])
        elif kind == 2:
            pads = pads + [[1, 1]]
        elif kind == 3:
            pshape = [len(pads), 3] if pads else [1, 3]
        elif kind == 4 and mirror and pads:
            pads[0][0] = shape[0] + (0 if mode == "REFLECT" else 1)  # too wide to mirror
        else:
            if mirror:
                mode = g.pick(["WRAP", "CONSTANT", "BOGUS", "reflect"])
            else:
                shape, pads = [0, 2**40], [[0, 0], [1, 1]]
    p = g.ivec(sum(pads, []))
    p = p.reshape(pshape if pshape and p.size == 0 else (-1, 2)) if pshape is None else np.zeros(pshape, p.dtype)
    case.args.update(input=movable(g, case, shape), paddings=p)
    if case.op == "PadV2":
        case.args["constant_values"] = movable(g, case, [] if not g.adversary("constant", 0.2) else [2])
    if mirror:
        case.args["mode"] = mode


def gen_reverse(g, case):
    shape = g.shape(g.int(0, 5), hi=5)
    axes = [a for a in range(len(shape)) if g.chance(0.5)]
    axes = [a - len(shape) if g.chance(0.3) else a for a in axes]
    if g.adversary("axes"):
        kind = g.int(0, 2)
        if kind == 0:
            axes = axes + [g.bad_axis(len(shape))]
        elif kind == 1 and shape:
            axes = [0, -len(shape)]
        else:
            axes = [[0, 1]]
    if case.op == "Reverse":
        dims = [a % len(shape) in [b % len(shape) for b in axes if isinstance(b, (int, np.integer))]
                for a in range(len(shape))] if shape else []
        if g.adversary("dims"):
            dims = g.pick([dims + [True], dims[:-1], [[True]], []])
        case.args.update(tensor=movable(g, case, shape), dims=np.array(dims, bool))
        return
    case.args.update(tensor=movable(g, case, shape), axis=np.array(axes, g.index_dtype(np.ravel(axes))))


def gen_cross(g, case):
    shape = g.shape(g.int(0, 3), hi=5) + [3]
    other = list(shape)
    if g.adversary("shapes"):
        shape, other = g.pick([(shape[:-1] + [4], other[:-1] + [4]), (shape, other + [1]), ([], [])])
    case.args.update(a=g.data(case.row["T"], shape), b=g.data(case.row["T"], other))


def gen_roll(g, case):
    shape = g.shape(g.int(1, 4), hi=6)
    k = g.int(0, 3)
    shift = [g.int(-20, 20) for _ in range(k)]
    axis = [g.int(-len(shape), len(shape) - 1) for _ in range(k)]
    if g.adversary("axes"):
        kind = g.int(0, 3)
        if kind == 0:
            axis = axis + [len(shape)]
            shift = shift + [1]
        elif kind == 1:
            shift = shift + [1]
        elif kind == 2:
            shape = []
        else:
            shift, axis = [[1, 2]], [[0, 0]]
    st, at = npdtype(case.row["Tshift"]), npdtype(case.row["Taxis"])
    case.args.update(input=movable(g, case, shape), shift=np.array(shift, st), axis=np.array(axis, at))


def gen_broadcast_to(g, case):
    out = g.shape(g.int(0, 4), hi=5)
    inp = [d if g.chance(0.6) else 1 for d in out]
    inp = inp[g.int(0, len(inp)):] if inp and g.chance(0.3) else inp
    if g.adversary("shape"):
        kind = g.int(0, 4)
        if kind == 0 and out:
            out[0] = -1
        elif kind == 1:
            inp, out = [3], [4]
        elif kind == 2:
            inp, out = [2, 3], [3]
        elif kind == 3:
            inp, out = [1], [2**40, 2**40]
        else:
            inp, out = [1, 1], [0, 2**62]
    case.args.update(input=movable(g, case, inp), shape=g.ivec(out))


def gen_fill(g, case):
    dims = g.shape(g.int(0, 3), lo=0)
    value_shape = []
    if g.adversary("dims"):
        kind = g.int(0, 3)
        if kind == 0:
            dims = [3, -1]
        elif kind == 1:
            dims = g.pick([[10**16], [2**31, 2**31], [2**40, 0], [2**62, 2**62]])
        elif kind == 2:
            value_shape = [2]
        else:
            dims = [[2, 3]]
    case.args.update(dims=np.array(dims, g.index_dtype(np.ravel(dims))), value=movable(g, case, value_shape))


def gen_concat(g, case):
    shape = g.shape(g.int(1, 4), hi=5)
    axis = g.int(0, len(shape) - 1)
    n = g.int(1, 4)
    shapes = []
    for _ in range(n):
        s = list(shape)
        s[axis] = g.int(0, 4)
        shapes.append(s)
    if g.chance(0.3):
        axis -= len(shape)
    if g.adversary("concat"):
        kind = g.int(0, 3)
        if kind == 0:
            axis = g.bad_axis(len(shape))
            axis = axis if abs(axis) < 2**31 else len(shape)
        elif kind == 1 and len(shape) > 1:
            shapes[-1] = list(shapes[-1])
            shapes[-1][(axis + 1) % len(shape)] += 1
        elif kind == 2:
            shapes[-1] = shapes[-1] + [1]
        else:
            shapes = [[0] * len(shape)] + shapes
    dt = g.index_dtype([axis])
    if case.op == "Concat":
        case.args.update(concat_dim=np.array(axis, np.int32 if abs(axis) < 2**31 else np.int64),
                         values=[movable(g, case, s) for s in shapes])
        return
    case.args.update(values=[movable(g, case, s) for s in shapes], axis=np.array(axis, dt))


def gen_pack(g, case):
    shape = g.shape(g.int(0, 4), hi=5)
    n = g.int(1, 4)
    axis = g.int(-len(shape) - 1, len(shape))
    shapes = [shape] * n
    if g.adversary("pack"):
        kind = g.int(0, 2)
        if kind == 0:
            axis = g.pick([len(shape) + 1, -len(shape) - 2, 100])
        elif kind == 1:
            shapes = shapes[:-1] + [shape + [1]]
        else:
            shapes = [[0] + shape] * n
    case.args.update(values=[movable(g, case, s) for s in shapes], axis=axis)


def gen_unpack(g, case):
    shape = g.shape(g.int(1, 4), hi=5)
    axis = g.int(-len(shape), len(shape) - 1)
    num = shape[axis]
    if g.adversary("unpack"):
        kind = g.int(0, 2)
        if kind == 0:
            num += 1
        elif kind == 1:
            axis = g.pick([len(shape), -len(shape) - 1, 100])
        else:
            shape[axis] = 0
            num = 0
    case.args.update(value=movable(g, case, shape), num=num, axis=axis)


def gather_inputs(g, case):
    """params shape, indices, axis, batch_dims for GatherV2 and ResourceGather."""
    shape = g.shape(g.int(1, 4), hi=5)
    resource = case.op == "ResourceGather"
    bd = 0
    if len(shape) > 1 and g.chance(0.2):
        bd = 1
    axis = 0 if resource else g.int(bd, len(shape) - 1)
    if resource and bd:
        axis = bd
    ishape = shape[:bd] + g.shape(g.int(0, 2), hi=4)
    idx = g.rng.integers(0, max(shape[axis], 1), size=ishape) if shape[axis] else np.zeros(ishape, np.int64)
    if g.adversary("gather"):
        kind = g.int(0, 5)
        if kind <= 1 and idx.size:
            idx.reshape(-1)[g.int(0, idx.size - 1)] = g.pick([shape[axis], -1, 2**31 - 1, -(2**31), 1000])
        elif kind == 2 and not resource:
            axis = g.bad_axis(len(shape))
            axis = axis if abs(axis) < 2**31 else 100
        elif kind == 3:
            bd = g.pick([-1, len(shape) + 1, len(ishape) + 1, -100])
        elif kind == 4:
            shape[axis] = 0
            idx = np.zeros(ishape, np.int64) + (0 if g.chance(0.5) else 1)
        else:
            idx = np.zeros([0, 3], np.int64)
    elif g.chance(0.1) and not resource and axis:
        axis -= len(shape)
    return shape, idx, axis, bd


def gen_gather(g, case):
    it = npdtype(case.row["Tindices"])
    shape, idx, axis, bd = gather_inputs(g, case)
    if case.op == "Gather":
        case.args.update(params=movable(g, case, shape), indices=idx.astype(it))
        if g.chance(0.2):
            case.args["validate_indices"] = g.chance(0.5)
        return
    case.args.update(params=movable(g, case, shape), indices=idx.astype(it), axis=np.array(axis, g.index_dtype([axis])))
    if bd or g.chance(0.2):
        case.args["batch_dims"] = bd


def gather_nd_inputs(g, case):
    """params shape, index tuples and bad_indices_policy (or None) for GatherNd and ResourceGatherNd."""
    shape = g.shape(g.int(1, 4), hi=5)
    k = g.int(0, len(shape))
    ishape = g.shape(g.int(0, 2), hi=4)
    idx = np.stack([g.rng.integers(0, shape[j], size=ishape) for j in range(k)], axis=-1) if k else \
        np.zeros(ishape + [0], np.int64)
    policy = g.pick(["", "DEFAULT", "IGNORE", "ERROR"]) if case.op == "GatherNd" and g.chance(0.15) else None
    if g.adversary("gather"):
        kind = g.int(0, 5)
        if kind <= 1 and idx.size:
            p = g.int(0, idx.size - 1)
            idx.reshape(-1)[p] = g.pick([shape[p % k], -1, 2**31 - 1, -(2**31), 1000])  # out of range
        elif kind == 2:
            idx = np.zeros(ishape + [len(shape) + 1], np.int64)  # deeper than params
        elif kind == 3:
            shape[g.int(0, len(shape) - 1)] = 0
        elif kind == 4:
            shape, idx = g.pick([([], np.zeros([2, 0], np.int64)), ([1] * 8, np.zeros([2, 8], np.int64)),
                                 (shape, np.array(0))])  # scalar params, depth 8, scalar indices
        elif case.op == "GatherNd":
            policy = g.pick(["BOGUS", "ERROR"])
    return shape, idx, policy


def gen_gather_nd(g, case):
    shape, idx, policy = gather_nd_inputs(g, case)
    case.args.update(params=movable(g, case, shape), indices=idx.astype(npdtype(case.row["Tindices"])))
    if policy is not None:
        case.args["bad_indices_policy"] = policy


# --- recurrent layers (CudnnRNN*) ----------------------------------------------------------------
#
# TF-CPU has no kernel for these ops. A case runs in mode "rnn" (`execute_rnn`): a backprop case
# first runs the forward op of its version on the same device (is_training) and feeds it the
# output, output_h, output_c, reserve_space and host_reserved that made, unless a mutation replaced
# one. The verdict (`rnn_verdict`) compares with cuDNN's semantics computed by
# test_rnn_ops.reference in plain TF ops on /CPU:0 (the gradients through tf.GradientTape).

RNN_OPS = {"CudnnRNN", "CudnnRNNV2", "CudnnRNNV3", "CudnnRNNBackprop", "CudnnRNNBackpropV2", "CudnnRNNBackpropV3"}
RNN_MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
# Backprop inputs the forward run makes: the value "forward" (or another RESERVE_KINDS word for
# reserve_space) in case.args; an array replaces it. Args named forward_X override X for the
# forward run only.
RNN_FROM_FORWARD = ("output", "output_h", "output_c", "reserve_space", "host_reserved")
RESERVE_KINDS = ["truncated", "extended", "empty", "zeros", "random"]
RNN_DOCUMENTED = "cuDNN RNN semantics: test_rnn_ops.reference in plain TF ops"


def rnn_version(op):
    return op[-2:] if op[-2:] in ("V2", "V3") else "V1"


def rnn_forward_op(op):
    return {"V1": "CudnnRNN", "V2": "CudnnRNNV2", "V3": "CudnnRNNV3"}[rnn_version(op)]


def wrapped_i64(v):
    """`v` as a 64-bit signed product that wrapped around."""
    return (int(v) + 2**63) % 2**64 - 2**63


def gen_rnn(g, case):
    from test_rnn_ops import params_size

    op, dtype = case.op, case.row["T"]
    dt = npdtype(dtype)
    v3, backprop = rnn_version(op) == "V3", "Backprop" in op
    case.mode = "rnn"
    mode, dirs, layers = g.pick(RNN_MODES), g.pick([1, 2]), g.pick([1, 1, 2, 2, 3])
    steps, batch, units = g.pick([0, 1, 2, 3, 4, 5]), g.pick([0, 1, 2, 3, 4]), g.int(1, 5)
    input_mode = g.pick(["linear_input", "linear_input", "skip_input", "auto_select"])
    input_size = units if input_mode == "skip_input" or g.chance(0.3) else g.int(1, 5)
    time_major = g.chance(0.5) if v3 else True
    lstm = mode == "lstm"

    def seq(t, b, f):
        return [t, b, f] if time_major else [b, t, f]

    def state(ld, b, u):
        return [ld, b, u] if time_major else [b, ld, u]

    skip = input_mode == "skip_input" or (input_mode == "auto_select" and input_size == units)
    hs, out_shape = state(layers * dirs, batch, units), seq(steps, batch, dirs * units)
    x = g.data(dtype, seq(steps, batch, input_size), specials=False, scale=1.0)
    h = g.data(dtype, hs, specials=False, scale=0.5)
    # without a cell state: a scalar (as Keras passes), an empty vector, or a state-shaped tensor
    c = g.data(dtype, hs, specials=False, scale=0.5) if lstm else g.pick([np.zeros((), dt), np.zeros(0, dt), h])
    n = params_size(mode, input_size, units, layers, dirs, skip)
    args = dict(input=x, input_h=h, input_c=c, params=g.data(dtype, [n], specials=False, scale=0.4))
    if v3:
        lengths = g.rng.integers(0, steps + 1, size=batch)
        if batch >= 2 and g.chance(0.5):
            lengths[0], lengths[-1] = 0, steps
        elif g.chance(0.3):
            lengths[:] = steps
        args["sequence_lengths"] = lengths.astype(np.int32)
    training = backprop or g.chance(0.7)
    if backprop:
        args.update(output="forward", output_h="forward", output_c="forward",
                    output_backprop=g.data(dtype, out_shape, specials=False, scale=1.0),
                    output_h_backprop=g.data(dtype, hs, specials=False, scale=1.0),
                    output_c_backprop=g.data(dtype, hs if lstm else [], specials=False, scale=1.0),
                    reserve_space="forward")
        if rnn_version(op) != "V1":
            args["host_reserved"] = "forward"
    args.update(rnn_mode=mode, input_mode=input_mode, direction="bidirectional" if dirs == 2 else "unidirectional")
    if not backprop:
        args["is_training"] = training
    # Dropout only where cuDNN leaves it out: one layer, or inference.
    args["dropout"] = g.pick([0.0, 0.0, 0.5]) if layers == 1 or not training else 0.0
    if args["dropout"] or g.chance(0.2):
        args["seed"], args["seed2"] = g.int(0, 99), g.int(0, 99)
    if v3:
        args["time_major"] = time_major
        if g.chance(0.2):
            args["num_proj"] = 0
    if g.adv:
        kinds = ["params", "state", "input", "enum", "dropout", "nonfinite", "huge"] + (["lengths", "num_proj"] if v3 else [])
        if backprop:
            kinds += ["grad_shapes", "outputs", "reserve", "forward"] + (["host_reserved"] if rnn_version(op) != "V1" else [])
        kind = g.pick(kinds)
        g.tag(f"rnn:{kind}")
        rnn_mutation(g, args, kind, dict(seq=seq, state=state, layers=layers, dirs=dirs,
                                                lstm=lstm, v3=v3, steps=steps, batch=batch, units=units,
                                                input_size=input_size, dtype=dtype))
    case.args = args
    case.outputs = None if backprop else 3  # reserve_space and host_reserved are the plugin's own


def rnn_mutation(g, args, kind, m):
    """Applies adversarial mutation `kind` to the arguments of a CudnnRNN* case (`m`: its model)."""
    from test_rnn_ops import params_size

    dt = npdtype(m["dtype"])
    p, x, h = args["params"], args["input"], args["input_h"]
    if kind == "params":
        args["params"] = g.pick([p[:-1] if p.size else np.zeros(1, dt), np.concatenate([p, np.zeros(1, dt)]),
                                 np.zeros(0, dt), p.reshape(1, -1), np.stack([p, p])])
    elif kind == "lengths":
        lengths = args["sequence_lengths"]
        choice = g.int(0, 3)
        if choice == 0 and lengths.size:
            lengths = lengths.copy()
            lengths[g.int(0, lengths.size - 1)] = g.pick([m["steps"] + 1, -1, 2**31 - 1, -(2**31)])
        elif choice == 1:
            lengths = np.concatenate([lengths, [1]]).astype(np.int32)
        elif choice == 2:
            lengths = lengths[:-1]
        else:
            lengths = g.pick([lengths.reshape(1, -1), np.array(1, np.int32)])
        args["sequence_lengths"] = lengths
    elif kind == "state":
        choice = g.int(0, 5)
        if choice == 0:  # another batch size
            axis = 1 if args.get("time_major", True) else 0
            args["input_h"] = h = np.zeros([d + 1 if i == axis else d for i, d in enumerate(h.shape)], dt)
            if m["lstm"]:
                args["input_c"] = h
        elif choice == 1:  # more units in input_c than in input_h
            args["input_c"] = np.concatenate([args["input_c"], args["input_c"][..., :1]], axis=-1) \
                if np.ndim(args["input_c"]) == 3 else np.zeros(h.shape[:2] + (h.shape[2] + 1,), dt)
        elif choice == 2:  # layers x directions that do not divide, or no layer at all
            rows = g.pick([3, 0]) if m["dirs"] == 2 else 0
            shape = list(h.shape)
            shape[0 if args.get("time_major", True) else 1] = rows
            args["input_h"] = np.zeros(shape, dt)
            if m["lstm"]:
                args["input_c"] = args["input_h"]
        elif choice == 3:  # rank 2 or 4
            args["input_h"] = g.pick([h[0] if h.shape[0] else h.reshape(-1, h.shape[-1]), h[None]])
        elif choice == 4:  # the other layout
            args["input_h"] = h.transpose(1, 0, 2).copy()
            if m["lstm"]:
                args["input_c"] = args["input_h"]
        else:  # fewer units: params no longer match either
            args["input_h"] = h[..., :-1]
    elif kind == "input":
        choice = g.int(0, 2)
        if choice == 0:
            args["input"] = g.pick([x.reshape(x.shape[0], x.shape[1] * x.shape[2]), x[None]])
        elif choice == 1:  # another input size: params of the wrong length
            args["input"] = np.concatenate([x, x[..., :1]], axis=-1)
        else:  # skip_input with input size != units
            args["input_mode"] = "skip_input"
            args["input"] = np.zeros(x.shape[:2] + (m["units"] + 1,), dt)
    elif kind == "enum":
        args[g.pick(["rnn_mode", "input_mode", "direction"])] = g.pick(BAD_ENUMS + ["LSTM", "bidirectional ", "rnn"])
    elif kind == "dropout":
        args["dropout"] = g.pick([0.5, float("nan"), -1.0, 1.0, 1e30, float("inf")])
        args["seed"], args["seed2"] = g.int(-5, 5), g.pick([0, 2**40, -(2**40)])
    elif kind == "num_proj":
        args["num_proj"] = g.pick([1, m["units"], -1, 2**31 - 1])
    elif kind == "nonfinite":
        name = g.pick(["input", "input_h", "params"] + (["output_backprop"] if "output_backprop" in args else []))
        v = args[name].copy()
        if v.size:
            v.reshape(-1)[g.rng.choice(v.size, min(v.size, g.int(1, 3)), replace=False)] = g.pick(
                [np.nan, np.inf, -np.inf])
        args[name] = v
    elif kind == "huge":
        # Zero-element tensors with a huge dimension: a huge batch (V1/V2 make one sequence length
        # per row), huge steps, or a huge input size or unit count whose params size overflows 64 bits.
        seq, state, dirs, layers = m["seq"], m["state"], m["dirs"], m["layers"]
        choice = g.int(0, 2)
        if choice == 0:
            big = g.pick([2**40, 2**50])
            args.update(input=np.zeros(seq(g.pick([0, 1, 3]), big, 0), dt), input_h=np.zeros(state(layers * dirs, big, 0), dt),
                        params=np.zeros(0, dt))
            if "sequence_lengths" in args:
                args["sequence_lengths"] = np.zeros(0, np.int32)
        elif choice == 1:
            args.update(input=np.zeros(seq(g.pick([2**31, 2**40]), 0, m["input_size"]), dt),
                        input_h=np.zeros(state(layers * dirs, 0, m["units"]), dt))
            if "sequence_lengths" in args:
                args["sequence_lengths"] = np.zeros(0, np.int32)
        else:
            mode = args["rnn_mode"] if args["rnn_mode"] in RNN_MODES else "lstm"
            if g.chance(0.5):  # input size, one row, no steps
                big = {2: 2**61, 4: 2**60, 8: 2**59}[dt.itemsize]  # numpy's bytes stay below 2^63
                args.update(input=np.zeros(seq(0, 1, big), dt), input_mode="linear_input",
                            input_h=g.data(m["dtype"], state(layers * dirs, 1, m["units"]), specials=False))
                true = params_size(mode, big, m["units"], layers, dirs, False)
                if "sequence_lengths" in args:
                    args["sequence_lengths"] = np.zeros(1, np.int32)
            else:  # units (2^32: units x units wraps around), no rows
                big = 2**32
                args.update(input=np.zeros(seq(m["steps"], 0, m["input_size"]), dt),
                            input_h=np.zeros(state(layers * dirs, 0, big), dt))
                true = params_size(mode, m["input_size"], big, layers, dirs, args["input_mode"] == "skip_input")
                if "sequence_lengths" in args:
                    args["sequence_lengths"] = np.zeros(0, np.int32)
            wrapped = wrapped_i64(true)
            args["params"] = np.zeros(wrapped if 0 <= wrapped <= 10**5 else g.int(0, 4), dt)
        if m["lstm"]:
            args["input_c"] = args["input_h"]
        for name in ("output_backprop", "output_h_backprop", "output_c_backprop"):
            if name in args:  # whatever shape these should now have: zero elements
                args[name] = np.zeros((0,), dt)
    elif kind == "grad_shapes":
        name = g.pick(["output_backprop", "output_h_backprop"] + (["output_c_backprop"] if m["lstm"] else []))
        v = args[name]
        args[name] = g.pick([v[None], v[..., :-1] if v.ndim else v.reshape(1), np.concatenate([v, v], axis=0) if v.ndim else v[None],
                             v.reshape(-1)])
    elif kind == "outputs":  # the forward outputs the backprop takes, of the wrong shape
        name = g.pick(["output", "output_h"] + (["output_c"] if m["lstm"] else []))
        shape = m["seq"](m["steps"], m["batch"], m["dirs"] * m["units"]) if name == "output" else list(h.shape)
        shape = g.pick([shape + [1], shape[:-1], [d + 1 for d in shape]])
        args[name] = g.data(m["dtype"], shape, specials=False)
    elif kind == "reserve":
        args["reserve_space"] = g.pick(RESERVE_KINDS)
    elif kind == "host_reserved":
        args["host_reserved"] = g.pick([np.zeros(0, np.int8), np.array([7, -3, 5], np.int8), np.array(1, np.int8)])
    elif kind == "forward":  # a reserve space from another forward pass
        choice = g.int(0, 2)
        if choice == 0:
            other = {"lstm": "gru", "gru": "lstm", "rnn_tanh": "rnn_relu", "rnn_relu": "rnn_tanh"}[args["rnn_mode"]]
            args["forward_rnn_mode"] = other
            if other == "lstm" or args["rnn_mode"] == "lstm":  # lstm and gru differ in params and states
                args["forward_input_c"] = h
        elif choice == 1 and m["v3"] and m["batch"]:
            args["forward_sequence_lengths"] = np.full(m["batch"], m["steps"], np.int32) - args["sequence_lengths"]
        else:
            args["forward_is_training"] = False


# --- variables ---------------------------------------------------------------------------------

def gen_variable(g, case):
    import tensorflow as tf

    case.mode = "function" if g.chance(0.7) else "eager"
    dtype = case.row.get("dtype") or case.row["T"]
    if case.op == "ResourceGather":
        it = npdtype(case.row["Tindices"])
        shape, idx, axis, bd = gather_inputs(g, case)
        case.variables["resource"] = movable(g, case, shape)
        case.args.update(indices=idx.astype(it), dtype=tf.as_dtype(dtype))
        if bd or g.chance(0.2):
            case.args["batch_dims"] = bd
        return
    if case.op == "ResourceGatherNd":
        shape, idx, _ = gather_nd_inputs(g, case)
        case.variables["resource"] = movable(g, case, shape)
        case.args.update(indices=idx.astype(npdtype(case.row["Tindices"])), dtype=tf.as_dtype(dtype))
        return
    if case.op in RESOURCE_SCATTERS_ND:  # TensorScatter*'s inputs, the tensor a variable
        gen_scatter(g, case)
        case.variables["ref"] = case.args.pop("tensor")
        return
    if case.op in RESOURCE_SCATTERS:
        it = npdtype(case.row["Tindices"])
        rows, tail = g.int(1, 6), g.shape(g.int(0, 2))
        case.variables["resource"] = g.data(dtype, [rows] + tail, scale=3.0)
        ishape = g.shape(g.int(0, 2))
        indices = g.rng.integers(0, rows, ishape)
        ushape = ishape + tail
        if g.adversary("scatter"):
            kind = g.int(0, 3)
            if kind == 0 and indices.size:
                indices.reshape(-1)[0] = g.pick([rows, -1, 2**31 - 1, rows + 7])
            elif kind == 1:
                ushape = []  # a scalar update for every named row
            elif kind == 2:
                ushape = ishape + tail + [2]
            else:
                ushape = g.pick([[0], [3, 1, 1], ishape])
        case.args["indices"] = np.asarray(indices).astype(it)
        case.args["updates"] = g.data(dtype, ushape)
        if case.op in ASSIGNING:
            case.args["updates"] = same_updates_for_repeats(indices, case.args["updates"], tuples=False)
        return
    shape = g.shape(g.int(0, 3))
    if case.op in ("AssignAddVariableOp", "AssignSubVariableOp"):
        init = g.data(dtype, shape, scale=3.0)
        vshape = shape
        if g.adversary("shape"):
            vshape = g.pick([shape + [2], [0], [], [3, 1, 1]])
            if vshape == shape:
                vshape = shape + [1]
        case.variables["resource"] = init
        case.args["value"] = g.data(dtype, vshape)
        return
    var_names, arg_names = OPTIMIZERS[case.op]
    sparse = "Sparse" in case.op
    if sparse:  # unique rows in any order (with repeated ones TF-GPU's answer has no order)
        shape = shape or [g.int(1, 5)]
        indices = g.rng.permutation(shape[0])[:g.int(0, shape[0])].astype(npdtype(case.row["Tindices"]))
    grad_shape = [len(indices)] + shape[1:] if sparse else shape
    for n in var_names:
        v = g.data(dtype, shape, scale=1.0)
        if n in ("v", "ms", "accum", "accum_update", "gradient_squared_accumulator"):  # sums of squares: >= 0
            plus = 0.1 if "Adagrad" in case.op or "Ftrl" in case.op else 0.0
            v = np.asarray((np.abs(v.astype(np.float32)) + plus).astype(v.dtype))
        if n == "ms" and "mg" in case.variables:  # CenteredRMSProp: ms - mg^2 is a variance
            v = np.asarray((v.astype(np.float32) + np.square(case.variables["mg"].astype(np.float32))).astype(v.dtype))
        case.variables[n] = v
    for n in arg_names:
        if n in OPT_SCALARS:
            case.args[n] = g.scalar(np.int64 if n == "global_step" else dtype, OPT_SCALARS[n])
        elif n == "indices":
            case.args[n] = indices
        else:
            case.args[n] = g.data(dtype, grad_shape, scale=1.0)
    if g.adversary("optimizer"):
        kind = g.int(0, 4 if sparse else 3)
        if kind == 4:
            sub = g.int(0, 2)
            if sub == 0 and indices.size:  # out of range: TF-GPU skips the row
                bad = indices.copy()
                bad[g.int(0, bad.size - 1)] = g.pick([shape[0], -1, shape[0] + 7, 2**31 - 1])
                case.args["indices"] = bad
            elif sub == 1:
                case.args["indices"] = indices.reshape(1, -1)
            else:
                case.args["grad"] = g.data(dtype, [len(indices) + 1] + shape[1:])
        elif kind == 0:
            name = g.pick([n for n in arg_names if n not in OPT_SCALARS and n != "indices"])
            case.args[name] = g.data(dtype, grad_shape + [2])
        elif kind == 1:
            name = g.pick([n for n in arg_names if n in OPT_SCALARS and n != "global_step"])
            case.args[name] = g.data(dtype, [3])
        elif kind == 2 and len(var_names) > 1:
            case.variables[var_names[-1]] = g.data(dtype, shape + [1])
        else:
            name = g.pick([n for n in arg_names if n in OPT_SCALARS and n != "global_step"])
            case.args[name] = g.scalar(dtype, g.pick([np.nan, np.inf, -1.0, 0.0]))
    flag = OPTIMIZER_FLAGS.get(case.op.replace("ResourceSparseApply", "").replace("ResourceApply", ""))
    if flag:
        case.args[flag] = g.chance(0.8) if flag == "update_slots" else g.chance(0.5)


GENERATORS = {}
for _op in UNARY:
    GENERATORS[_op] = gen_unary
for _op in BINARY | set(GRADS):
    GENERATORS[_op] = gen_binary
GENERATORS.update({
    "Select": gen_select, "SelectV2": gen_select, "Cast": gen_cast, "BiasAdd": gen_bias_add, "BiasAddGrad": gen_bias_add,
    "ApproximateEqual": gen_approximate_equal, "BiasAddV1": gen_bias_add,
    **{op: gen_sort for op in ("TopKV2", "InTopKV2", "InTopK", "LowerBound", "UpperBound", "Bucketize")},
    **{op: gen_diag for op in DIAG_OPS}, "Reverse": gen_reverse, "Concat": gen_concat, "Gather": gen_gather,
    "ConjugateTranspose": gen_transpose, "ScatterNdNonAliasingAdd": gen_scatter, "Roll": gen_roll, "Cross": gen_cross,
    "AddN": gen_add_n, "ClipByValue": gen_clip, "L2Loss": gen_l2loss, "Softmax": gen_softmax, "LogSoftmax": gen_softmax,
    "SoftmaxCrossEntropyWithLogits": gen_xent, "SparseSoftmaxCrossEntropyWithLogits": gen_xent,
    "MatMul": gen_matmul, "BatchMatMulV2": gen_matmul, "BatchMatMulV3": gen_matmul, "_FusedMatMul": gen_matmul,
    "Einsum": gen_einsum, "ArgMax": gen_arg, "ArgMin": gen_arg,
    "Conv2D": gen_conv, "DepthwiseConv2dNative": gen_conv, "_FusedConv2D": gen_conv,
    "Conv2DBackpropInput": gen_conv_grad, "Conv2DBackpropFilter": gen_conv_grad,
    "DepthwiseConv2dNativeBackpropInput": gen_conv_grad, "DepthwiseConv2dNativeBackpropFilter": gen_conv_grad,
    "MaxPool": gen_pool, "AvgPool": gen_pool, "MaxPoolGrad": gen_pool_grad, "AvgPoolGrad": gen_pool_grad,
    "MaxPoolV2": gen_pool, "MaxPoolGradV2": gen_pool_grad, "Conv2DBackpropInputV2": gen_conv_grad,
    **{op: gen_volume for op in ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3D", "AvgPool3D",
                                 "MaxPool3DGrad", "AvgPool3DGrad", "MaxPool3DGradGrad")},
    "Conv": gen_generic_conv,
    "MaxPoolWithArgmax": gen_pool, "MaxPoolGradWithArgmax": gen_pool_grad, "MaxPoolGradGrad": gen_pool_grad,
    "MaxPoolGradGradV2": gen_pool_grad,
    **{op: gen_batch_norm for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
                                     "FusedBatchNormGradV2", "FusedBatchNormGradV3")},
    "Where": gen_where,
    "Unique": gen_unique,
    "UniqueWithCounts": gen_unique,
    "ListDiff": gen_unique,
    "Bincount": gen_bincount,
    "DenseBincount": gen_bincount,
    "StatelessRandomGetKeyCounter": gen_random, "StatelessRandomUniformV2": gen_random,
    "StatelessRandomNormalV2": gen_random, "StatelessTruncatedNormalV2": gen_random,
    **{op: gen_random for op in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
                                 "StatelessRandomUniformInt", "StatelessRandomUniformFullInt",
                                 "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2",
                                 "StatelessRandomGetAlg", "StatelessRandomGetKeyCounterAlg", "RandomUniform",
                                 "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt")},
    "ScatterNd": gen_scatter, "GatherNd": gen_gather_nd, "ResourceGatherNd": gen_variable,
    "OneHot": gen_one_hot, "Range": gen_range, "StridedSlice": gen_strided_slice, "Slice": gen_slice,
    "Split": gen_split, "SplitV": gen_split, "Transpose": gen_transpose, "Tile": gen_tile,
    "SpaceToDepth": gen_space_depth, "DepthToSpace": gen_space_depth,
    "SpaceToBatchND": gen_space_batch, "BatchToSpaceND": gen_space_batch, "Pad": gen_pad,
    "PadV2": gen_pad, "MirrorPad": gen_pad, "ReverseV2": gen_reverse, "BroadcastTo": gen_broadcast_to,
    "Fill": gen_fill, "ConcatV2": gen_concat, "Pack": gen_pack, "Unpack": gen_unpack, "GatherV2": gen_gather,
    "ResourceGather": gen_variable, "AssignAddVariableOp": gen_variable, "AssignSubVariableOp": gen_variable,
    "StridedSliceGrad": gen_strided_slice_grad, "ReverseSequence": gen_reverse_sequence,
    "ResizeBilinear": gen_resize, "ResizeNearestNeighbor": gen_resize, "ResizeBilinearGrad": gen_resize,
    "ResizeNearestNeighborGrad": gen_resize, "MirrorPadGrad": gen_mirror_pad_grad,
    "ResizeBicubic": gen_resize, "ResizeBicubicGrad": gen_resize,
    "ScaleAndTranslate": gen_scale_and_translate, "ScaleAndTranslateGrad": gen_scale_and_translate,
    "MatrixBandPart": gen_band_part,
    "Cumsum": gen_scan, "Cumprod": gen_scan, "CumulativeLogsumexp": gen_scan,
    "LinSpace": gen_lin_space,
})
for _op in RNN_OPS:
    GENERATORS[_op] = gen_rnn
for _op in [*OPTIMIZERS, *RESOURCE_SCATTERS, *RESOURCE_SCATTERS_ND]:
    GENERATORS[_op] = gen_variable
for _op in TENSOR_SCATTERS:
    GENERATORS[_op] = gen_scatter
for _op in ("UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMin", "UnsortedSegmentMax"):
    GENERATORS[_op] = gen_segment_sum
for _op in SORTED_SEGMENTS:
    GENERATORS[_op] = gen_sorted_segment
for _op in ("Sum", "Prod", "Max", "Min", "Mean", "All", "Any", "EuclideanNorm"):
    GENERATORS[_op] = gen_reduce


# ----------------------------------------------------------------------------------------------
# Running a case.

def _tensor(v):
    import tensorflow as tf

    if isinstance(v, list):
        return [tf.constant(x) for x in v]
    return tf.constant(v)


def _flatten(out):
    if out is None:
        return []
    if isinstance(out, (list, tuple)):
        items = []
        for o in out:
            items.extend(_flatten(o))
        return items
    if hasattr(out, "numpy"):
        return [out.numpy()]
    return []  # an Operation (ops without outputs)


def _exec_attrs(case):
    """The attribute tuple `execute.execute` takes, for the internal ops."""
    import tensorflow as tf

    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(case.op)
    inputs = {a.name for a in op_def.input_arg}
    out = []
    for k, v in case.args.items():
        if k in inputs:
            continue
        if isinstance(v, tf.DType):
            v = v.as_datatype_enum
        elif isinstance(v, list) and v and isinstance(v[0], tf.DType):
            v = [d.as_datatype_enum for d in v]
        elif isinstance(v, str):
            v = v.encode()
        elif isinstance(v, list) and v and isinstance(v[0], str):
            v = [s.encode() for s in v]
        out += [k, v]
    return tuple(out)


# tf.raw_ops names some inputs differently from their OpDefs.
def _backprop_input_sized_by_shape(args):
    """Conv2DBackpropInputV2's arguments as Conv2DBackpropInput's (the input's shape as input_sizes)."""
    args = dict(args)
    args["input_sizes"] = np.array(np.shape(args.pop("input")), np.int32)
    return "Conv2DBackpropInput", args


def _conv_explicit_3d_as_valid(args):
    """A 3-D generic Conv with explicit padding (TF-CPU aborts on it: Eigen has no such padding) as
    the VALID one on the zero-padded input; other Convs as they are."""
    x = args["input"]
    pads = list(args.get("explicit_paddings", []))
    bd = int(args.get("batch_dims", 1))
    if args.get("padding") != "EXPLICIT" or np.ndim(x) - bd - 1 != 3 or len(pads) != 10 or min(pads) < 0 \
            or pads[:2] != [0, 0] or bd < 1:
        return "Conv", args
    pairs = [pads[2 * i:2 * i + 2] for i in range(5)]
    first = args.get("data_format") == "CHANNELS_FIRST"
    if pairs[1 if first else 4] != [0, 0]:
        return "Conv", args
    return "Conv", dict(args, input=np.pad(x, [[0, 0]] * bd + pairs[1:]), padding="VALID", explicit_paddings=[])


# Ops TF-CPU (and TF-GPU) registers no kernel for, or aborts on, each with the op and arguments
# that answer for it.
CPU_TWINS = {"Conv2DBackpropInputV2": _backprop_input_sized_by_shape, "Conv": _conv_explicit_3d_as_valid}

RAW_RENAMES = {"Split": {"split_dim": "axis"}, "SplitV": {"split_dim": "axis"}, "Select": {"t": "x", "e": "y"},
               **{op: {"reduction_indices": "axis"} for op in ("Sum", "Prod", "Max", "Min", "Mean", "All", "Any")}}


def execute(case, device, args=None):
    """The op's outputs (numpy arrays) on `device`."""
    import tensorflow as tf

    from tensorflow.python.framework import op_def_registry

    args = case.args if args is None else args
    if case.mode == "rnn":
        return execute_rnn(Case_with(case, args), device)
    if device == CPU and case.op in CPU_TWINS:
        op, args = CPU_TWINS[case.op](args)
        case = Case_with(case, args)
        case.op = op
    op_def = op_def_registry.get(case.op)
    inputs = [a.name for a in op_def.input_arg]
    if case.mode == "exec":
        from tensorflow.python.eager import context
        from tensorflow.python.eager import execute as eager_execute

        with tf.device(device):
            flat = []
            for name in inputs:
                t = _tensor(args[name])
                flat.extend(t if isinstance(t, list) else [t])
            outs = eager_execute.execute(case.op, len(op_def.output_arg), inputs=flat,
                                         attrs=_exec_attrs(Case_with(case, args)), ctx=context.context())
            return [o.numpy() for o in outs]
    if case.mode == "raw":
        renames = RAW_RENAMES.get(case.op, {})
        with tf.device(device):
            kwargs = {renames.get(k, k): (_tensor(v) if k in inputs else v) for k, v in args.items()}
            out = getattr(tf.raw_ops, case.op)(**kwargs)
            return _flatten(out)
    # variable ops
    fn = getattr(tf.raw_ops, case.op)
    with tf.device(device):
        variables = {k: tf.Variable(v) for k, v in case.variables.items()}
        tensor_names = [k for k in args if k in inputs]
        attrs = {k: v for k, v in args.items() if k not in inputs}

        def body(*tensors):
            out = fn(**{k: v.handle for k, v in variables.items()}, **dict(zip(tensor_names, tensors)), **attrs)
            reads = [v.read_value() for v in variables.values()]
            return ([out] if case.op in ("ResourceGather", "ResourceGatherNd") else []) + reads

        consts = [_tensor(args[k]) for k in tensor_names]
        if case.mode == "function":
            out = tf.function(body)(*consts)
        else:
            out = body(*consts)
        return _flatten(out)


def Case_with(case, args):
    c = Case(case.op, case.row, case.id, case.seed)
    c.args, c.variables, c.mode, c.outputs = args, case.variables, case.mode, case.outputs
    return c


def _float_tolerance(op, got, want):
    dtype = got.dtype
    tol = 2e-3 if dtype == np.float16 else 1e-3
    atol = tol
    if op in ACCUMULATING or op.startswith("CudnnRNNBackprop"):  # gradients summed over steps and rows
        finite = np.abs(want[np.isfinite(want)].astype(np.float64))
        atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
    if dtype == np.float16 and op in GRADS:
        finite = np.abs(want[np.isfinite(want)].astype(np.float64))
        atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
    return tol, atol


def _item(v):
    v = np.asarray(v)
    return repr(float(v) if v.dtype.name == "bfloat16" else v.item())


# Ops whose bfloat16 rows run through their float32 kernels (src/kernels/mod.rs's
# BFLOAT16_VIA_F32): their reference is TF-CPU's float32 kernel on the widened inputs.
BFLOAT16_MATH = {
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropInputV2", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", "Conv", "Conv3D",
    "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool", "MaxPoolV2", "AvgPool", "MaxPoolGrad",
    "MaxPoolGradV2", "AvgPoolGrad", "MaxPoolGradGrad", "MaxPoolGradGradV2", "MaxPoolWithArgmax",
    "MaxPoolGradWithArgmax", "MaxPool3D", "AvgPool3D", "MaxPool3DGrad", "AvgPool3DGrad", "MaxPool3DGradGrad",
    "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGradV2", "FusedBatchNormGradV3", "ResizeBilinear",
    "ResizeBicubic", "ResizeBilinearGrad", "ScaleAndTranslate", "Cumsum", "Cumprod",
    # The elementwise, reduction, matmul, softmax, loss, segment and scatter ops' bfloat16 rows
    # (float32 math rounded once; TF-CPU's bfloat16 kernels round intermediate results, and it has
    # none of some).
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Digamma", "Elu", "Erf",
    "Erfc", "Exp", "Expm1", "Floor", "Inv", "LeakyRelu", "Lgamma", "Log", "Log1p", "Neg", "Reciprocal", "Relu",
    "Relu6", "Rint", "Round", "Rsqrt", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt",
    "Square", "Tan", "Tanh", "ZerosLike", "OnesLike", "Add", "AddV2", "Atan2", "Div", "DivNoNan", "FloorDiv",
    "FloorMod", "Maximum", "Minimum", "Mul", "Pow", "RealDiv", "Sub", "SquaredDifference", "Xdivy", "Xlog1py",
    "Xlogy", "EluGrad", "InvGrad", "LeakyReluGrad", "ReciprocalGrad", "Relu6Grad", "ReluGrad", "RsqrtGrad",
    "SeluGrad", "SigmoidGrad", "SoftplusGrad", "SoftsignGrad", "SqrtGrad", "TanhGrad", "Equal", "Greater",
    "GreaterEqual", "Less", "LessEqual", "NotEqual", "IsFinite", "IsInf", "IsNan", "AddN", "BiasAdd", "BiasAddGrad",
    "ClipByValue", "MatMul", "BatchMatMulV2", "Einsum", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "L2Loss", "Sum", "Prod", "Max", "Min", "Mean", "ArgMax", "ArgMin",
    "UnsortedSegmentSum", "UnsortedSegmentProd", "ScatterNd",
    "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin", "TensorScatterMax", "ResizeNearestNeighborGrad",
    "MirrorPadGrad", "ScatterNdNonAliasingAdd", "BiasAddV1", "MulNoNan", "Ndtri", "Erfinv", "SegmentSum",
    "SegmentProd", "SegmentMin", "SegmentMax", "SegmentMean", "EuclideanNorm",
    # Normal random values: float32 Box-Muller pairs rounded once (a float32 ulp apart from
    # TF-CPU's, which may round to the neighbouring bfloat16).
    "RandomStandardNormal", "TruncatedNormal", "StatelessRandomNormal", "StatelessTruncatedNormal",
    "StatelessRandomNormalV2", "StatelessTruncatedNormalV2",
}
# Variable scatters of bfloat16: float32 math rounded at each update, as TF-CPU's bfloat16 kernels
# round (its reference is their own), but repeated indices combine in no defined order here, so
# compared within bfloat16 ulps of the results' size, as BFLOAT16_MATH.
BFLOAT16_STEPWISE = {"ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv",
                     "ResourceScatterNdAdd", "ResourceScatterNdSub"}
# bfloat16 rows of those that pick elements (exact).
BFLOAT16_MOVES = {"MaxPool", "MaxPoolV2", "MaxPool3D", "MaxPoolWithArgmax", "MaxPoolGradGrad", "MaxPoolGradGradV2",
                  "MaxPool3DGradGrad", "Cast", "ResizeNearestNeighbor"}


def compare(op, gots, wants):
    """None when equal, else a description of the first difference."""
    if len(gots) != len(wants):
        return f"{len(gots)} outputs, TF-CPU has {len(wants)}"
    for i, (g, w) in enumerate(zip(gots, wants)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {i}: {g.dtype.name}{list(g.shape)} vs TF-CPU {w.dtype.name}{list(w.shape)}"
        if g.dtype.name == "bfloat16" and op not in BFLOAT16_MOVES and op in BFLOAT16_MATH | BFLOAT16_STEPWISE:
            # float32 math rounded once, against the float32 reference rounded once: a bfloat16
            # ulp (2^-8 relative) apart at most where the float32 results differ.
            rtol, atol = _float_tolerance(op, g.astype(np.float32), w.astype(np.float32))
            rtol, atol = max(rtol, 1e-2), max(atol, 1e-2 * atol / rtol)
            gw, ww = g.astype(np.float64), w.astype(np.float64)
            close = np.isclose(gw, ww, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                bad = np.argwhere(~close.reshape(g.shape) if g.ndim else ~close.reshape(1))[:5]
                gv, wv = (g, w) if g.ndim else (g.reshape(1), w.reshape(1))  # (a scalar's one index)
                sample = "; ".join(f"{[int(j) for j in b]}: {_item(gv[tuple(b)])} vs {_item(wv[tuple(b)])}" for b in bad)
                return f"output {i}: {int((~close).sum())} of {g.size} bfloat16 elements differ (rtol={rtol:g}); {sample}"
        elif g.dtype.kind in "fc" and g.dtype.itemsize > 0 and g.dtype.name != "bfloat16":
            gw = g.astype(np.complex128 if g.dtype.kind == "c" else np.float64)
            ww = w.astype(gw.dtype)
            rtol, atol = _float_tolerance(op, g, w)
            close = np.isclose(gw, ww, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                bad = np.argwhere(~close.reshape(g.shape) if g.ndim else ~close.reshape(1))[:5]
                sample = []
                for b in bad:
                    b = tuple(int(i) for i in b) if g.ndim else ()
                    sample.append(f"{list(b)}: {_item(g[b])} vs {_item(w[b])}")
                return f"output {i}: {int((~close).sum())} of {g.size} differ (rtol={rtol:g}, atol={atol:g}); " + "; ".join(sample)
        else:
            if g.tobytes() != w.tobytes():
                if g.dtype.name == "bfloat16":
                    gn, wn = g.astype(np.float32), w.astype(np.float32)
                    if np.array_equal(gn, wn, equal_nan=True):
                        continue
                diff = (g != w) if g.dtype.name != "bfloat16" else ~np.isclose(g.astype(np.float32), w.astype(np.float32), equal_nan=True)
                diff = np.asarray(diff).reshape(g.shape)
                idx = [tuple(int(i) for i in b) for b in np.argwhere(diff)[:5]] if g.ndim else [()]
                sample = "; ".join(f"{list(b)}: {_item(g[b])} vs {_item(w[b])}" for b in idx)
                return f"output {i}: {int(np.sum(diff)) if g.ndim else 1} of {g.size} differ; {sample}"
    return None


def _widened(args, bfloat16=False):
    """`args` with float16 (and with `bfloat16`, bfloat16) arrays widened to float32."""
    narrow = (np.dtype(np.float16), npdtype("bfloat16")) if bfloat16 else (np.dtype(np.float16),)
    out = {}
    for k, v in args.items():
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype in narrow:  # (0-d arithmetic gives scalars)
            out[k] = np.asarray(v).astype(np.float32)
        elif isinstance(v, list) and v and all(isinstance(x, np.ndarray) and x.dtype in narrow for x in v):
            out[k] = [x.astype(np.float32) for x in v]
        else:
            out[k] = v
    return out


def _has_bfloat16(args):
    return any(isinstance(v, np.ndarray) and v.dtype.name == "bfloat16" for v in args.values())


def _has_half(case):
    vals = list(case.args.values()) + list(case.variables.values())
    for v in vals:
        if isinstance(v, np.ndarray) and v.dtype == np.float16:
            return True
        if isinstance(v, list) and any(isinstance(x, np.ndarray) and x.dtype == np.float16 for x in v):
            return True
    return False


def references(case, args=None):
    """TF-CPU's outputs for `case`: a list of acceptable answers. For float16 inputs, TF-CPU's
    float16 kernel and its float32 kernel on the widened inputs, rounded to half (we compute in f32
    and round once; TF-CPU's half kernels round partial sums and intermediate products)."""
    import tensorflow as tf

    args = case.args if args is None else args
    if _has_bfloat16(args) and case.op in BFLOAT16_MATH:
        # bfloat16 math rows compute in float32 and round once: TF-CPU's float32 kernel on the
        # (exactly widened) inputs, rounded to bfloat16 (TF-CPU lacks many bfloat16 kernels, and its
        # others round intermediate results).
        wide = Case_with(case, _widened(args, bfloat16=True))
        for k in ("T", "TInput"):
            if k in wide.args:
                wide.args[k] = "float32"
        from tensorflow.python.framework import op_def_registry

        bfloat16 = npdtype("bfloat16")
        typed = [a.type_attr in ("T", "TInput") for a in op_def_registry.get(case.op).output_arg]
        outs = execute(wide, CPU)
        answers = [[w.astype(bfloat16) if t and w.dtype == np.float32 else w for w, t in zip(outs, typed + [False] * len(outs))]]
        return [a[:case.outputs] for a in answers] if case.outputs is not None else answers
    if case.op in NO_HALF_ON_CPU and _has_half(case):
        # TF-CPU registers no float16 kernels of these: its float32 kernel on the (exactly widened)
        # inputs, rounded to half, answers.
        wide = Case_with(case, _widened(args))
        wide.variables = _widened(case.variables)
        answers = [[w.astype(np.float16) if w.dtype == np.float32 else w for w in execute(wide, CPU)]]
        return [a[:case.outputs] for a in answers] if case.outputs is not None else answers
    # The kernels compute float16 in f32 and round once; TF-CPU's half kernels round intermediate
    # results too (a partial sum, or y * y of a large y that overflows half).
    half = _has_half(case) and case.mode in ("raw", "exec")
    try:
        answers = [execute(case, CPU, args)]  # raises where TF-CPU rejects the input
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError) as e:
        # TF-CPU's float16 kernels of some ops lack features of its float32 ones (dilations):
        # "not supported" is no verdict on the input, so the float32 kernel answers.
        if not half or not (isinstance(e, tf.errors.UnimplementedError) or "not yet support" in str(e)
                            or "does not support" in str(e)):
            raise
        answers = []
    if half:
        wide_args = _widened(args)
        for k in ("T", "TArgs"):
            if k in wide_args:
                wide_args[k] = tf.float32 if k == "T" else [tf.float32] * len(wide_args[k])
        try:
            wide = execute(case, CPU, wide_args)
            answers.append([w.astype(np.float16) if w.dtype == np.float32 else w for w in wide])
        except Exception:  # noqa: BLE001
            if not answers:
                raise
    if case.outputs is not None:
        answers = [a[:case.outputs] for a in answers]
    return answers


def compare_any(op, gots, answers, flush=False):
    """None when `gots` equals one of `answers`, else the difference from the first."""
    if flush:
        gots, answers = _flush_outputs(gots), [_flush_outputs(a) for a in answers]
    first = None
    for want in answers:
        d = compare(op, gots, want)
        if d is None:
            return None
        first = first or d
    return first


def _is_float(x):
    return isinstance(x, np.ndarray) and (x.dtype.kind == "f" or x.dtype.name == "bfloat16") and x.size > 0


def _subnormals(x):
    """The subnormal elements of a float array (bfloat16 has float32's exponent range)."""
    wide = x.astype(np.float32) if x.dtype.name == "bfloat16" else x
    tiny = np.finfo(np.float32 if x.dtype.name == "bfloat16" else x.dtype).tiny
    return (wide != 0) & (np.abs(wide) < tiny)


def _subnormal_free(v):
    if isinstance(v, list):
        return [_subnormal_free(x) for x in v]
    if _is_float(v):
        mask = _subnormals(v)
        if mask.any():
            v = v.copy()
            v[mask] = 0
    return v


def _has_subnormal(case):
    for v in list(case.args.values()) + list(case.variables.values()):
        for x in (v if isinstance(v, list) else [v]):
            if _is_float(x) and _subnormals(x).any():
                return True
    return False


def _flush_outputs(outs):
    return [_subnormal_free(np.asarray(o)) for o in outs]


# --- documented TF-GPU answers -------------------------------------------------------------------

# The image arguments of the pools and batch-norm gradients, which TF-CPU serves in NHWC only (the
# latter in inference mode).
POOL_IMAGES = {"MaxPool": ("input",), "MaxPoolV2": ("input",), "AvgPool": ("value",), "AvgPoolGrad": ("grad",),
               **{op: ("orig_input", "orig_output", "grad")
                  for op in ("MaxPoolGrad", "MaxPoolGradV2", "MaxPoolGradGrad", "MaxPoolGradGradV2")},
               **{op: ("y_backprop", "x") for op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3")}}


def documented_answer(case, gots):
    """Where TF-CPU rejects the input but TF-GPU documents an answer: (name, result or None)."""
    import tensorflow as tf

    op, a = case.op, case.args
    policy = a.get("bad_indices_policy", "")
    if op in ("GatherV2", "Gather", "ResourceGather"):
        params = case.variables["resource"] if op == "ResourceGather" else a["params"]
        idx = a["indices"]
        axis = {"GatherV2": lambda: int(a["axis"]), "Gather": lambda: 0}.get(op, lambda: int(a.get("batch_dims", 0)))()
        bd = int(a.get("batch_dims", 0))
        r = params.ndim
        if not (-r <= axis < r):
            return None
        axis %= r
        if bd < 0:
            bd += idx.ndim
        if not (0 <= bd <= axis) or bd > idx.ndim or list(idx.shape[:bd]) != list(params.shape[:bd]):
            return None
        dim = params.shape[axis]
        oor = (idx < 0) | (idx >= dim)
        if not oor.any():
            return None
        out_shape = list(params.shape[:axis]) + list(idx.shape[bd:]) + list(params.shape[axis + 1:])
        if dim == 0:
            want = np.zeros(out_shape, params.dtype)
        else:
            safe = np.where(oor, 0, idx).astype(idx.dtype)
            with tf.device(CPU):
                want = tf.gather(params, safe, axis=axis, batch_dims=bd).numpy()
            mask_shape = list(idx.shape[:bd]) + [1] * (axis - bd) + list(idx.shape[bd:]) + [1] * (r - axis - 1)
            mask = np.broadcast_to(oor.reshape(mask_shape), out_shape)
            want = np.where(mask, np.zeros((), want.dtype), want)
        wants = [want] + ([case.variables["resource"]] if op == "ResourceGather" else [])
        return "gather: out-of-range indices give zeros", [wants]
    if op in ("GatherNd", "ResourceGatherNd") and policy in ("", "DEFAULT", "IGNORE"):
        params = a["params"] if op == "GatherNd" else case.variables["resource"]
        idx = a["indices"]
        if idx.ndim == 0 or params.ndim == 0 or idx.shape[-1] > params.ndim or params.size == 0:
            return None
        k = idx.shape[-1]
        flat = idx.reshape(prod(idx.shape[:-1]), k)
        oor = ~np.all((flat >= 0) & (flat < np.array(params.shape[:k], np.int64)), axis=1)
        if not oor.any():
            return None
        with tf.device(CPU):
            want = tf.raw_ops.GatherNd(params=params, indices=np.where(oor[:, None], 0, flat).astype(idx.dtype)).numpy()
        want[oor] = 0
        want = want.reshape(tuple(idx.shape[:-1]) + params.shape[k:])
        wants = [want] + ([case.variables["resource"]] if op == "ResourceGatherNd" else [])
        return "gather: out-of-range indices give zeros", [wants]
    if (op in ("ScatterNd", *TENSOR_SCATTERS, *RESOURCE_SCATTERS_ND)) and policy in ("", "DEFAULT", "IGNORE"):
        idx = a["indices"]
        shape = list(a["shape"]) if op == "ScatterNd" else list(
            case.variables["ref"].shape if op in RESOURCE_SCATTERS_ND else a.get("tensor", a.get("input")).shape)
        if idx.ndim == 0 or idx.shape[-1] > len(shape) or any(int(s) < 0 for s in shape):
            return None
        k = idx.shape[-1]
        flat = idx.reshape(-1, k)
        upd = a["updates"]
        if list(upd.shape) != list(idx.shape[:-1]) + shape[k:]:
            return None
        keep = np.all((flat >= 0) & (flat < np.array(shape[:k], np.int64)), axis=1) if k else np.ones(flat.shape[0], bool)
        if keep.all():
            return None
        args = dict(a)
        args["indices"] = flat[keep].astype(idx.dtype)
        args["updates"] = upd.reshape((-1,) + tuple(shape[k:]))[keep]
        args.pop("bad_indices_policy", None)
        return "scatter: out-of-range updates dropped", references(case, args)
    if op in RESOURCE_SCATTERS:
        idx, rows = a["indices"], case.variables["resource"].shape[:1]
        upd, tail = a["updates"], case.variables["resource"].shape[1:]
        if not rows or (upd.ndim and list(upd.shape) != list(idx.shape) + list(tail)):
            return None
        keep = (idx >= 0) & (idx < rows[0])
        if keep.all():
            return None
        args = dict(a)
        args["indices"] = idx[keep]
        args["updates"] = upd[keep] if upd.ndim else upd
        return "scatter: out-of-range updates dropped", references(case, args)
    if op.startswith("ResourceSparseApply"):
        idx, grad, rows = a["indices"], a["grad"], case.variables["var"].shape[:1]
        if idx.ndim != 1 or not grad.ndim or grad.shape[0] != idx.shape[0] or not rows:
            return None
        keep = (idx >= 0) & (idx < rows[0])
        if keep.all():
            return None
        args = dict(a)
        args["indices"], args["grad"] = idx[keep], grad[keep]
        return "sparse optimizer: rows of out-of-range indices skipped", references(case, args)
    if op.startswith("UnsortedSegment"):
        ids, n = a["segment_ids"], int(a["num_segments"])
        if n < 0 or not (ids >= n).any():
            return None
        args = dict(a)
        args["segment_ids"] = np.where(ids >= n, -1, ids).astype(ids.dtype)
        return f"segment {op[len('UnsortedSegment'):].lower()}: out-of-range ids dropped", references(case, args)
    if op.startswith("DepthwiseConv2dNativeBackprop") and any(int(d) > 1 for d in a.get("dilations", [1])):
        answers = depthwise_grad_exact(case)
        if answers is not None:
            return "exact answer (TF-CPU's depthwise backprops ignore dilations), computed in NumPy", answers
    if op in ("SpaceToDepth", "DepthToSpace") and a.get("data_format") == "NCHW" and np.ndim(a["input"]) == 4:
        # TF-GPU's NCHW (TF-CPU serves NHWC only): the NHWC answer on the transposed input.
        args = dict(a, input=np.moveaxis(a["input"], 1, -1), data_format="NHWC")
        answers = [[np.moveaxis(o, -1, 1) for o in answer] for answer in references(case, args)]
        return "NCHW: TF-CPU's NHWC answer, transposed", answers
    if op == "Conv":
        answers = generic_conv_answer(case)
        if answers is not None:
            return "Conv on merged batches, split groups, channels last or zero-padded (as TF-CPU's runs)", answers
    if op.startswith("Conv3D") and a.get("data_format", "NDHWC") == "NDHWC":
        answers = dilated_conv3d(case)
        if answers is not None:
            return "dilated 3-D convolution: TF-CPU's undilated one with a zero-spread filter", answers
    if op in ("Conv2DBackpropInput", "Conv2DBackpropInputV2", "Conv2DBackpropFilter"):
        answers = grouped_conv_grad(case)
        if answers is not None:
            return "grouped convolution gradient (TF-GPU serves it, TF-CPU refuses): TF-CPU's per group", answers
    if op.startswith("FusedBatchNorm") and np.ndim(a.get("x")) == 5:
        # TF-CPU's oneDNN kernels refuse 5-D inputs in a 4-D layout; TF's own kernels (TF-GPU's
        # too) read them as the 3-D layout: the same statistics as the 4-D input with D merged into H.
        first = a.get("data_format", "NHWC") in ("NCHW", "NCDHW")
        shape = a["x"].shape
        merged = shape[:2] + (shape[2] * shape[3], shape[4]) if first else (shape[0], shape[1] * shape[2]) + shape[3:]
        args = dict(a, data_format="NCHW" if first else "NHWC")
        for k in ("x", "y_backprop"):
            if k in args and np.shape(args[k]) == shape:
                args[k] = args[k].reshape(merged)
        answers = [[o.reshape(shape) if j == 0 else o for j, o in enumerate(answer)] for answer in references(case, args)]
        return "5-D batch norm in a 4-D layout: TF's own kernels read it as the 3-D layout", answers
    images = POOL_IMAGES.get(op, ())
    if images and a.get("data_format") == "NCHW" and all(np.ndim(a[k]) == 4 for k in images):
        # TF-GPU's NCHW pools (TF-CPU's refuse NCHW): the NHWC answer on the transposed images.
        args = dict(a, data_format="NHWC", **{k: np.moveaxis(a[k], 1, -1) for k in images})
        for name in ("ksize", "strides", "orig_input_shape"):
            if name in a and np.size(a[name]) == 4:
                v = np.asarray(a[name])
                moved = v[[0, 2, 3, 1]]
                args[name] = moved if isinstance(a[name], np.ndarray) else moved.tolist()
        if np.size(a.get("explicit_paddings", [])) == 8:
            pairs = np.asarray(a["explicit_paddings"]).reshape(4, 2)
            args["explicit_paddings"] = pairs[[0, 2, 3, 1]].reshape(-1).tolist()
        answers = [[np.moveaxis(o, -1, 1) if o.ndim == 4 else o for o in answer] for answer in references(case, args)]
        return "NCHW: TF-CPU's NHWC answer, transposed", answers
    if op == "SparseSoftmaxCrossEntropyWithLogits":
        f, labels = a["features"], a["labels"]
        if f.ndim != 2 or labels.shape != f.shape[:1] or f.shape[1] == 0:
            return None
        bad = (labels < 0) | (labels >= f.shape[1])
        if not bad.any():
            return None
        args = dict(a)
        args["labels"] = np.where(bad, 0, labels).astype(labels.dtype)
        loss, backprop = references(case, args)[0]
        loss = np.where(bad, np.nan, loss).astype(loss.dtype)
        backprop = np.where(bad[:, None], np.nan, backprop).astype(backprop.dtype)
        return "sparse cross-entropy: NaN rows for out-of-range labels", [[loss, backprop]]
    return None


def generic_conv_answer(case):
    """The generic Conv where TF-CPU's kernel refuses it (several batch dimensions, groups, channels
    first, 3-D explicit padding), from TF-CPU's Conv on the input reshaped, split by group,
    transposed or zero-padded, in float32; None where the case is not such a valid one."""
    import tensorflow as tf

    a = case.args
    x, k = a["input"], a["filter"]
    bd, groups = int(a.get("batch_dims", 1)), int(a.get("groups", 1))
    first = a.get("data_format", "CHANNELS_LAST") == "CHANNELS_FIRST"
    spatial = x.ndim - bd - 1
    if bd < 1 or spatial not in (2, 3) or k.ndim != spatial + 2 or groups < 1 or x.size == 0:
        return None
    explicit3d = spatial == 3 and a.get("padding") == "EXPLICIT"
    dilations = list(a.get("dilations", [])) or [1] * (spatial + 2)
    dilated3d = spatial == 3 and len(dilations) == 5 and max(dilations) > 1
    if bd == 1 and groups == 1 and not first and not explicit3d and not dilated3d:
        return None
    order = [0, *range(2, spatial + 2), 1]  # an NC... list in N...C order
    attrs = {n: v for n, v in a.items() if n not in ("input", "filter", "batch_dims", "groups", "data_format")}
    for name in ("strides", "dilations"):
        if name in attrs and first and len(attrs[name]) == spatial + 2:
            attrs[name] = [attrs[name][i] for i in order]
    pads = list(attrs.get("explicit_paddings", []))
    if pads and len(pads) != 2 * (spatial + 2):
        return None
    pairs = [pads[2 * i:2 * i + 2] for i in range(len(pads) // 2)]
    if first and pairs:
        pairs = [pairs[i] for i in order]
        attrs["explicit_paddings"] = sum(pairs, [])
    if first:
        x = np.moveaxis(x, bd, -1)
    batch = x.shape[:bd]
    xs = x.reshape((-1,) + x.shape[bd:]).astype(np.float32)
    if explicit3d:
        if min(pads) < 0:
            return None
        xs = np.pad(xs, pairs)
        attrs.update(padding="VALID", explicit_paddings=[])
    cin = xs.shape[-1]
    if k.shape[-2] * groups != cin or k.shape[-1] % groups:
        return None
    cout = k.shape[-1] // groups
    ks = k.astype(np.float32)
    if dilated3d:
        # TF-CPU's 3-D Conv refuses dilations: the filter's taps spread apart by zeros instead.
        d = attrs["dilations"][1:4]
        if min(d) < 1 or max(d) > 8:
            return None
        spread = np.zeros([(n - 1) * dd + 1 for n, dd in zip(ks.shape[:3], d)] + list(ks.shape[3:]), np.float32)
        spread[::d[0], ::d[1], ::d[2]] = ks
        ks, attrs["dilations"] = spread, [1] * 5
    with tf.device(CPU):
        parts = [tf.raw_ops.Conv(input=xs[..., g * k.shape[-2]:(g + 1) * k.shape[-2]], filter=ks[..., g * cout:(g + 1) * cout],
                                 **attrs).numpy() for g in range(groups)]
    out = np.concatenate(parts, axis=-1).reshape(batch + parts[0].shape[1:-1] + (k.shape[-1],)).astype(k.dtype)
    return [[np.moveaxis(out, -1, bd) if first else out]]


def dilated_conv3d(case):
    """A dilated Conv3D or gradient, which TF-CPU refuses, as its undilated op with the filter's
    taps spread apart by zeros (the filter gradient read back at the taps); None if not one."""
    import tensorflow as tf

    a = case.args
    dilations = list(a.get("dilations", [1] * 5))
    if len(dilations) != 5 or dilations[0] != 1 or dilations[4] != 1 or not 1 < max(dilations) <= 8 or min(dilations) < 1:
        return None
    d = dilations[1:4]
    fshape = list(np.shape(a["filter"])) if "filter" in a else [int(v) for v in a["filter_sizes"]]
    if len(fshape) != 5 or min(fshape) < 0:
        return None
    spread_shape = [(k - 1) * dd + 1 if k > 0 else 0 for k, dd in zip(fshape[:3], d)] + fshape[3:]
    args = dict(a, dilations=[1] * 5)
    if "filter" in a:
        spread = np.zeros(spread_shape, a["filter"].dtype)
        spread[::d[0], ::d[1], ::d[2]] = a["filter"]
        args["filter"] = spread
        return references(case, args)
    args["filter_sizes"] = np.array(spread_shape, np.int32)
    return [[w[0][::d[0], ::d[1], ::d[2]]] for w in references(case, args)]


def grouped_conv_grad(case):
    """A grouped Conv2D gradient (input channels a multiple > 1 of the filter's) as TF-GPU computes
    it, from TF-CPU's ungrouped kernel on each group's channels; None where the case is not one."""
    import tensorflow as tf

    a = dict(case.args)
    if a.get("data_format", "NHWC") != "NHWC":
        return None
    if case.op == "Conv2DBackpropInputV2":
        a["input_sizes"] = np.array(np.shape(a.pop("input")), np.int32)
    for_filter = case.op.endswith("Filter")
    xs = list(np.shape(a["input"])) if for_filter else [int(v) for v in a["input_sizes"]]
    fs = [int(v) for v in a["filter_sizes"]] if for_filter else list(np.shape(a["filter"]))
    dy = a["out_backprop"]
    if len(xs) != 4 or len(fs) != 4 or dy.ndim != 4 or min(xs + fs) <= 0 or xs[3] == fs[2] or xs[3] % fs[2]:
        return None
    groups = xs[3] // fs[2]
    if fs[3] % groups or dy.shape[3] != fs[3]:
        return None
    cin, cout = fs[2], fs[3] // groups
    attrs = {k: v for k, v in a.items() if k not in ("input", "input_sizes", "filter", "filter_sizes", "out_backprop")}
    parts = []
    with tf.device(CPU):
        for g in range(groups):
            dy_g = dy[..., g * cout:(g + 1) * cout]
            if for_filter:
                parts.append(tf.raw_ops.Conv2DBackpropFilter(
                    input=a["input"][..., g * cin:(g + 1) * cin], filter_sizes=np.array(fs[:3] + [cout], np.int32),
                    out_backprop=dy_g, **attrs).numpy())
            else:
                parts.append(tf.raw_ops.Conv2DBackpropInput(
                    input_sizes=np.array(xs[:3] + [cin], np.int32), filter=a["filter"][..., g * cout:(g + 1) * cout],
                    out_backprop=dy_g, **attrs).numpy())
    return [[np.concatenate(parts, axis=-1)]]


def depthwise_grad_exact(case):
    """DepthwiseConv2dNativeBackprop{Input,Filter} computed directly in NumPy (float64, every
    in-range tap of every window, as TF's kernels do), or None where the case is not a valid NHWC
    one: TF-CPU's kernels of these ops ignore dilations."""
    a = case.args
    strides, dil = list(a.get("strides", [])), list(a.get("dilations", [1, 1, 1, 1]))
    padding = a.get("padding")
    if a.get("data_format", "NHWC") != "NHWC" or len(strides) != 4 or len(dil) != 4 or strides[0] != 1 or \
            strides[3] != 1 or dil[0] != 1 or dil[3] != 1 or min(strides + dil) < 1 or max(strides + dil) > 64:
        return None
    dy = a["out_backprop"].astype(np.float64)
    if case.op.endswith("Input"):
        xs, fs = [int(v) for v in a["input_sizes"]], list(a["filter"].shape)
        f = a["filter"].astype(np.float64)
    else:
        xs, fs = list(a["input"].shape), [int(v) for v in a["filter_sizes"]]
        x = a["input"].astype(np.float64)
    if len(xs) != 4 or len(fs) != 4 or min(xs + fs) < 0 or fs[2] != xs[3] or dy.ndim != 4 or prod(xs) > 10**5:
        return None
    n, h, w, c = xs
    kh, kw, _, m = fs
    pads = [0, 0, 0, 0]
    if padding == "EXPLICIT":
        e = list(a.get("explicit_paddings", []))
        if len(e) != 8 or min(e) < 0:
            return None
        pads = e[2:6]
    outs = []
    for size, k, st, d, (p0, p1) in [(h, kh, strides[1], dil[1], pads[0:2]), (w, kw, strides[2], dil[2], pads[2:4])]:
        eff = (k - 1) * d + 1
        if padding == "SAME":
            out = -(-size // st)
            total = max((out - 1) * st + eff - size, 0)
            outs.append((out, total // 2))
        elif padding == "VALID":
            outs.append((max((size - eff) // st + 1, 0) if size >= eff else 0, 0))
        elif padding == "EXPLICIT":
            outs.append((max((size + p0 + p1 - eff) // st + 1, 0), p0))
        else:
            return None
    (oh, ph), (ow, pw) = outs
    if list(dy.shape) != [n, oh, ow, c * m]:
        return None
    dyr = dy.reshape(n, oh, ow, c, m)
    with np.errstate(all="ignore"):
        if case.op.endswith("Input"):
            dx = np.zeros(xs)
            for i in range(oh):
                for j in range(ow):
                    for p in range(kh):
                        r = i * strides[1] - ph + p * dil[1]
                        if not 0 <= r < h:
                            continue
                        for q in range(kw):
                            col = j * strides[2] - pw + q * dil[2]
                            if 0 <= col < w:
                                dx[:, r, col, :] += (f[p, q][None] * dyr[:, i, j]).sum(-1)
            return [[dx.astype(a["out_backprop"].dtype)]]
        df = np.zeros(fs)
        for i in range(oh):
            for j in range(ow):
                for p in range(kh):
                    r = i * strides[1] - ph + p * dil[1]
                    if not 0 <= r < h:
                        continue
                    for q in range(kw):
                        col = j * strides[2] - pw + q * dil[2]
                        if 0 <= col < w:
                            df[p, q] += (x[:, r, col, :, None] * dyr[:, i, j]).sum(0)
        return [[df.astype(a["out_backprop"].dtype)]]


def inferred_shapes(case):
    """The output shapes TF's shape function gives for the case's inputs (None if unknown)."""
    import tensorflow as tf

    from tensorflow.python.framework import op_def_registry

    if case.op == "_FusedConv2D":
        # The fused op's output has the convolution's shape (its shape function is internal).
        conv = {k: v for k, v in case.args.items()
                if k in ("input", "filter", "strides", "padding", "explicit_paddings", "dilations", "data_format")}
        return inferred_shapes(Case_with(Case("Conv2D", case.row, case.id, case.seed), conv))
    if case.mode != "raw":
        return None
    inputs = {a.name for a in op_def_registry.get(case.op).input_arg}
    renames = RAW_RENAMES.get(case.op, {})
    graph = tf.Graph()
    with graph.as_default():
        kwargs = {renames.get(k, k): (_tensor(v) if k in inputs else v) for k, v in case.args.items()}
        out = getattr(tf.raw_ops, case.op)(**kwargs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    shapes = [o.shape for o in outs if hasattr(o, "shape")]
    if any(not sh.is_fully_defined() for sh in shapes):
        return None
    return [list(sh) for sh in shapes]


# --- one case -----------------------------------------------------------------------------------

def exc_record(e):
    msg = str(e).replace("\n", " ")
    return {"class": type(e).__name__, "message": msg[:300], "in_kernel": " on WGPU" in msg,
            "panic": "internal panic" in msg}


# Differences from TF-CPU of known cause, outside what this test checks; reported apart from the
# failures ("known" in the totals, every case listed) so that they stay visible:
#  - subnormal inputs: TF-CPU (and TF's CUDA kernels) flush them to zero, the WGSL kernels keep
#    them (numerics, issue 15);
#  - NaN and Inf propagation in max-pools, arg-max/min, convolutions and SigmoidGrad: TF-CPU's
#    answer depends on its kernel's evaluation order (oneDNN and Eigen disagree; Eigen's vector and
#    scalar paths multiply 0 * y * (1 - y) in different orders), and TF defines none;
#  - NaN data of UnsortedSegmentMin/Max: TF-CPU keeps a NaN only until a later element of its
#    segment replaces it, so its answer depends on the order of the data; the WGPU kernels skip NaNs;
#  - integer division by zero, and ResourceScatterDiv by zero updates: TF-CPU raises, TF's GPU
#    kernels do not check;
#  - optimizer hyperparameter values (lr > 0, l1 >= 0, lr_power <= 0...): TF-CPU's proximal and
#    sparse FTRL kernels check them; the plugin's kernels, like TF's dense GPU kernels, read the
#    scalars in device memory and do not;
#  - AdagradDA with a non-finite lr: TF-CPU's own answer depends on the row width (NaN for
#    one-element rows, finite otherwise);
#  - MatrixBandPart limits past int32: TF's functors take them as int, and TF-CPU's answer then
#    depends on its code path.
NAN_ORDER_OPS = {"MaxPool", "MaxPoolGrad", "Conv2D", "Conv2DBackpropInput",
                 "Conv2DBackpropFilter", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                 "DepthwiseConv2dNativeBackpropFilter", "_FusedConv2D", "_FusedMatMul", "Softmax", "LogSoftmax",
                 "SigmoidGrad", "UnsortedSegmentMin", "UnsortedSegmentMax", "SegmentMin", "SegmentMax", "TopKV2",
                 "LowerBound", "UpperBound", "MaxPoolV2",
                 "MaxPoolGradV2",
                 "Conv2DBackpropInputV2", "MaxPoolWithArgmax", "MaxPoolGradGrad", "MaxPoolGradGradV2", "Conv3D",
                 "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3D", "MaxPool3DGrad", "MaxPool3DGradGrad",
                 "Conv"}
INTEGER_DIVISION_OPS = {"FloorDiv", "FloorMod", "Div", "TruncateDiv", "TruncateMod"}


def _float_inputs(case):
    for v in list(case.args.values()) + list(case.variables.values()):
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, np.ndarray) and (x.dtype.kind == "f" or x.dtype.name == "bfloat16") and x.size:
                yield x.astype(np.float32).astype(np.float64)


def _square_overflows(y):
    """Whether some y * y overflows y's float type."""
    return y.dtype.kind == "f" and bool((np.abs(y.astype(np.float64)) > np.sqrt(float(np.finfo(y.dtype).max))).any())


def _subnormal_quotient(case):
    """Whether x / y has a subnormal element (TF-CPU flushes it to zero before the floor)."""
    x, y = case.args.get("x"), case.args.get("y")
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        return False
    bfloat16 = x.dtype.name == "bfloat16"  # (computed in float32, as its reference)
    if not (x.dtype.kind == "f" or bfloat16):
        return False
    try:
        with np.errstate(all="ignore"):
            q = np.abs(x.astype(np.float64) / y.astype(np.float64))
    except ValueError:
        return False
    return bool(((q > 0) & (q < np.finfo(np.float32 if bfloat16 else x.dtype).tiny)).any())


def _graph_route(case):
    """Whether a variable update takes the plugin's graph rewrite: in a tf.function, and eagerly
    too from TF 2.19 on (eager updates run as one-op functions there; TF 2.16 runs kernels)."""
    import tensorflow as tf
    return case.mode == "function" or not tf.__version__.startswith("2.16.")


def _extreme_factors(case):
    """Whether a float scatter's updates hold factors whose products leave the float range."""
    u = np.asarray(case.args.get("updates"))
    if not (u.dtype.kind == "f" or u.dtype.name == "bfloat16") or u.size == 0:
        return False
    a = np.abs(u.astype(np.float64))
    return bool(((a != 0) & ((a < 1e-18) | (a > 1e18))).any() or _subnormals(u).any())


def _invalid_hyperparameter(case):
    """Whether a hyperparameter breaks a value rule TF-CPU's optimizer kernels check."""
    rules = {"lr": lambda v: v > 0, "l1": lambda v: v >= 0, "l2": lambda v: v >= 0,
             "l2_shrinkage": lambda v: v >= 0, "lr_power": lambda v: v <= 0}
    for name, valid in rules.items():
        value = case.args.get(name)
        if isinstance(value, np.ndarray) and value.size == 1 and not valid(float(value.reshape(()))):
            return True
    return False


def _documented_when_flushed(case):
    """Whether the WGPU op given the flushed inputs equals TF-GPU's documented answer for them."""
    try:
        flushed = _flushed_case(case)
        doc = documented_answer(flushed, None)
        if doc is None:
            return False
        answers = doc[1] if case.outputs is None else [a[:case.outputs] for a in doc[1]]
        return _wgpu_equal_when_flushed(case, flushed, answers)
    except Exception:  # noqa: BLE001
        return False


def _flushed_case(case):
    """`case` with its subnormal inputs (arguments and variables) flushed to zero."""
    flushed = Case_with(case, {k: _subnormal_free(v) for k, v in case.args.items()})
    flushed.variables = {k: _subnormal_free(v) for k, v in case.variables.items()}
    return flushed


def _wgpu_equal_when_flushed(case, flushed, answers):
    """Whether the WGPU op given the flushed inputs equals `answers` for them."""
    gots = execute(flushed, GPU)
    if case.outputs is not None:
        gots = gots[:case.outputs]
    return compare_any(case.op, gots, answers, flush=True) is None


def _float_out_of_integer_range(case):
    """Whether a float -> integer Cast has a NaN, or a value whose integer part its type cannot hold."""
    x = np.asarray(case.args["x"])
    dst = np.dtype(case.args["DstT"].as_numpy_dtype)
    if x.dtype.kind == "b" or np.issubdtype(x.dtype, np.integer) or dst.kind not in "iu":
        return False
    whole = np.trunc(x.astype(np.float64))
    info = np.iinfo(dst)
    return bool(((whole < float(info.min)) | (whole > float(info.max)) | np.isnan(whole)).any())


def known_divergence(case, record):
    """The known cause of a failing `record`, or None."""
    kind, detail = record.get("kind"), record.get("detail", "")
    if kind == "subnormal":
        return "subnormal inputs kept (TF flushes them to zero; issue 15)"
    if kind == "mismatch" and case.op in ("FloorDiv", "FloorMod") and _subnormal_quotient(case):
        return "subnormal inputs kept (TF flushes them to zero; issue 15)"
    if kind == "mismatch" and case.op in NAN_ORDER_OPS and any(not np.isfinite(x).all() for x in _float_inputs(case)):
        return "NaN/Inf propagation order (TF-CPU's kernels define none)"
    if kind == "mismatch" and case.op == "SigmoidGrad" and _square_overflows(np.asarray(case.args["y"])):
        # y * (1 - y) overflows: TF-CPU's packet path, dy * (y * (1 - y)), gives NaN for a zero dy
        # and its scalar path, (dy * y) * (1 - y), gives 0, by the element's position in the tensor.
        return "NaN/Inf propagation order (TF-CPU's kernels define none)"
    if kind == "accepted" and case.op in SORTED_SEGMENTS and (
            "not increasing" in detail or "must be >= 0" in detail or "not sorted" in detail):
        # TF-GPU reads back only the last id: unsorted and negative ones pass unchecked there too.
        return "unsorted or negative segment ids (TF-GPU checks only the last)"
    if kind == "accepted" and case.op in RESOURCE_SCATTERS:
        indices, rows = np.asarray(case.args["indices"]), np.asarray(case.variables["resource"]).shape[0]
        if ((indices < 0) | (indices >= rows)).any():
            return "out-of-range scatter indices dropped (TF-GPU's answer)"
    if kind == "accepted" and case.op in ("Bincount", "DenseBincount") and "must be non-negative" in detail:
        return "negative bin counts' values dropped (TF-GPU's answer; TF-CPU refuses them)"
    if kind == "accepted" and case.op in INTEGER_DIVISION_OPS and (
            "division by zero" in detail or "only integer div and mod should have errors" in detail):
        # (TF-CPU's TruncateDiv and TruncateMod report a zero divisor as that internal error.)
        return "integer division by zero (TF's GPU kernels do not check)"
    if kind == "accepted" and case.op == "Pow" and "negative integer powers" in detail:
        # TF-GPU's int64 kernel (Eigen's pow) has no check either; the plugin's answer is
        # documented in wgsl/integer.wgsl.
        return "integer to a negative power (TF's GPU kernels do not check)"
    if kind == "mismatch" and case.op == "Cast" and case.args.get("Truncate") and case.row["SrcT"] == "float64" \
            and case.row["DstT"] == "complex64":
        # TF-CPU's truncating double -> complex64 clears the whole mantissa (-1.45 -> -0.5); the
        # plugin truncates the 29 low bits, as its double -> float32 cast and TF's LSBZeroSetter do.
        return "float64 -> complex64 with Truncate: TF-CPU clears the whole mantissa (a TF-CPU bug)"
    if kind == "mismatch" and case.op == "Erf" and case.row.get("T") == "float64" and any(
            (np.abs(x) > 1e154).any() for x in _float_inputs(case)):
        return "float64 Erf past |x| = 1.34e154: TF-CPU gives NaN (Eigen squares x); C, CUDA and the plugin give +-1"
    if kind == "mismatch" and case.op == "Cast" and _float_out_of_integer_range(case):
        return "float out of the integer type's range (undefined in C++; TF-CPU's scalar and vector code differ)"
    if kind == "accepted" and "SparseApply" in case.op and case.mode == "function" and np.size(
            case.args.get("indices", [0])) == 0:
        # The graph rewrite's shape checks (src/rewrite/mod.rs) hold eagerly; inside a tf.function
        # Grappler folds them away when the index tensor is statically empty (issue 20, open).
        return "sparse optimizer with no indices in a tf.function: the gradient's rows unchecked (issue 20)"
    if kind == "accepted" and "Apply" in case.op and _invalid_hyperparameter(case):
        return "hyperparameter values unchecked on the device (TF-CPU checks them)"
    if kind == "mismatch" and case.op == "MatrixBandPart" and any(
            not -(2**31) <= int(case.args[k]) < 2**31 for k in ("num_lower", "num_upper") if np.ndim(case.args[k]) == 0):
        # TF's functors take the limits as int; TF-CPU's answer for an int64 limit past int32 then
        # depends on its kernel's code path (zeros below the diagonal for some dtypes and shapes,
        # not for others). The plugin wraps them as TF-GPU's functor does.
        return "MatrixBandPart limit past int32 (TF-CPU's answer depends on its code path)"
    if kind == "mismatch" and "AdagradDA" in case.op and not np.isfinite(np.asarray(case.args.get("lr", 0.0))).all():
        return "AdagradDA with a non-finite lr (TF-CPU's answer depends on the row width)"
    if kind == "mismatch" and case.op in ("ResourceScatterMul", "ResourceScatterDiv") and _graph_route(case) \
            and _extreme_factors(case):
        # In a graph the repeated rows' factors are multiplied first (the Grappler rewrite), which
        # over- or underflows where TF-CPU's one factor at a time does not, and the other way round.
        # (TF-GPU's atomic updates come in no set order: a row 3 of -0.69 divided by 3e-6 and -inf
        # in float16 gives NaN one way, 0 the other; the rewrite gives 0.)
        return "repeated rows' extreme factors multiplied first (the graph route) over/underflow differently"
    if kind == "accepted" and case.op == "ResourceScatterDiv":
        # TF-CPU (with subnormals flushed, as its threads run) refuses zero updates; TF-GPU divides.
        u = np.asarray(case.args["updates"])
        if u.dtype.kind == "f" or u.dtype.name == "bfloat16":  # (bfloat16's numpy kind is "V")
            w = u.astype(np.float32) if u.dtype.name == "bfloat16" else u
            zero = np.abs(w) < np.finfo(w.dtype).tiny
        else:
            zero = u == 0
        if zero.any():
            return "ResourceScatterDiv by zero updates (TF's GPU kernels do not check)"
    return None


def run_case(case, emit=None):
    """Runs `case`; returns the result record. `emit` reports the phase (for crash attribution)."""
    record = _run_case(case, emit)
    if record["status"] == "failure":
        cause = known_divergence(case, record)
        if cause is not None:
            return {**record, "status": "known", "kind": cause}
    return record


# Unimplemented answers that name a resource limit of the adapter or the plugin, not a part of the
# op's domain the kernel leaves out: the registration audit lets these through.
RESOURCE_LIMITS = ("max_storage_buffer_binding_size", "storage binding", "loop iterations", "dispatch",
                   "2^31", "2^32", "too large for one kernel", "int32")


def _run_case(case, emit=None):
    try:
        gots = execute(case, GPU)
    except Exception as e:  # noqa: BLE001 - any Python exception passes
        record = exc_record(e)
        if record["class"] == "UnimplementedError" and not any(m in record["message"] for m in RESOURCE_LIMITS):
            # The registration audit (issue 16): a registered kernel must serve its op's whole
            # domain, since TF falls back to the CPU only where no kernel is registered.
            try:
                references(case)
            except Exception:  # noqa: BLE001 - TF-CPU cannot run it either
                return {"status": "exception", **record}
            return {"status": "failure", "kind": "unimplemented",
                    "detail": f"WGPU answers Unimplemented where TF-CPU runs the op: {record['message'][:300]}"}
        return {"status": "exception", **record}
    if case.outputs is not None:
        gots = gots[:case.outputs]
    if case.mode == "rnn":  # no TF-CPU kernel: the reference of test_rnn_ops.py answers
        return rnn_verdict(case, gots, emit)
    if emit:
        emit({"event": "phase", "id": case.id, "phase": "cpu", "gpu_result": _describe_outputs(gots)})
    cpu_error = None
    try:
        wants = references(case)
    except Exception as e:  # noqa: BLE001
        cpu_error = exc_record(e)
        wants = None
    diff = compare_any(case.op, gots, wants) if wants is not None else "TF-CPU raised"
    if diff is None:
        return {"status": "equal"}
    # Documented TF-GPU answers.
    try:
        doc = documented_answer(case, gots)
    except Exception as e:  # noqa: BLE001
        doc = None
        diff += f" (documented-answer check failed: {type(e).__name__}: {e})"
    if doc is not None:
        name, answers = doc
        if case.outputs is not None:
            answers = [a[:case.outputs] for a in answers]
        d2 = compare_any(case.op, gots, answers)
        if d2 is None:
            return {"status": "documented", "kind": name}
        if _has_subnormal(case) and _documented_when_flushed(case):
            # Both causes at once (a dropped scatter update, and inf * subnormal that TF's flushing
            # makes NaN): equal to the documented answer once the op is given flushed inputs too.
            return {"status": "failure", "kind": "subnormal",
                    "detail": f"subnormal inputs not treated as zero (as TF-CPU and TF-GPU do); equal to TF-GPU's "
                              f"documented answer ({name}) once they are flushed: {d2}"}
        return {"status": "failure", "kind": "mismatch", "detail": f"differs from TF-GPU's documented answer ({name}): {d2}",
                "cpu_error": cpu_error}
    if _has_subnormal(case):
        # TF-CPU treats subnormal inputs as zero (its threads run with FTZ/DAZ), and so do TF's GPU
        # kernels (built with -fcuda-flush-denormals-to-zero). A result that matches once the
        # subnormal inputs are flushed is that answer; one that matches only when the WGPU op is
        # given flushed inputs too is still a failure, labelled so that it reads as one cause.
        try:
            flushed = _flushed_case(case)
            answers = references(flushed)
            if compare_any(case.op, gots, answers, flush=True) is None:
                return {"status": "documented", "kind": "subnormal inputs flushed to zero"}
            if cpu_error is None and _wgpu_equal_when_flushed(case, flushed, answers):
                return {"status": "failure", "kind": "subnormal",
                        "detail": "subnormal inputs not treated as zero (as TF-CPU and TF-GPU do); equal to TF-CPU "
                                  f"once they are flushed: {diff}"}
        except Exception:  # noqa: BLE001
            pass
    if wants is not None and all(np.asarray(g).size == 0 for g in gots) and len(gots) == len(wants[0]):
        # Empty results: only dtypes and shapes to compare. TF-CPU's oneDNN kernels return some
        # empty results with other shapes than TF's own shape function gives (a convolution whose
        # window is larger than its VALID input came back with the input's shape, uninitialised).
        try:
            shapes = inferred_shapes(case)
        except Exception:  # noqa: BLE001
            shapes = None
        if shapes is not None and len(shapes) == len(gots) and all(
                list(np.asarray(g).shape) == sh and np.asarray(g).dtype == np.asarray(w).dtype
                for g, sh, w in zip(gots, shapes, wants[0])):
            return {"status": "documented", "kind": "empty result of TF's inferred shape (TF-CPU's differs)"}
    if cpu_error is not None and (cpu_error["class"] in ("AbortedError", "UnimplementedError") or any(
            m in cpu_error["message"] for m in ("not yet support", "does not support"))):
        # TF-CPU has no kernel for this input (oneDNN limits, unimplemented features): no verdict.
        return {"status": "unverified", "detail": f"TF-CPU cannot run it: {cpu_error['class']}: "
                f"{cpu_error['message'][:200]}", "gpu_result": _describe_outputs(gots)}
    if cpu_error is not None:
        return {"status": "failure", "kind": "accepted", "detail": "WGPU accepted input TF-CPU rejects: "
                f"{cpu_error['class']}: {cpu_error['message'][:200]}", "gpu_result": _describe_outputs(gots)}
    return {"status": "failure", "kind": "mismatch", "detail": diff}


# --- recurrent layers: running a case and its reference -------------------------------------------

def execute_rnn(case, device):
    """The outputs of a CudnnRNN* case on `device` (see gen_rnn)."""
    import tensorflow as tf

    from tensorflow.python.framework import op_def_registry

    a = case.args

    def call(op, values):
        op_def = op_def_registry.get(op)
        inputs = {x.name for x in op_def.input_arg}
        names = inputs | {x.name for x in op_def.attr}
        kwargs = {k: (v if isinstance(v, tf.Tensor) else _tensor(v)) if k in inputs else v
                  for k, v in values.items() if k in names}
        return getattr(tf.raw_ops, op)(**kwargs)

    with tf.device(device):
        if "Backprop" not in case.op:
            return _flatten(call(case.op, a))
        forward = {k: v for k, v in a.items() if not k.startswith("forward_")}
        forward.update({k[len("forward_"):]: v for k, v in a.items() if k.startswith("forward_")})
        forward.setdefault("is_training", True)
        made = dict(zip(RNN_FROM_FORWARD, call(rnn_forward_op(case.op), forward)))
        args = {}
        for k, v in a.items():
            if k.startswith("forward_"):
                continue
            if k in RNN_FROM_FORWARD and isinstance(v, str):
                v = made[k]
                kind = a[k]
                if kind == "truncated":
                    v = v[:-1]
                elif kind == "extended":
                    v = tf.concat([v, tf.zeros([1], v.dtype)], 0)
                elif kind == "empty":
                    v = v[:0]
                elif kind == "zeros":
                    v = tf.zeros_like(v)
                elif kind == "random":
                    noise = np.random.default_rng([case.seed, case.id]).standard_normal(v.shape)
                    v = tf.constant(noise.astype(v.dtype.as_numpy_dtype))
            args[k] = v
        return _flatten(call(case.op, args))


class RnnUnverifiable(Exception):
    """No reference answer for this CudnnRNN* input."""


def rnn_reference(case):
    """TF-GPU's answer for a CudnnRNN* case (a list of outputs), from test_rnn_ops.reference on
    /CPU:0. Raises InvalidArgumentError where TF's cuDNN kernels (or the plugin's documented checks,
    test_rnn_ops.test_errors) reject the input, RnnUnverifiable where there is no reference."""
    import tensorflow as tf

    from test_rnn_ops import GATES, params_size, reference

    a, op = case.args, case.op
    backprop, v3 = "Backprop" in op, rnn_version(op) == "V3"

    def reject(message):
        raise tf.errors.InvalidArgumentError(None, None, message)

    mode, input_mode = a.get("rnn_mode", "lstm"), a.get("input_mode", "linear_input")
    direction = a.get("direction", "unidirectional")
    if mode not in GATES:
        reject(f"Invalid RNN mode: {mode!r}")
    if input_mode not in ("linear_input", "skip_input", "auto_select"):
        reject(f"Invalid RNN input mode: {input_mode!r}")
    if direction not in ("unidirectional", "bidirectional"):
        reject(f"Invalid RNN direction mode: {direction!r}")
    if a.get("num_proj", 0):
        raise RnnUnverifiable(f"LSTM projections (num_proj = {a['num_proj']})")
    lstm, dirs, time_major = mode == "lstm", 2 if direction == "bidirectional" else 1, a.get("time_major", True)
    x, h, c, p = a["input"], a["input_h"], a["input_c"], a["params"]
    # As TF's ExtractForwardInput and ExtractBackwardInputs check them.
    if x.ndim != 3:
        reject("RNN input must be a 3-D vector.")
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    input_size = x.shape[2]
    if h.ndim != 3:
        reject("RNN input_h must be a 3-D vector.")
    layers, units = (h.shape[0] if time_major else h.shape[1]) // dirs, h.shape[2]
    state = (layers * dirs, batch, units) if time_major else (batch, layers * dirs, units)
    out_shape = (steps, batch, dirs * units) if time_major else (batch, steps, dirs * units)
    if h.shape != state:
        reject(f"Invalid input_h shape: {list(h.shape)} {list(state)}")
    if lstm and c.shape != h.shape:
        reject(f"input_h and input_c must have the same shape w/o projection: {list(h.shape)} {list(c.shape)}")
    if layers == 0:
        reject("no layer")
    skip = input_mode == "skip_input" or (input_mode == "auto_select" and input_size == units)
    if input_mode == "skip_input" and input_size != units:
        reject(f"skip_input with input size {input_size} != units {units}")
    want_params = params_size(mode, input_size, units, layers, dirs, skip)
    if p.size != want_params:
        reject(f"Mismatching RNN parameter size: {p.size} vs {want_params}")
    if v3:
        lengths = a["sequence_lengths"]
        if lengths.shape != (batch,) or ((lengths < 0) | (lengths > steps)).any():
            reject(f"sequence_lengths {describe_value(lengths)} for batch {batch}, steps {steps}")
    if backprop:
        shapes = {"output": out_shape, "output_h": state, "output_backprop": out_shape, "output_h_backprop": state}
        if lstm:
            shapes.update(output_c=state, output_c_backprop=state)
        for name, want in shapes.items():
            if not isinstance(a[name], str) and a[name].shape != want:
                reject(f"Invalid {name} shape: {list(a[name].shape)} {list(want)}")
    dropout, training = a.get("dropout", 0.0), backprop or a.get("is_training", True)
    if not 0 <= dropout < 1:
        raise RnnUnverifiable(f"dropout = {dropout}")
    if dropout > 0 and layers > 1 and training:
        raise RnnUnverifiable("random dropout between layers")
    if backprop and (a["reserve_space"] != "forward" or any(k.startswith("forward_") for k in a)):
        raise RnnUnverifiable("a reserve space that no forward pass made from these inputs")
    dt = x.dtype
    c_shape = state if lstm else ()
    if batch * units == 0:  # nothing to compute: empty states, zero gradients
        answer = [np.zeros(out_shape, dt), np.zeros(state, dt), np.zeros(c_shape, dt)]
        return answer if not backprop else [np.zeros(x.shape, dt), np.zeros(state, dt), np.zeros(c.shape, dt),
                                            np.zeros(p.shape, dt)]
    if steps > 64 or steps * batch * max(units, input_size) * layers * dirs > 2 * 10**5:
        raise RnnUnverifiable("too big for the reference")
    if not v3:
        lengths = np.full(batch, steps, np.int32)
    with tf.device(CPU):
        inputs = [tf.constant(v.astype(np.float32)) for v in (x, h, c if lstm else np.zeros((), dt), p.reshape(-1))]
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            output, output_h, output_c = reference(mode, *inputs, lengths, dirs=dirs, time_major=time_major,
                                                   skip_input=skip)
        if not backprop:
            answer = [output, output_h, output_c if lstm else tf.zeros([])]
        else:
            targets = [output, output_h] + ([output_c] if lstm else [])
            seeds = [a["output_backprop"], a["output_h_backprop"]] + ([a["output_c_backprop"]] if lstm else [])
            dx, dh, dc, dp = tape.gradient(targets, inputs, output_gradients=[tf.constant(v.astype(np.float32)) for v in seeds],
                                           unconnected_gradients=tf.UnconnectedGradients.ZERO)
            # Without a cell state, input_c_backprop is zeros of input_c's shape, as the op's shape
            # function says (TF-GPU's kernel allocates a scalar placeholder instead).
            answer = [dx, dh, dc if lstm else tf.zeros(c.shape), tf.reshape(dp, p.shape)]
        return [np.asarray(v.numpy()).astype(dt) for v in answer]


def rnn_verdict(case, gots, emit=None):
    """The result record of a CudnnRNN* case whose WGPU op returned `gots`."""
    import tensorflow as tf

    if emit:
        emit({"event": "phase", "id": case.id, "phase": "reference", "gpu_result": _describe_outputs(gots)})
    try:
        answer = rnn_reference(case)
    except tf.errors.InvalidArgumentError as e:
        return {"status": "failure", "kind": "accepted", "detail": "WGPU accepted input TF's cuDNN kernels reject: "
                f"{e.message[:200]}", "gpu_result": _describe_outputs(gots)}
    except RnnUnverifiable as e:
        return {"status": "unverified", "detail": f"no reference answer: {e}", "gpu_result": _describe_outputs(gots)}
    if case.outputs is not None:
        answer = answer[:case.outputs]
    diff = compare(case.op, gots, answer)
    if diff is None:
        return {"status": "documented", "kind": RNN_DOCUMENTED}
    if any(not np.isfinite(x).all() for x in _float_inputs(case)):
        # The reference masks finished steps by multiplying (0 * NaN = NaN) and so spreads NaN and
        # Inf where cuDNN carries the state: no answer for non-finite inputs.
        return {"status": "unverified", "detail": f"non-finite inputs, which the reference does not mask: {diff[:120]}",
                "gpu_result": _describe_outputs(gots)}
    return {"status": "failure", "kind": "mismatch", "detail": f"differs from {RNN_DOCUMENTED}: {diff}"}


def _describe_outputs(outs):
    return ", ".join(f"{np.asarray(o).dtype.name}{list(np.asarray(o).shape)}" for o in outs)


# ----------------------------------------------------------------------------------------------
# The worker process.

def worker_main():
    for k, v in WORKER_ENV.items():
        os.environ.setdefault(k, v)
    import tensorflow as tf

    tf.config.set_soft_device_placement(False)
    tf.get_logger().setLevel("ERROR")  # tf.function retracing warnings: every variable case traces anew
    if not tf.config.list_physical_devices("GPU"):
        print(json.dumps({"event": "fatal", "message": "no GPU device: the WGPU plugin did not load"}), flush=True)
        return 3
    rows = registered_kernels()
    out = sys.stdout

    def emit(record):
        out.write(json.dumps(record, default=str) + "\n")
        out.flush()

    # TF_WGPU_FUZZ_SELFTEST="abort=3,7;hang=5": make those cases die or hang (tests the driver).
    selftest = {}
    for part in filter(None, os.environ.get("TF_WGPU_FUZZ_SELFTEST", "").split(";")):
        key, _, ids = part.partition("=")
        selftest[key] = {int(i) for i in ids.split(",") if i}
    emit({"event": "ready", "rows": len(rows), "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        cid, seed = int(req["id"]), int(req["seed"])
        try:
            case = make_case(rows, seed, cid)
        except Exception as e:  # noqa: BLE001 - a generator bug: reported, never hidden
            op, row = rows[pick_row(len(rows), seed, cid)]
            emit({"event": "start", "id": cid, "op": op, "row": row_name(op, row), "desc": "(generator failed)"})
            emit({"event": "result", "id": cid, "status": "failure", "kind": "harness",
                  "detail": f"generator: {type(e).__name__}: {e} {traceback.format_exc(limit=3)[-600:]}"})
            continue
        emit({"event": "start", "id": cid, "op": case.op, "row": row_name(case.op, case.row), "desc": case.describe(),
              "tags": case.tags})
        sys.stderr.write(f"[fuzz] case {cid}: {row_name(case.op, case.row)}\n")
        sys.stderr.flush()
        if cid in selftest.get("abort", ()):  # the driver's own test: a worker that dies
            os.abort()
        if cid in selftest.get("hang", ()):  # ... and one that hangs
            time.sleep(3600)
        try:
            result = run_case(case, emit)
        except Exception as e:  # noqa: BLE001 - a harness bug
            result = {"status": "failure", "kind": "harness",
                      "detail": f"{type(e).__name__}: {e} {traceback.format_exc(limit=4)[-800:]}"}
        emit({"event": "result", "id": cid, **result})
    return 0


# ----------------------------------------------------------------------------------------------
# The driver.

class _Worker:
    def __init__(self, python, env):
        self.stderr = tempfile.NamedTemporaryFile(prefix="fuzz-worker-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env, cwd=HERE)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = b""
        self.ready = False
        self.case = None  # the case id it runs
        self.start = None  # its "start" record
        self.phase = "wgpu"
        self.gpu_result = None
        self.deadline = None
        self.stderr_offset = 0
        self.born = time.monotonic()
        self.history = collections.deque(maxlen=30)  # case ids this process ran before (heap damage shows late)

    def lines(self):
        """Complete lines read so far, and whether the pipe is closed."""
        closed = False
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                closed = True
                break
            self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        return [c.decode(errors="replace") for c in complete if c.strip()], closed

    def send(self, case_id, seed, timeout):
        self.case, self.start, self.phase = case_id, None, "wgpu"
        self.deadline = time.monotonic() + timeout
        self.stderr.flush()
        self.stderr_offset = os.path.getsize(self.stderr.name)
        self.proc.stdin.write((json.dumps({"id": case_id, "seed": seed}) + "\n").encode())
        self.proc.stdin.flush()

    def stderr_tail(self, lines=25, since_case=True):
        try:
            with open(self.stderr.name, "rb") as f:
                if since_case:
                    f.seek(self.stderr_offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        try:
            self.stderr.close()
            os.unlink(self.stderr.name)
        except OSError:
            pass


def _exit_text(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def run_fuzz(n_cases, seed, workers=2, case_timeout=60, python=None, progress=None, startup_timeout=300,
             case_ids=None):
    """Runs cases 0..n_cases-1 of `seed` (or the ids `case_ids`) in `workers` worker processes;
    returns the totals."""
    if case_ids is not None:
        n_cases = len(case_ids)
    python = python or sys.executable
    env = dict(os.environ, **WORKER_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    pending = collections.deque(range(n_cases) if case_ids is None else case_ids)
    results = {}
    starts = {}
    failures = []
    restarts = 0
    startup_failures = 0
    began = time.monotonic()
    pool = [_Worker(python, env) for _ in range(max(1, workers))]
    selector = selectors.DefaultSelector()
    for w in pool:
        selector.register(w.proc.stdout, selectors.EVENT_READ, w)

    def replace(w):
        nonlocal restarts
        try:
            selector.unregister(w.proc.stdout)
        except (KeyError, ValueError):
            pass
        w.kill()
        tail = w.stderr_tail(since_case=False, lines=200)
        try:
            w.stderr.close()
            os.unlink(w.stderr.name)
        except OSError:
            pass
        restarts += 1
        nw = _Worker(python, env)
        selector.register(nw.proc.stdout, selectors.EVENT_READ, nw)
        pool[pool.index(w)] = nw
        return tail

    def record_crash(w, kind, how):
        start = w.start or {}
        record = {"id": w.case, "status": "failure", "kind": kind, "op": start.get("op", "?"), "row": start.get("row", "?"),
                  "desc": start.get("desc", "(died before its start line)"), "tags": start.get("tags", []),
                  "detail": f"{how} during the {w.phase} run", "stderr": w.stderr_tail(),
                  "earlier_cases_in_worker": list(w.history)}
        if w.phase != "wgpu":
            # The WGPU op returned (shapes below); TF-CPU's own kernel then died on the input: the
            # case is unverified, not a WGPU failure. Listed in the report all the same.
            record["status"] = "reference_crash"
            record["detail"] += f" (the WGPU op had returned {w.gpu_result})"
        results[w.case] = record
        if record["status"] == "failure":
            failures.append(record)

    try:
        while len(results) < n_cases:
            for w in list(pool):
                if w.ready and w.case is None and pending:
                    w.send(pending.popleft(), seed, case_timeout)
            events = selector.select(timeout=1.0)
            for key, _ in events:
                w = key.data
                lines, closed = w.lines()
                for line in lines:
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    ev = msg.get("event")
                    if ev == "ready":
                        w.ready = True
                        startup_failures = 0
                    elif ev == "fatal":
                        raise RuntimeError(f"fuzz worker: {msg.get('message')}")
                    elif ev == "start" and msg.get("id") == w.case:
                        w.start = msg
                        starts[w.case] = msg
                    elif ev == "phase" and msg.get("id") == w.case:
                        w.phase = "TF-CPU reference"
                        w.gpu_result = msg.get("gpu_result", "?")
                    elif ev == "result" and msg.get("id") == w.case:
                        start = w.start or {}
                        rec = {"id": w.case, "op": start.get("op", "?"), "row": start.get("row", "?"),
                               "desc": start.get("desc", ""), "tags": start.get("tags", []), **msg}
                        rec.pop("event", None)
                        results[w.case] = rec
                        if rec["status"] == "failure":
                            failures.append(rec)
                        w.history.append(w.case)
                        w.case, w.start, w.deadline = None, None, None
                        if progress:
                            progress(len(results), n_cases)
                if closed:
                    w.proc.wait(timeout=30)
                    code = w.proc.returncode
                    if w.case is not None:
                        record_crash(w, "crash", f"worker died ({_exit_text(code)})")
                    elif not w.ready:
                        startup_failures += 1
                        tail = w.stderr_tail(since_case=False)
                        if startup_failures >= 3:
                            raise RuntimeError(f"fuzz workers fail to start ({_exit_text(code)}):\n{tail}")
                    replace(w)
            now = time.monotonic()
            for w in list(pool):
                if w.case is not None and w.deadline is not None and now > w.deadline:
                    record_crash(w, "hang", f"no result within {case_timeout} s (killed)")
                    replace(w)
                elif not w.ready and now - w.born > startup_timeout:
                    raise RuntimeError(f"fuzz worker did not start within {startup_timeout} s:\n{w.stderr_tail(since_case=False)}")
    finally:
        for w in pool:
            try:
                selector.unregister(w.proc.stdout)
            except (KeyError, ValueError):
                pass
            w.close()
    return summarize(results, n_cases, seed, workers, time.monotonic() - began, restarts)


def summarize(results, n_cases, seed, workers, seconds, restarts):
    by_status = collections.Counter(r["status"] for r in results.values())
    exc = collections.Counter(r.get("class") for r in results.values() if r["status"] == "exception")
    in_kernel = sum(1 for r in results.values() if r["status"] == "exception" and r.get("in_kernel"))
    documented = collections.Counter(r.get("kind") for r in results.values() if r["status"] == "documented")
    failures = sorted((r for r in results.values() if r["status"] == "failure"), key=lambda r: (r["op"], r["id"]))
    per_op = collections.defaultdict(collections.Counter)
    rows = set()
    for r in results.values():
        per_op[r["op"]][r["status"]] += 1
        rows.add(r.get("row"))
    return {
        "cases": n_cases, "seed": seed, "workers": workers, "seconds": round(seconds, 1),
        "exceptions": by_status["exception"], "exception_classes": dict(exc.most_common()),
        "exceptions_from_wgpu_kernels": in_kernel,
        "equal_to_cpu": by_status["equal"], "documented_tf_gpu_answers": by_status["documented"],
        "documented_kinds": dict(documented.most_common()),
        "failures": failures, "failure_kinds": dict(collections.Counter(r["kind"] for r in failures).most_common()),
        "unverified": sorted((r for r in results.values() if r["status"] == "unverified"), key=lambda r: (r["op"], r["id"])),
        "known": sorted((r for r in results.values() if r["status"] == "known"), key=lambda r: (r["op"], r["id"])),
        "known_kinds": dict(collections.Counter(r["kind"] for r in results.values() if r["status"] == "known").most_common()),
        "panics": sorted((r for r in results.values() if r["status"] == "exception" and r.get("panic")),
                         key=lambda r: (r["op"], r["id"])),
        "reference_crashes": sorted((r for r in results.values() if r["status"] == "reference_crash"), key=lambda r: r["id"]),
        "worker_restarts": restarts, "rows_covered": len(rows),
        "adversarial_cases": sum(1 for r in results.values() if r.get("tags")),
        "per_op": {op: dict(c) for op, c in sorted(per_op.items())},
    }


def format_totals(t, max_failures=None):
    lines = [
        f"fuzz: {t['cases']} cases, seed {t['seed']}, {t['workers']} workers, {t['seconds']} s, "
        f"{t['rows_covered']} kernel rows covered, {t['adversarial_cases']} cases mutated",
        f"  python exceptions        {t['exceptions']:6d}   ({t['exceptions_from_wgpu_kernels']} raised by WGPU kernels)",
    ]
    for cls, n in t["exception_classes"].items():
        lines.append(f"    {cls:<28}{n:6d}")
    lines += [
        f"  equal to TF-CPU          {t['equal_to_cpu']:6d}",
        f"  documented TF-GPU answer {t['documented_tf_gpu_answers']:6d}",
    ]
    for kind, n in t["documented_kinds"].items():
        lines.append(f"    {kind:<48}{n:6d}")
    lines.append(f"  failures                 {len(t['failures']):6d}   {t['failure_kinds']}")
    lines.append(f"  known divergences        {len(t['known']):6d}   (listed below)")
    for kind, n in t["known_kinds"].items():
        lines.append(f"    {kind:<60}{n:6d}")
    lines.append(f"  unverified               {len(t['unverified']):6d}   (WGPU returned; TF-CPU has no kernel for it: "
                 "oneDNN limits, unimplemented features; listed below)")
    lines.append(f"  of the exceptions, caught Rust panics {len(t['panics']):3d}   (pass as exceptions; listed below)")
    lines.append(f"  TF-CPU reference crashed {len(t['reference_crashes']):6d}   (WGPU returned; unverified, not failures)")
    lines.append(f"  worker restarts          {t['worker_restarts']:6d}")
    for f in t["known"]:
        lines.append(f"  known: case {f['id']} [{f['row']}] {f['kind']}: {f.get('detail', '')[:160]}; inputs: {f['desc'][:200]}")
    for f in t["unverified"]:
        lines.append(f"  unverified: case {f['id']} [{f['row']}] {f['detail'][:200]}; WGPU gave {f.get('gpu_result')}; "
                     f"inputs: {f['desc']}")
    for f in t["panics"]:
        lines.append(f"  panic: case {f['id']} [{f['row']}] {f['message'][-160:]}; inputs: {f['desc']}")
    for f in t["reference_crashes"]:
        lines.append(f"  reference crash: case {f['id']} [{f['row']}] {f['detail']}; inputs: {f['desc']}")
        lines.extend("        " + s for s in f.get("stderr", "").splitlines()[-3:])
    if t["failures"]:
        lines.append("")
        lines.append("failing cases, by op:")
        shown = t["failures"] if max_failures is None else t["failures"][:max_failures]
        op = None
        for f in shown:
            if f["op"] != op:
                op = f["op"]
                lines.append(f"== {op}")
            lines.append(f"  case {f['id']} [{f['row']}] {f['kind']}: {f['detail']}")
            lines.append(f"      inputs: {f['desc']}" + (f"  (mutations: {', '.join(f['tags'])})" if f.get("tags") else ""))
            if f.get("earlier_cases_in_worker"):
                lines.append(f"      earlier cases in that worker (heap damage can surface later; replay them in order "
                             f"with --replay {','.join(map(str, f['earlier_cases_in_worker'][-10:] + [f['id']]))}): "
                             f"{f['earlier_cases_in_worker']}")
            if f.get("stderr"):
                lines.append("      stderr tail:")
                lines.extend("        " + s for s in f["stderr"].splitlines()[-15:])
        if len(shown) < len(t["failures"]):
            lines.append(f"  ... and {len(t['failures']) - len(shown)} more")
    return "\n".join(lines)


def replay(case_ids, seed):
    """Runs cases in order in this process and prints them (to debug a failure)."""
    for k, v in WORKER_ENV.items():
        os.environ.setdefault(k, v)
    import tensorflow as tf

    tf.config.set_soft_device_placement(False)
    tf.get_logger().setLevel("ERROR")
    rows = registered_kernels()
    for case_id in case_ids:
        case = make_case(rows, seed, case_id)
        print(f"case {case_id}: {row_name(case.op, case.row)}: {case.describe()} {case.tags}", flush=True)
        print(json.dumps(run_case(case), default=str, indent=1), flush=True)


def cases_of_ops(ops, per_op, seed, search=10**6):
    """The first `per_op` case ids of `seed` whose rows are of each op in `ops`."""
    rows = registered_kernels()
    unknown = set(ops) - {op for op, _ in rows}
    if unknown:
        raise SystemExit(f"not registered: {sorted(unknown)}")
    found = {op: [] for op in ops}
    for case_id in range(search):
        op = rows[pick_row(len(rows), seed, case_id)][0]
        if op in found and len(found[op]) < per_op:
            found[op].append(case_id)
            if all(len(ids) == per_op for ids in found.values()):
                break
    return sorted(i for ids in found.values() for i in ids)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help="run as a worker (cases on stdin)")
    parser.add_argument("--cases", type=int, default=int(os.environ.get("TF_WGPU_FUZZ_CASES", 5000)))
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60, help="seconds a case may take")
    parser.add_argument("--json", help="write the totals here")
    parser.add_argument("--replay", help="run these case ids (comma-separated, in order) in this process")
    parser.add_argument("--ops", help="run only the cases of these ops (comma-separated), --cases of each")
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    if args.replay is not None:
        replay([int(i) for i in args.replay.split(",")], args.seed)
        return 0

    def progress(done, total):
        if done % 250 == 0 or done == total:
            print(f"  {done}/{total}", file=sys.stderr, flush=True)

    case_ids = None if args.ops is None else cases_of_ops(args.ops.split(","), args.cases, args.seed)
    totals = run_fuzz(args.cases, args.seed, workers=args.workers, case_timeout=args.timeout, progress=progress,
                      case_ids=case_ids)
    print(format_totals(totals))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(totals, f, indent=1, default=str)
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
