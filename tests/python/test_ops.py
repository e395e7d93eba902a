"""Every registered (op, dtype) of the WGPU kernel table, run on /GPU:0 with soft placement off and
compared with the same op on /CPU:0.

Inputs cover ranks 0 to 5, broadcasting, size-1 and empty dimensions, sizes that are not multiples
of the workgroup size, and NaN/Inf. Integer and bool results must be bit-exact; float tolerances
are per op (`TOLERANCE`). `test_every_registered_op_is_exercised` fails when the table gains an op
this file does not cover. TF-CPU has no CudnnRNN* kernels: those run against the reference of
test_rnn_ops.py (cuDNN's semantics in plain TF ops on /CPU:0) instead.
"""

import functools
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import optimizer_ops
from conftest import registered_kernels

GPU = "/GPU:0"

KERNELS = registered_kernels()

# Float tolerance per op (default 1e-6 relative and absolute): transcendental functions differ in
# the last bits between LLVM's vector math and Eigen, reductions and matmuls sum in another order.
TOLERANCE = {
    "ResourceApplyMomentum": 1e-5, "ResourceApplyKerasMomentum": 1e-5, "ResourceApplyAdam": 1e-5,
    "ResourceApplyRMSProp": 1e-5, "ResourceApplyAdagrad": 1e-5,
    "Exp": 2e-6, "Expm1": 2e-6, "Log": 2e-6, "Log1p": 2e-6, "Sin": 2e-6, "Cos": 2e-6, "Tan": 1e-5,
    "Tanh": 2e-6, "Sigmoid": 2e-6, "Erf": 2e-6, "Erfc": 2e-6, "Sinh": 2e-6, "Cosh": 2e-6, "Asinh": 2e-6,
    "Acosh": 2e-6, "Atanh": 2e-6, "Atan": 2e-6, "Asin": 2e-6, "Acos": 2e-6, "Lgamma": 2e-6,
    # TF-CPU's digamma (Eigen's) is thousands of ulp off near its zeros; ours is within 3 ulp.
    "Digamma": 1e-5, "Elu": 2e-6, "Selu": 2e-6, "Softplus": 2e-6, "Pow": 1e-5,
    "Sum": 1e-5, "Mean": 1e-5, "Prod": 1e-5, "EuclideanNorm": 1e-5, "MatMul": 1e-5, "BatchMatMulV2": 1e-5, "BatchMatMulV3": 1e-5,
    "Einsum": 1e-5, "Softmax": 1e-6, "LogSoftmax": 2e-6, "Conv2D": 1e-5, "DepthwiseConv2dNative": 1e-5,
    "AvgPool": 1e-6, "FusedBatchNormV3": 1e-5, "_FusedConv2D": 1e-5, "_FusedMatMul": 1e-5, "RealDiv": 1e-6,
    "Div": 1e-6, "FloorMod": 1e-5, "SoftplusGrad": 2e-6, "RsqrtGrad": 2e-6, "SqrtGrad": 2e-6, "BiasAddGrad": 1e-5,
    "SoftmaxCrossEntropyWithLogits": 1e-5, "SparseSoftmaxCrossEntropyWithLogits": 1e-5, "Conv2DBackpropInput": 1e-5,
    "Conv2DBackpropFilter": 1e-5, "DepthwiseConv2dNativeBackpropInput": 1e-5, "DepthwiseConv2dNativeBackpropFilter": 1e-5,
    "AvgPoolGrad": 1e-6, "FloorDiv": 1e-6, "L2Loss": 1e-5, "UnsortedSegmentSum": 1e-5, "ScatterNd": 1e-5,
    "TensorScatterAdd": 1e-5, "Bincount": 1e-5, "DenseBincount": 1e-5, "ScatterNdNonAliasingAdd": 1e-5, "SegmentSum": 1e-5, "SegmentProd": 1e-5, "SegmentMean": 1e-5, "FusedBatchNormGradV3": 1e-5, "StatelessRandomNormalV2": 5e-5,
    "UnsortedSegmentProd": 1e-5, "TensorScatterSub": 1e-5, "ResourceScatterMul": 1e-5, "ResourceScatterDiv": 1e-5,
    "ResourceScatterNdAdd": 1e-5, "ResourceScatterNdSub": 1e-5, "StatelessRandomNormal": 5e-5, "StatelessTruncatedNormal": 5e-5,
    "RandomStandardNormal": 5e-5, "TruncatedNormal": 5e-5,
    "StatelessTruncatedNormalV2": 5e-5, "Rsqrt": 2e-6, "Reciprocal": 1e-6, "Inv": 1e-6,
    "ResizeBilinear": 1e-6, "ResizeBilinearGrad": 1e-5, "ResizeBicubic": 1e-5, "ResizeBicubicGrad": 1e-5, "ResizeNearestNeighborGrad": 1e-6, "MirrorPadGrad": 1e-6,
}

# Ops that accumulate long sums. TF-CPU's float16 kernels of these keep partial sums in half
# precision (see `run`), and float32 results differ by summation order (see `assert_same`).
HALF_ACCUMULATING = {"Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
                     "DepthwiseConv2dNativeBackpropFilter", "AvgPoolGrad", "BiasAddGrad", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "Sum", "Mean", "Prod", "EuclideanNorm", "MatMul", "BatchMatMulV2", "Einsum", "Conv2D", "DepthwiseConv2dNative",
                     "AvgPool", "FusedBatchNormV3", "AddN", "L2Loss", "UnsortedSegmentSum", "UnsortedSegmentProd", "ScatterNd", "Bincount", "DenseBincount",
                     "TensorScatterAdd", "ScatterNdNonAliasingAdd", "SegmentSum", "SegmentProd", "SegmentMean", "TensorScatterSub", "ResourceScatterNdAdd", "ResourceScatterNdSub",
                     "FusedBatchNormGradV3", "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "MirrorPadGrad",
                     "ResizeBicubic", "ResizeBicubicGrad"}

# The older (or tensor-attribute) generations of an op check like the op they share a kernel with.
SAME_AS = {"FusedBatchNorm": "FusedBatchNormV3", "FusedBatchNormV2": "FusedBatchNormV3",
           "FusedBatchNormGrad": "FusedBatchNormGradV3", "FusedBatchNormGradV2": "FusedBatchNormGradV3",
           "MaxPoolV2": "MaxPool", "MaxPoolGradV2": "MaxPoolGrad", "Conv2DBackpropInputV2": "Conv2DBackpropInput",
           "MaxPoolWithArgmax": "MaxPool", "MaxPoolGradGrad": "MaxPool", "MaxPoolGradGradV2": "MaxPool",
           "MaxPoolGradWithArgmax": "AvgPoolGrad",  # (a sum where windows overlap)
           "ScaleAndTranslate": "ResizeBicubic", "ScaleAndTranslateGrad": "ResizeBicubicGrad",
           "Conv3D": "Conv2D", "Conv": "Conv2D", "Conv3DBackpropInputV2": "Conv2DBackpropInput",
           "Conv3DBackpropFilterV2": "Conv2DBackpropFilter", "MaxPool3D": "MaxPool", "AvgPool3D": "AvgPool",
           "MaxPool3DGrad": "AvgPoolGrad", "AvgPool3DGrad": "AvgPoolGrad", "MaxPool3DGradGrad": "MaxPool"}
# TF-CPU has no float16 kernels of these (TF-GPU has): the widened float32 reference answers.
HALF_ACCUMULATING |= {"MaxPool3D", "AvgPool3D", "AvgPool3DGrad", "MaxPool3DGradGrad"}
HALF_ACCUMULATING |= {"Cumsum", "Cumprod"}  # (TF-CPU's half scans round each partial result)
# float64 log-sum-exp scans run in blocks of 4,094 on llvmpipe (its loop cap counts m64_log's
# loops): another order of roundings than TF-CPU's sequential one, within the accumulating bound.
HALF_ACCUMULATING |= {"CumulativeLogsumexp"}
# A product of 140,001 factors drifts from the exact one by about sqrt(n) float32 ulps in either
# order (TF-CPU's sequential one, or blocks of 65,535 and their offsets): 1e-5 relative apart here.
# CumulativeLogsumexp over 140,001 elements: TF-CPU adds each tiny log1p term to a running value
# near 12 one rounding at a time (about 1e-5 relative drift); the blocked scan rounds less.
TOLERANCE.update({"Cumsum": 1e-5, "Cumprod": 1e-4, "CumulativeLogsumexp": 1e-4, "Xlogy": 2e-6, "Xlog1py": 2e-6, "Xdivy": 1e-6, "Atan2": 2e-6})
# The Cephes ports (float32 math in Eigen's order), near TF-CPU's own float code.
# The Bessel functions TF defines (tf.math.special.bessel_i0 ...).
BESSEL_KINDS = ("I0", "I0e", "I1", "I1e", "K0", "K0e", "K1", "K1e", "J0", "J1", "Y0", "Y1")
TOLERANCE.update({f"Bessel{k}": 2e-5 for k in BESSEL_KINDS})
TOLERANCE.update({"Dawsn": 1e-5, "Expint": 1e-5, "FresnelCos": 1e-5, "FresnelSin": 1e-5, "Spence": 1e-5})
TOLERANCE.update({"Ndtri": 1e-5, "Erfinv": 1e-5, "Igamma": 1e-4, "Igammac": 1e-4, "IgammaGradA": 1e-4,
                  "RandomGammaGrad": 1e-4, "Zeta": 1e-5, "Polygamma": 1e-4})
# float64 special functions (Eigen's and TF's double code in f64): within a few ulp of TF-CPU where
# both are accurate, up to a few hundred where a cancellation magnifies the last bit of a log or exp
# that both compute (special_math_f64.wgsl's header): 1e-14, relative and absolute.
# (SPECIAL_BINARY: the two-operand ones, whose domains random normal inputs mostly miss.)
SPECIAL_BINARY = {"Igamma", "Igammac", "IgammaGradA", "RandomGammaGrad", "Zeta", "Polygamma"}
SPECIAL_OPS = {"Ndtri", "Erfinv", "Dawsn", "Expint", "FresnelCos", "FresnelSin", "Spence",
               *(f"Bessel{k}" for k in BESSEL_KINDS)} | SPECIAL_BINARY
for _new, _old in SAME_AS.items():
    if _old in TOLERANCE:
        TOLERANCE[_new] = TOLERANCE[_old]
    if _old in HALF_ACCUMULATING:
        HALF_ACCUMULATING.add(_new)

rng_global = np.random.default_rng(1234)


def rng_for(*key):
    from conftest import seed_for

    return np.random.default_rng(seed_for(*key))


def floats(rng, shape, specials=True, scale=3.0):
    v = (rng.standard_normal(shape) * scale).astype(np.float32)
    if specials and v.size >= 4:
        flat = v.reshape(-1)
        idx = rng.choice(flat.size, size=3, replace=False)
        flat[idx] = [np.nan, np.inf, -np.inf]
    return v


def typed(attrs, array):
    """`array` in the kernel's float type (attr T), so float16 kernels get float16 inputs."""
    return array.astype(tf.as_dtype(attrs.get("T") or attrs.get("Ta") or "float32").as_numpy_dtype)


def values(rng, dtype, shape):
    """Random values of any dtype (bit patterns for floats, so NaN payloads too)."""
    dtype = tf.as_dtype(dtype)
    n = int(np.prod(shape))
    if dtype == tf.bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == tf.bfloat16:
        return tf.bitcast(tf.constant(rng.integers(0, 2**16, size=shape, dtype=np.uint16)), tf.bfloat16).numpy()
    npd = np.dtype(dtype.as_numpy_dtype)
    return rng.integers(0, 256, size=n * npd.itemsize, dtype=np.uint8).view(npd).reshape(shape)


def random_shape(rng, rank=None, low=1, high=6):
    rank = int(rng.integers(0, 6)) if rank is None else rank
    return tuple(int(d) for d in rng.integers(low, high, size=rank))


def broadcast_pair(rng):
    out = random_shape(rng)
    a = tuple(d if rng.random() < 0.7 else 1 for d in out)
    b = tuple(d if rng.random() < 0.7 else 1 for d in out)
    if out and rng.random() < 0.4:
        b = b[int(rng.integers(0, len(out))):]
    return a, b


def run(fn, args, op=None, reference=None):
    """`fn` on the GPU and `reference` (by default `fn`: TF-CPU's kernel of the same op) on the CPU."""
    with tf.device(GPU):
        got = fn(*[tf.constant(a) for a in args])
    fn = reference or fn
    bfloat16 = tf.bfloat16.as_numpy_dtype
    with tf.device("/CPU:0"):
        narrow = [np.float16] if op in HALF_ACCUMULATING else []
        if op in FLOAT_MATH and op not in ("UnsortedSegmentMin", "UnsortedSegmentMax"):
            # (Those pick elements, exactly, and fill empty segments with bfloat16's own extremes,
            # which a float32 reference would round to infinity: TF-CPU's bfloat16 kernel decides.)
            # bfloat16 math rows compute in float32 and round once (TF-CPU's bfloat16 kernels, where
            # it has them, round intermediate results too): the widened float32 reference.
            narrow.append(bfloat16)
        if any(getattr(a, "dtype", None) in narrow for a in args):
            # TF-CPU's half kernels for these ops keep their partial sums in half, so their error
            # grows with the length of the sum; our kernels sum in f32 and round once. The
            # reference is TF-CPU's float32 kernel on the same (exactly widened) inputs, rounded
            # to half.
            wide = fn(*[tf.constant(a.astype(np.float32) if a.dtype in narrow else a) for a in args])
            gots = got if isinstance(got, (list, tuple)) else [got]
            wides = wide if isinstance(wide, (list, tuple)) else [wide]
            want = [tf.cast(w, g.dtype) for g, w in zip(gots, wides)]
            want = want if isinstance(got, (list, tuple)) else want[0]
        else:
            want = fn(*[tf.constant(a) for a in args])
    return got, want


def assert_same(op, got, want):
    gots = got if isinstance(got, (list, tuple)) else [got]
    wants = want if isinstance(want, (list, tuple)) else [want]
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants):
        assert g.device.endswith("device:GPU:0"), f"{op} ran on {g.device}"
        assert g.shape == w.shape and g.dtype == w.dtype, (op, g.shape, w.shape, g.dtype, w.dtype)
        gn, wn = g.numpy(), w.numpy()
        if g.dtype == tf.float64 and op in FLOAT_MATH:
            # float64 kernels compute in f64: elementwise results within a few ulp (most are
            # exact), sums in another order within their terms' size times a few ulp.
            rtol = atol = 1e-12 if op in HALF_ACCUMULATING else (1e-14 if op in SPECIAL_OPS else 1e-15)
            if op == "Erf":
                # TF-CPU's float64 Erf is NaN past |x| = 1.34e154 (Eigen squares x); C's, CUDA's
                # (TF-GPU's) and the plugin's are +-1 there.
                wn = np.where(np.isnan(wn) & (np.abs(gn) == 1.0), gn, wn)
            if op in ("ResizeBilinearGrad", "ResizeBicubicGrad"):
                # TF (CPU and GPU) multiplies each float32 gradient by its float32 weights in
                # float32 and adds the rounded terms in float64; the plugin's products are f64.
                # test_float64_resize_gradients_sum_in_f64 checks f64 sums where TF's are exact.
                rtol = atol = 1e-6
            if op in HALF_ACCUMULATING:
                finite = np.abs(wn[np.isfinite(wn)])
                atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
            np.testing.assert_allclose(gn, wn, rtol=rtol, atol=atol, equal_nan=True, err_msg=op)
        elif g.dtype == tf.bfloat16 and op in FLOAT_MATH:
            # float32 math rounded once to bfloat16 against the float32 reference rounded once:
            # equal, or a bfloat16 ulp (2^-8 relative) apart where the float32 sums differ.
            gn, wn = gn.astype(np.float32), wn.astype(np.float32)
            rtol = atol = 1e-2
            if op in HALF_ACCUMULATING:
                finite = np.abs(wn[np.isfinite(wn)])
                atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
            np.testing.assert_allclose(gn, wn, rtol=rtol, atol=atol, equal_nan=True, err_msg=op)
        elif g.dtype.is_complex and op in ("Mul", "Div", "RealDiv"):
            # Products and quotients of parts round in another order.
            tol = 1e-5 if g.dtype == tf.complex64 else 1e-13
            np.testing.assert_allclose(gn, wn, rtol=tol, atol=tol, equal_nan=True, err_msg=op)
        elif g.dtype.is_complex and op == "Prod":
            # Products in another order (a tree; TF-CPU's runs in sequence): each part within a
            # few ulp of the product's size, zeros' signs aside.
            tol = 1e-5 if g.dtype == tf.complex64 else 1e-13
            for part in (np.real, np.imag):
                assert np.all(np.abs(part(gn) - part(wn)) <= tol * np.abs(wn)), (op, gn, wn)
        elif g.dtype.is_complex and op in ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Sum", "Mean"):
            # Sums of products in another order: the error scales with the terms' size.
            tol = 1e-5 if g.dtype == tf.complex64 else 1e-13
            finite = np.abs(wn[np.isfinite(wn)])
            atol = tol * max(1.0, float(finite.max()) if finite.size else 1.0)
            np.testing.assert_allclose(gn, wn, rtol=tol, atol=atol, equal_nan=True, err_msg=op)
        elif op in ("ComplexAbs", "Angle"):
            np.testing.assert_allclose(gn, wn, rtol=2e-6, atol=1e-7, equal_nan=True, err_msg=op)
        elif g.dtype.is_floating and g.dtype != tf.bfloat16 and op in FLOAT_MATH:
            gn, wn = gn.astype(np.float32), wn.astype(np.float32)
            rtol = atol = TOLERANCE.get(op, 1e-6)
            if op in HALF_ACCUMULATING:
                # Sums in another order: cancellation leaves an absolute error that scales with
                # the size of the terms, not of the result.
                finite = np.abs(wn[np.isfinite(wn)])
                atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
            if g.dtype == tf.float16:
                # We compute in f32 and round once: about one f16 ulp apart.
                rtol = atol = 2e-3
                if op in GRADS:
                    # TF-CPU rounds each step of the formula to half, so where it cancels (1 - y*y
                    # near |y| = 1) its error scales with the operands, not with the result.
                    finite = np.abs(wn[np.isfinite(wn)])
                    atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
            np.testing.assert_allclose(gn, wn, rtol=rtol, atol=atol, equal_nan=True, err_msg=op)
        else:
            assert gn.tobytes() == wn.tobytes(), f"{op}: {gn} != {wn}"


UNARY = {
    "Abs": tf.abs, "Neg": tf.negative, "Sign": tf.sign, "Square": tf.square, "Sqrt": tf.sqrt,
    "Rsqrt": tf.math.rsqrt, "Reciprocal": tf.math.reciprocal, "Inv": lambda x: tf.raw_ops.Inv(x=x), "Exp": tf.exp,
    "Expm1": tf.math.expm1, "Log": tf.math.log, "Log1p": tf.math.log1p, "Sin": tf.sin, "Cos": tf.cos,
    "Tan": tf.tan, "Tanh": tf.tanh, "Sigmoid": tf.sigmoid, "Erf": tf.math.erf, "Erfc": tf.math.erfc, "Floor": tf.floor,
    "Ceil": tf.math.ceil, "Round": tf.round, "Rint": tf.math.rint, "Relu": tf.nn.relu, "Relu6": tf.nn.relu6,
    "Elu": tf.nn.elu, "Selu": tf.nn.selu, "LeakyRelu": lambda x: tf.nn.leaky_relu(x, 0.15),
    "Ndtri": tf.math.ndtri, "Erfinv": tf.math.erfinv,
    **{f"Bessel{k}": getattr(tf.math.special, f"bessel_{k.lower()}")
       for k in BESSEL_KINDS},
    "Dawsn": tf.math.special.dawsn, "Expint": tf.math.special.expint, "FresnelCos": tf.math.special.fresnel_cos,
    "FresnelSin": tf.math.special.fresnel_sin, "Spence": tf.math.special.spence,
    "Softplus": tf.nn.softplus, "Softsign": tf.nn.softsign, "ZerosLike": tf.zeros_like, "OnesLike": tf.ones_like,
    "Sinh": tf.math.sinh, "Cosh": tf.math.cosh, "Asinh": tf.math.asinh, "Acosh": tf.math.acosh,
    "Atanh": tf.math.atanh, "Atan": tf.math.atan, "Asin": tf.math.asin, "Acos": tf.math.acos,
    "Lgamma": tf.math.lgamma, "Digamma": tf.math.digamma,
    "Invert": tf.bitwise.invert, "PopulationCount": lambda x: tf.raw_ops.PopulationCount(x=x),
}
BINARY = {
    "AddV2": tf.add, "Add": lambda a, b: tf.raw_ops.Add(x=a, y=b), "Mul": tf.multiply, "Sub": tf.subtract,
    "RealDiv": tf.divide, "Div": lambda a, b: tf.raw_ops.Div(x=a, y=b), "DivNoNan": tf.math.divide_no_nan,
    "FloorDiv": tf.math.floordiv, "FloorMod": tf.math.floormod, "Maximum": tf.maximum, "Minimum": tf.minimum,
    "Pow": tf.pow, "SquaredDifference": tf.math.squared_difference, "Xlogy": tf.math.xlogy, "Xdivy": tf.math.xdivy,
    "Xlog1py": tf.math.xlog1py, "Atan2": tf.math.atan2, "MulNoNan": tf.math.multiply_no_nan,
    "NextAfter": tf.math.nextafter, "Igamma": tf.math.igamma, "Igammac": tf.math.igammac,
    "IgammaGradA": lambda a, x: tf.raw_ops.IgammaGradA(a=a, x=x),
    "RandomGammaGrad": lambda a, s: tf.raw_ops.RandomGammaGrad(alpha=a, sample=s), "Zeta": tf.math.zeta,
    "Polygamma": tf.math.polygamma,
    "TruncateDiv": lambda a, b: tf.raw_ops.TruncateDiv(x=a, y=b),
    "TruncateMod": lambda a, b: tf.raw_ops.TruncateMod(x=a, y=b),
    "BitwiseAnd": tf.bitwise.bitwise_and, "BitwiseOr": tf.bitwise.bitwise_or,
    "BitwiseXor": tf.bitwise.bitwise_xor, "LeftShift": tf.bitwise.left_shift,
    "RightShift": tf.bitwise.right_shift,
}
COMPARE = {
    "Equal": tf.equal, "NotEqual": tf.not_equal, "Less": tf.less, "LessEqual": tf.less_equal,
    "Greater": tf.greater, "GreaterEqual": tf.greater_equal,
}
# Activation gradients: op -> its two argument names, in order.
GRADS = {
    "ReluGrad": ("gradients", "features"), "Relu6Grad": ("gradients", "features"),
    "EluGrad": ("gradients", "outputs"), "SeluGrad": ("gradients", "outputs"),
    "LeakyReluGrad": ("gradients", "features"), "SoftplusGrad": ("gradients", "features"),
    "SigmoidGrad": ("y", "dy"), "TanhGrad": ("y", "dy"), "RsqrtGrad": ("y", "dy"), "SqrtGrad": ("y", "dy"),
    "ReciprocalGrad": ("y", "dy"), "InvGrad": ("y", "dy"), "SoftsignGrad": ("gradients", "features"),
}
FLOAT_MATH = set(UNARY) | set(BINARY) | set(GRADS) | {
    "ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyKerasMomentum", "ResourceApplyAdam",
    "ResourceApplyRMSProp", "ResourceApplyAdagrad", "BiasAddGrad", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "Conv2DBackpropInput",
    "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", "MaxPoolGrad",
    "AvgPoolGrad", "L2Loss", "UnsortedSegmentSum", "ScatterNd", "TensorScatterAdd", "ScatterNdNonAliasingAdd", "FusedBatchNormGradV3",
    "SegmentSum", "SegmentProd", "SegmentMean", "SegmentMin", "SegmentMax", "Bincount", "DenseBincount",
    "StatelessRandomNormalV2", "StatelessTruncatedNormalV2", "StatelessRandomNormal", "StatelessTruncatedNormal",
    "RandomStandardNormal", "TruncatedNormal",
    "BiasAdd", "BiasAddV1", "AddN", "ClipByValue", "Cross", "Sum", "Prod", "Max", "Min", "Mean", "EuclideanNorm", "MatMul", "BatchMatMulV2",
    "BatchMatMulV3", "Einsum", "Softmax", "LogSoftmax", "Conv2D", "DepthwiseConv2dNative", "MaxPool",
    "AvgPool", "FusedBatchNormV3", "_FusedConv2D", "_FusedMatMul", "Range", "Cast",
    "UnsortedSegmentProd", "UnsortedSegmentMin", "UnsortedSegmentMax", "TensorScatterSub", "TensorScatterMin",
    "TensorScatterMax", "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax",
    "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin", "ResourceScatterNdMax",
    "ResizeBilinear", "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "MirrorPadGrad", "ResizeBicubic",
    "ResizeBicubicGrad", "Cumsum", "Cumprod", "CumulativeLogsumexp",
}


FLOAT_MATH |= {new for new, old in SAME_AS.items() if old in FLOAT_MATH}


def grad_cases(op, attrs, rng):
    first, second = GRADS[op]
    extra = {"alpha": 0.15} if op == "LeakyReluGrad" else {}
    fn = lambda a, b: getattr(tf.raw_ops, op)(**{first: a, second: b}, **extra)
    for shape in [(), (7,), (3, 5, 2), (2, 0, 3), (1001,), (4099,), (64, 66)]:
        a, b = typed(attrs, floats(rng, shape)), typed(attrs, floats(rng, shape))
        if b.size >= 6:
            b.reshape(-1)[-3:] = [0.0, -0.0, 6.0]  # the edges of Relu/Relu6's gradients
        yield fn, [a, b]


def training_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    if op == "BiasAddGrad":
        # (20, 30, 30, 16): channel sums split over slices of rows (reduce_columns, two launches).
        for shape in [(3, 4), (2, 5, 7, 3), (0, 6), (70, 33), (20, 30, 30, 16)]:
            yield (lambda g: tf.raw_ops.BiasAddGrad(out_backprop=g)), [f(*shape)]
        yield (lambda g: tf.raw_ops.BiasAddGrad(out_backprop=g, data_format="NCHW")), [f(2, 3, 4, 5)]
    elif op == "SparseSoftmaxCrossEntropyWithLogits":
        it = np.int32 if attrs["Tlabels"] == "int32" else np.int64
        fn = lambda x, l: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=x, labels=l)
        # Rows up to 512 long loop in one invocation each (130 rows: past one workgroup of 64);
        # longer rows share a workgroup.
        for rows, cols in [(5, 7), (130, 10), (3, 1000), (1, 1), (0, 4)]:
            yield fn, [f(rows, cols) * 4, rng.integers(0, cols, size=rows).astype(it)]
    else:
        fn = lambda x, l: tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=x, labels=l)
        for rows, cols in [(5, 7), (130, 10), (3, 1000), (2, 1)]:
            probs = np.abs(floats(rng, (rows, cols), specials=False))
            yield fn, [f(rows, cols) * 4, typed(attrs, probs / probs.sum(axis=1, keepdims=True))]
        yield fn, [f(4, 6), typed(attrs, np.abs(floats(rng, (4, 6), specials=False)))]  # rows not summing to 1


# (TF-CPU has no dilated convolution gradients to compare with, so none are dilated.)
CONV_GRAD_CONFIGS = [  # input shape, filter shape, strides, padding, dilations
    ((2, 9, 8, 4), (3, 2, 4, 5), [1, 2, 1, 1], "SAME", [1, 1, 1, 1]),
    ((2, 9, 8, 4), (3, 2, 4, 5), [1, 2, 1, 1], "VALID", [1, 1, 1, 1]),
    ((2, 9, 8, 4), (3, 2, 4, 5), [1, 1, 2, 1], [[0, 0], [1, 2], [0, 1], [0, 0]], [1, 1, 1, 1]),
    ((2, 5, 7, 6), (1, 1, 6, 7), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    # Output channels a multiple of 4: four per invocation of the filter gradient (one slice here).
    ((2, 6, 5, 3), (2, 2, 3, 8), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    # More than 512 output pixels: the filter gradient is summed in slices (the last one partial),
    # here with one output channel per invocation, below with four.
    ((2, 24, 23, 2), (3, 3, 2, 6), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    ((3, 20, 19, 2), (3, 3, 2, 4), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    ((2, 28, 28, 1), (3, 3, 1, 16), [1, 1, 1, 1], "VALID", [1, 1, 1, 1]),
    ((3, 36, 35, 3), (3, 3, 3, 4), [1, 2, 2, 1], "SAME", [1, 1, 1, 1]),
]


def conv_grad_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    depthwise = op.startswith("Depthwise")
    forward = tf.raw_ops.DepthwiseConv2dNative if depthwise else tf.raw_ops.Conv2D
    # TF-CPU's depthwise convolution needs equal strides and filter channels equal to the input's.
    configs = [c for c in CONV_GRAD_CONFIGS if not depthwise or (c[1][2] == c[0][3] and c[2][1] == c[2][2])]
    if depthwise:
        configs += [((2, 9, 8, 3), (3, 3, 3, 2), [1, 2, 2, 1], pad, [1, 1, 1, 1]) for pad in ("SAME", "VALID")]
    for xs, ks, strides, padding, dilations in configs:
        pad, explicit = (padding, []) if isinstance(padding, str) else ("EXPLICIT", sum(padding, []))
        conv = dict(strides=strides, padding=pad, dilations=dilations)
        if not depthwise:
            conv["explicit_paddings"] = explicit
        elif pad == "EXPLICIT":
            continue
        with tf.device("/CPU:0"):
            dy_shape = forward(input=tf.zeros(xs), filter=tf.zeros(ks), **conv).shape
        if op.endswith("Input"):
            fn = lambda k, dy, xs=xs, conv=conv: getattr(tf.raw_ops, op)(input_sizes=list(xs), filter=k, out_backprop=dy, **conv)
            yield fn, [f(*ks), f(*dy_shape)]
        elif op.endswith("InputV2"):
            # The input's shape, not its values, sizes the gradient. TF-CPU has no kernel for
            # this op (nor has TF-GPU): its reference is Conv2DBackpropInput.
            fn = lambda x, k, dy, conv=conv: tf.raw_ops.Conv2DBackpropInputV2(input=x, filter=k, out_backprop=dy, **conv)
            reference = lambda x, k, dy, conv=conv: tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x), filter=k, out_backprop=dy, **conv)
            yield fn, [f(*xs), f(*ks), f(*dy_shape)], reference
        else:
            fn = lambda x, dy, ks=ks, conv=conv: getattr(tf.raw_ops, op)(input=x, filter_sizes=list(ks), out_backprop=dy, **conv)
            yield fn, [f(*xs), f(*dy_shape)]


def pool_grad_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    # Overlapping windows, then windows that do not overlap (MaxPoolGrad's one-pass-per-window
    # kernel), the last with ties inside windows.
    for xs, ksize, strides, padding in [((2, 9, 8, 3), (3, 2), (2, 2), "SAME"), ((2, 9, 8, 3), (3, 2), (2, 2), "VALID"),
                                        ((1, 6, 6, 2), (2, 2), (1, 1), "SAME"), ((2, 9, 8, 3), (2, 2), (2, 2), "SAME"),
                                        ((2, 9, 8, 3), (2, 2), (2, 2), "VALID"), ((1, 7, 8, 4), (2, 3), (3, 3), "SAME"),
                                        ((2, 6, 6, 2), (2, 2), (2, 2), "TIES")]:
        ties = padding == "TIES"
        padding = "VALID" if ties else padding
        pool = dict(ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding)
        x = np.round(f(*xs)).clip(-1, 1).astype(f(1).dtype) if ties else f(*xs)
        with tf.device("/CPU:0"):  # (in float32: TF-CPU lacks some bfloat16 pools; the max is exact)
            wide = x.astype(np.float32)
            y = tf.raw_ops.MaxPool(input=wide, **pool) if op.startswith("MaxPool") else tf.raw_ops.AvgPool(value=wide, **pool)
            y = tf.cast(y, x.dtype)
        dy = f(*y.shape)
        if op == "MaxPoolGrad":
            yield (lambda x, y, dy, pool=pool: tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy, **pool)), [x, y.numpy().astype(x.dtype), dy]
        elif op in ("MaxPoolWithArgmax", "MaxPoolGradWithArgmax"):
            # TF-GPU's flattened indices (TF-CPU follows them), within the image or the batch.
            for batch_index in (False, True):
                argmax = dict(pool, include_batch_in_index=batch_index)
                if op == "MaxPoolWithArgmax":
                    yield (lambda x, argmax=argmax: tf.raw_ops.MaxPoolWithArgmax(input=x, **argmax)), [x]
                else:
                    with tf.device("/CPU:0"):
                        indices = tf.raw_ops.MaxPoolWithArgmax(input=x.astype(np.float32), **argmax)[1].numpy()
                    yield (lambda x, dy, i, argmax=argmax: tf.raw_ops.MaxPoolGradWithArgmax(input=x, grad=dy, argmax=i, **argmax)), [x, dy, indices]
        elif op.startswith("MaxPoolGradGrad"):  # the gradient of MaxPoolGrad with respect to its grad
            ddx = f(*xs)
            if op == "MaxPoolGradGrad":
                yield (lambda x, y, g, pool=pool: tf.raw_ops.MaxPoolGradGrad(orig_input=x, orig_output=y, grad=g, **pool)), [x, y.numpy().astype(x.dtype), ddx]
            else:
                fn = lambda x, y, g, k, s, padding=padding: tf.raw_ops.MaxPoolGradGradV2(orig_input=x, orig_output=y, grad=g, ksize=k,
                                                                                        strides=s, padding=padding)
                yield fn, [x, y.numpy().astype(x.dtype), ddx, np.array(pool["ksize"], np.int32), np.array(pool["strides"], np.int32)]
        elif op == "MaxPoolGradV2":  # ksize and strides as (host-memory) tensors
            fn = lambda x, y, dy, k, s, padding=padding: tf.raw_ops.MaxPoolGradV2(orig_input=x, orig_output=y, grad=dy, ksize=k,
                                                                                   strides=s, padding=padding)
            yield fn, [x, y.numpy().astype(x.dtype), dy, np.array(pool["ksize"], np.int32), np.array(pool["strides"], np.int32)]
        else:
            yield (lambda dy, xs=xs, pool=pool: tf.raw_ops.AvgPoolGrad(orig_input_shape=list(xs), grad=dy, **pool)), [dy]


# 3-D windows: input shape, window (kd, kh, kw), strides, padding, dilations (forward only: TF-CPU's
# 3-D gradients refuse dilations; test_layouts.py ties dilated gradients to the forward op).
VOLUME_CONFIGS = [
    ((2, 5, 6, 7, 3), (2, 3, 2), (1, 1, 1), "SAME", (1, 1, 1)),
    ((1, 7, 6, 5, 2), (3, 2, 2), (2, 1, 2), "VALID", (1, 1, 1)),
    ((2, 6, 5, 7, 3), (2, 2, 3), (1, 2, 1), "SAME", (1, 1, 1)),
    ((2, 4, 4, 4, 1), (2, 2, 2), (2, 2, 2), "SAME", (1, 1, 1)),
    ((1, 7, 7, 7, 2), (2, 2, 2), (1, 1, 1), "SAME", (2, 1, 2)),
    ((0, 4, 4, 4, 2), (2, 2, 2), (1, 1, 1), "VALID", (1, 1, 1)),
]


def volume_cases(op, attrs, rng):
    """Conv3D (forward and both gradients) and the 3-D pools against TF-CPU."""
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    shape_type = np.int64 if attrs.get("Tshape") == "int64" else np.int32
    for xs, window, strides, padding, dilations in VOLUME_CONFIGS:
        dilated = dilations != (1, 1, 1)
        x = f(*xs)
        if op.startswith("Conv3D"):
            ks = (*window, xs[4], 4)
            k = f(*ks)
            conv = dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1])
            # TF-CPU's Conv3D refuses dilations where oneDNN does not serve them: its reference is
            # the undilated convolution with the filter's taps spread apart by zeros.
            spread = np.zeros([(w - 1) * d + 1 for w, d in zip(window, dilations)] + list(ks[3:]), k.dtype)
            spread[::dilations[0], ::dilations[1], ::dilations[2]] = k
            undilated = dict(conv, dilations=[1] * 5)
            with tf.device("/CPU:0"):
                y_shape = tf.raw_ops.Conv3D(input=tf.zeros(xs), filter=tf.zeros(spread.shape), **undilated).shape
            dy = f(*y_shape)
            if op == "Conv3D":
                reference = lambda x, k, undilated=undilated, spread=spread: tf.raw_ops.Conv3D(input=x, filter=spread, **undilated)
                yield (lambda x, k, conv=conv: tf.raw_ops.Conv3D(input=x, filter=k, **conv)), [x, k], reference
            elif dilated or xs[0] == 0:
                continue
            elif op == "Conv3DBackpropInputV2":
                fn = lambda s, k, dy, conv=conv: tf.raw_ops.Conv3DBackpropInputV2(input_sizes=s, filter=k, out_backprop=dy, **conv)
                yield fn, [np.array(xs, shape_type), k, dy]
            elif op == "Conv3DBackpropFilterV2":
                fn = lambda x, s, dy, conv=conv: tf.raw_ops.Conv3DBackpropFilterV2(input=x, filter_sizes=s, out_backprop=dy, **conv)
                yield fn, [x, np.array(ks, np.int32), dy]
            continue
        if dilated:
            continue
        pool = dict(ksize=[1, *window, 1], strides=[1, *strides, 1], padding=padding)
        with tf.device("/CPU:0"):  # (TF-CPU's MaxPool3D has no float16 kernel; the max is exact)
            y = tf.raw_ops.MaxPool3D(input=x.astype(np.float32), **pool).numpy().astype(x.dtype)
        dy = f(*y.shape)
        if op in ("MaxPool3D", "AvgPool3D"):
            yield (lambda x, pool=pool: getattr(tf.raw_ops, op)(input=x, **pool)), [x]
        elif op == "MaxPool3DGrad":
            yield (lambda x, y, dy, pool=pool: tf.raw_ops.MaxPool3DGrad(orig_input=x, orig_output=y, grad=dy, **pool)), [x, y, dy]
        elif op == "AvgPool3DGrad":
            yield (lambda dy, s=np.array(xs, np.int32), pool=pool: tf.raw_ops.AvgPool3DGrad(orig_input_shape=s, grad=dy, **pool)), [dy]
        elif x.size:  # MaxPool3DGradGrad (TF-CPU refuses empty tensors)
            fn = lambda x, y, g, pool=pool: tf.raw_ops.MaxPool3DGradGrad(orig_input=x, orig_output=y, grad=g, **pool)
            yield fn, [x, y, f(*xs)]


def generic_conv_cases(op, attrs, rng):
    """The generic Conv op: 2-D and 3-D, explicit padding, dilations, several batch dimensions,
    groups and channels first. TF-CPU's Conv refuses the last two and crashes on 3-D explicit
    padding: those compare with TF-CPU's Conv on merged batches, split groups, transposed or
    zero-padded inputs."""
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    conv = tf.raw_ops.Conv
    yield (lambda x, k: conv(input=x, filter=k, strides=[1, 2, 1, 1], padding="SAME")), [f(2, 7, 6, 3), f(3, 2, 3, 4)]
    yield (lambda x, k: conv(input=x, filter=k, strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0],
                             dilations=[1, 2, 1, 1])), [f(1, 6, 6, 2), f(2, 3, 2, 5)]
    yield (lambda x, k: conv(input=x, filter=k, strides=[1, 1, 2, 1, 1], padding="VALID")), [f(2, 4, 5, 5, 3), f(2, 3, 3, 3, 4)]
    x, k = f(2, 3, 5, 5, 3), f(3, 3, 3, 4)
    yield ((lambda x, k: conv(input=x, filter=k, strides=[1, 1, 1, 1], padding="SAME", batch_dims=2)), [x, k],
           lambda x, k: tf.reshape(conv(input=tf.reshape(x, [6, 5, 5, 3]), filter=k, strides=[1, 1, 1, 1], padding="SAME"),
                                   [2, 3, 5, 5, 4]))
    x, k = f(2, 5, 5, 4), f(3, 3, 2, 6)
    yield ((lambda x, k: conv(input=x, filter=k, strides=[1, 1, 1, 1], padding="SAME", groups=2)), [x, k],
           lambda x, k: tf.concat([conv(input=x[..., 2 * g:2 * g + 2], filter=k[..., 3 * g:3 * g + 3], strides=[1, 1, 1, 1],
                                        padding="SAME") for g in range(2)], -1))
    x, k = f(2, 3, 5, 6), f(3, 3, 3, 4)
    yield ((lambda x, k: conv(input=x, filter=k, strides=[1, 1, 1, 1], padding="SAME", data_format="CHANNELS_FIRST")), [x, k],
           lambda x, k: tf.transpose(conv(input=tf.transpose(x, [0, 2, 3, 1]), filter=k, strides=[1, 1, 1, 1], padding="SAME"),
                                     [0, 3, 1, 2]))
    pads = [[0, 0], [1, 0], [0, 2], [1, 1], [0, 0]]
    yield ((lambda x, k: conv(input=x, filter=k, strides=[1, 1, 2, 1, 1], padding="EXPLICIT", explicit_paddings=sum(pads, []))),
           [f(2, 4, 5, 5, 3), f(2, 3, 3, 3, 4)],
           lambda x, k: conv(input=tf.pad(x, pads), filter=k, strides=[1, 1, 2, 1, 1], padding="VALID"))


# Seeds no two stateful random cases share: TF caches an eager op's kernel, and its stream, by its
# attributes, so a repeated seed would start where an earlier case stopped.
STATEFUL_SEEDS = iter(range(1000, 10**9, 7))


def stateful_random_cases(op, attrs, rng):
    """The stateful random ops: two runs of one node (the second starts where the first stopped),
    fresh nodes for each shape, empty and scalar outputs, and the public functions under a global
    seed."""
    shape_type = np.int32 if attrs["T"] == "int32" else np.int64
    raw = getattr(tf.raw_ops, op)
    extras = [dict(dtype=attrs.get("dtype", "float32"))]
    if op == "RandomUniformInt":
        int_type = tf.as_dtype(attrs["Tout"]).as_numpy_dtype
        info = np.iinfo(int_type)
        extras = [dict(minval=np.array(lo, int_type), maxval=np.array(hi, int_type))
                  for lo, hi in [(0, 10), (-7, 1000), (info.min, info.max), (info.max - 2, info.max)]]
    for shape in [[], [5], [3, 1001], [0, 4], [2, 3, 4]]:
        for extra in extras:
            seed, seed2 = next(STATEFUL_SEEDS), next(STATEFUL_SEEDS)
            run_twice = lambda shape=shape, extra=extra, seed=seed, seed2=seed2: [
                raw(shape=np.array(shape, shape_type), seed=seed, seed2=seed2, **extra) for _ in range(2)]
            yield run_twice, []
    # A seed past 32 bits in both halves (the key's and the counter's high words).
    seed, seed2 = 2**40 + next(STATEFUL_SEEDS), -(2**35) - next(STATEFUL_SEEDS)
    yield (lambda: [raw(shape=np.array([9], shape_type), seed=seed, seed2=seed2, **extras[0]) for _ in range(3)]), []
    public = {"RandomUniform": tf.random.uniform, "RandomStandardNormal": tf.random.normal,
              "TruncatedNormal": tf.random.truncated_normal,
              "RandomUniformInt": lambda shape: tf.random.uniform(shape, -5, 17, dtype=tf.as_dtype(attrs["Tout"]))}[op]
    global_seed = next(STATEFUL_SEEDS)

    def under_global_seed():
        tf.random.set_seed(global_seed)
        return [public([4, 9]), public([4, 9])]
    yield under_global_seed, []


def where_cases(op, attrs, rng):
    """Where on sparse and dense masks of every rank 1 to 8, views, signed zeros and NaN (nonzero),
    complex values with one zero part, chunk-sized and larger inputs, and empty ones."""
    dt = tf.as_dtype(attrs["T"])
    npd = dt.as_numpy_dtype

    def mask(shape, density):
        keep = rng.random(shape) < density
        filled = values(rng, dt, shape)
        return np.where(keep, filled, np.zeros(shape, npd)).astype(npd)

    # TF-CPU's Where refuses float16: its float32 kernel on the same (exactly widened) values.
    wide = (lambda f: [lambda x: f(tf.cast(x, tf.float32))]) if dt == tf.float16 else (lambda f: [])
    for shape in [(7,), (3, 5), (2, 3, 4), (1025,), (3000,), (4, 1, 3, 1, 2), (1, 2, 1, 2, 1, 2, 1, 3), (0, 4), (5, 0)]:
        for density in [0.0, 0.3, 1.0]:
            yield tf.where, [mask(shape, density)], *wide(tf.where)
    view = lambda x: tf.where(x[1:, 2:])
    yield view, [mask((9, 10), 0.5)], *wide(view)
    if dt.is_floating:
        special = np.array([0.0, -0.0, np.nan, -np.inf, 1e-30, -1.0, 0.0, np.inf], np.float32)
        yield tf.where, [special.astype(npd)], *wide(tf.where)
    if dt.is_complex:
        yield tf.where, [np.array([0, 1j, -0.0 + 0j, 2, 0 - 0j, np.nan], npd)]


def bincount_cases(op, attrs, rng):
    """Bincount and DenseBincount: with and without weights, values at and past the size (dropped),
    sizes 0 and 1, empty inputs, many collisions, DenseBincount's matrices and binary_output."""
    dt = tf.as_dtype(attrs["T"]).as_numpy_dtype
    it = np.int32 if attrs.get("Tidx", "int32") == "int32" else np.int64
    none = np.zeros(0, dt)
    weights = lambda shape: (rng.random(shape) * 4).astype(dt) if dt == np.float32 else rng.integers(-9, 9, shape).astype(dt)
    for shape, size in [((50,), 5), ((50,), 7), ((3000,), 4), ((0,), 3), ((20,), 0), ((9,), 1)]:
        values = rng.integers(0, max(size, 1) + 2, size=shape).astype(it)
        for w in [none, weights(shape)]:
            if op == "Bincount":
                yield (lambda a, n, w: tf.raw_ops.Bincount(arr=a, size=n, weights=w)), [values, np.int32(size), w]
            else:
                for binary in (False, True):
                    yield (lambda a, n, w, b=binary: tf.raw_ops.DenseBincount(input=a, size=n, weights=w, binary_output=b)), \
                        [values, it(size), w]
    if op == "DenseBincount":
        for shape in [(4, 9), (1, 300), (6, 1)]:
            values = rng.integers(0, 7, size=shape).astype(it)
            for w in [none, weights(shape)]:
                for binary in (False, True):
                    yield (lambda a, n, w, b=binary: tf.raw_ops.DenseBincount(input=a, size=n, weights=w, binary_output=b)), \
                        [values, it(5), w]
    else:
        yield (lambda a: tf.math.bincount(a, minlength=3)), [rng.integers(0, 5, size=(4, 6)).astype(np.int32)]


def unique_cases(op, attrs, rng):
    """Unique, UniqueWithCounts and ListDiff: random bits, few distinct values (in runs and
    scattered), all equal, empty and chunk-sized inputs, and for floats NaN (never equal), signed
    zeros and subnormals (float32 and float64 merge them with zero, as TF-CPU does)."""
    dt = tf.as_dtype(attrs["T"])
    npd = dt.as_numpy_dtype
    out_idx = tf.as_dtype(attrs["out_idx"])

    def pick(pool, n, runs=False):
        draws = rng.integers(0, len(pool), n)
        return pool[np.sort(draws) if runs else draws]

    def inputs():
        for n in [0, 1, 255, 256, 257, 1025, 5000]:
            yield values(rng, dt, (n,))
            yield pick(values(rng, dt, (7,)), n)
            yield pick(values(rng, dt, (300,)), n, runs=True)
            yield np.full(n, values(rng, dt, (1,))[0], npd)
        if dt.is_floating:
            special = np.array([0.0, -0.0, np.nan, 1.0, -np.nan, 1e-40, -1e-40, 1e-310, 6e-6, -6e-6, np.inf, -np.inf])
            yield special.astype(npd)
            yield pick(special.astype(npd), 3000)

    if op == "ListDiff":
        xs = list(inputs())
        for k, x in enumerate(xs):
            other = xs[(k * 5 + 3) % len(xs)]
            ys = [x[: len(x) // 2], other, np.zeros(0, npd)]
            for y in ys:
                yield (lambda a, b: tf.raw_ops.ListDiff(x=a, y=b, out_idx=out_idx)), [x, y]
        return
    fn = getattr(tf.raw_ops, op)
    for x in inputs():
        yield (lambda a: fn(x=a, out_idx=out_idx)), [x]


def random_cases(op, attrs, rng):
    if not op.startswith("Stateless"):
        yield from stateful_random_cases(op, attrs, rng)
        return
    int_type = np.int32 if attrs.get("Tseed", attrs.get("Tshape")) == "int32" else np.int64
    raw = getattr(tf.raw_ops, op)
    if op == "StatelessRandomGetAlg":
        yield raw, []
        return
    if op in ("StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg"):
        for seed in [(0, 0), (1, 2), (-7, 2**31 - 1)]:
            yield (lambda s: raw(seed=s)), [np.array(seed, int_type)]
        return
    dtype = tf.as_dtype(attrs["dtype"])
    bounds = {}
    if "UniformInt" in op:
        # Narrow, wide, negative and whole-type ranges (a range past half the type wraps lo + bits %
        # range around).
        info = np.iinfo(dtype.as_numpy_dtype)
        bounds = [dict(minval=np.array(lo, dtype.as_numpy_dtype), maxval=np.array(hi, dtype.as_numpy_dtype))
                  for lo, hi in [(0, 10), (max(info.min, -7), 1000), (info.min, info.max), (info.max - 2, info.max)]]
    if not op.endswith("V2"):
        shape_type = np.int32 if attrs["T"] == "int32" else np.int64
        for seed, shape in [((1, 2), []), ((3, -4), [5]), ((-5, 2**31 - 1), [3, 1001]), ((7, 8), [0, 4])]:
            for extra in bounds or [dict(dtype=dtype)]:
                yield (lambda s, shape=shape, extra=extra: raw(shape=np.array(shape, shape_type), seed=s, **extra)), \
                    [np.array(seed, int_type)]
        if op in PUBLIC_STATELESS:
            yield (lambda: PUBLIC_STATELESS[op]([4, 9], seed=[11, 12])), []
        return
    if bounds or "FullInt" in op:
        for seed, shape in [((1, 2), [7]), ((5, 6), [3, 1001]), ((7, 8), [0, 4])]:
            with tf.device("/CPU:0"):
                key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=np.array(seed, int_type))
            for extra in bounds or [dict(dtype=dtype)]:
                yield (lambda k, c, shape=shape, extra=extra: raw(shape=np.array(shape, int_type), key=k, counter=c,
                                                                   alg=1, **extra)), [key.numpy(), counter.numpy()]
        if op == "StatelessRandomUniformIntV2":
            yield (lambda: tf.random.stateless_uniform([4, 9], seed=[11, 12], minval=-3, maxval=9, dtype=dtype)), []
        return
    for seed, shape, alg in [((1, 2), [], 1), ((3, 4), [5], 3), ((5, 6), [3, 1001], 1), ((7, 8), [0, 4], 1)]:
        with tf.device("/CPU:0"):
            key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=np.array(seed, int_type))
        fn = lambda k, c, shape=shape, alg=alg: raw(shape=np.array(shape, int_type), key=k, counter=c, alg=alg)
        yield fn, [key.numpy(), counter.numpy()]
    # A counter about to carry across its 32-bit words.
    edge = np.array([2**64 - 3, 2**32 - 1], np.uint64)
    yield (lambda k, c: raw(shape=np.array([37], int_type), key=k, counter=c, alg=1)), [np.array([12345], np.uint64), edge]
    # The public API, which chains both ops.
    public = {"StatelessRandomUniformV2": tf.random.stateless_uniform, "StatelessRandomNormalV2": tf.random.stateless_normal,
              "StatelessTruncatedNormalV2": tf.random.stateless_truncated_normal}[op]
    yield (lambda: public([4, 9], seed=[11, 12])), []


# The public functions that call the first-generation stateless ops.
PUBLIC_STATELESS = {
    "StatelessRandomUniform": lambda shape, seed: tf.compat.v1.random.stateless_uniform(shape, seed),
    "StatelessRandomNormal": lambda shape, seed: tf.compat.v1.random.stateless_normal(shape, seed),
    "StatelessTruncatedNormal": lambda shape, seed: tf.compat.v1.random.stateless_truncated_normal(shape, seed),
}


def scatter_and_loss_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    if op == "L2Loss":
        for shape in [(), (7,), (3, 5, 2), (2, 0, 3), (300, 41)]:
            yield tf.nn.l2_loss, [f(*shape)]
        return
    it = np.int32 if attrs["Tindices"] == "int32" else np.int64
    if op.startswith("UnsortedSegment"):
        st = np.int32 if attrs["Tnumsegments"] == "int32" else np.int64
        fn = lambda d, i, n: getattr(tf.raw_ops, op)(data=d, segment_ids=i, num_segments=n)
        # Repeated and skipped segments (empty ones hold the reduction's identity); negative ids are
        # dropped.
        yield fn, [f(7, 3), np.array([0, 2, 2, -1, 4, 0, 2], it), np.array(6, st)]
        yield fn, [f(4, 5, 2), rng.integers(-1, 3, size=(4, 5)).astype(it), np.array(3, st)]
        # Many collisions (for a product, factors near 1, so that 100 of them stay finite and normal).
        near_one = lambda: typed(attrs, np.exp(floats(rng, (1000,), specials=False) / 30))
        many = near_one() if op == "UnsortedSegmentProd" else f(1000)
        yield fn, [many, rng.integers(0, 10, size=1000).astype(it), np.array(10, st)]
        yield fn, [f(0, 3), np.zeros(0, it), np.array(2, st)]
        yield fn, [f(2, 3), np.array([1, 0], it), np.array(0 + 2, st)]
        dt = tf.as_dtype(attrs["T"])
        if dt.is_integer:
            # The type's extremes among random bit patterns: sums and products wrap, Min and Max
            # compare signed or unsigned.
            yield fn, [integers(rng, dt, (300, 2)), rng.integers(-1, 7, size=300).astype(it), np.array(8, st)]
        return
    if op in ("SegmentSum", "SegmentProd", "SegmentMin", "SegmentMax", "SegmentMean"):
        fn = lambda d, i: getattr(tf.raw_ops, op)(data=d, segment_ids=i)
        # Repeats, skipped (empty) segments, one segment, a leading gap, no rows; NaN/Inf in data.
        yield fn, [f(7, 3), np.array([0, 0, 2, 2, 2, 5, 5], it)]
        # (NaN in a Min or Max: TF-CPU's answer depends on the order; Inf is fine.)
        yield fn, [typed(attrs, floats(rng, (6, 2, 2), specials=op not in ("SegmentMin", "SegmentMax"))),
                   np.array([1, 1, 1, 3, 4, 4], it)]
        yield fn, [typed(attrs, np.array([[np.inf, -np.inf], [1.0, 2.0], [-np.inf, np.inf]], np.float32)),
                   np.array([0, 0, 2], it)]
        yield fn, [f(5), np.zeros(5, it)]
        yield fn, [f(0, 4), np.zeros(0, it)]
        near_one = typed(attrs, np.exp(floats(rng, (1000,), specials=False) / 30))
        yield fn, [near_one, np.sort(rng.integers(0, 40, size=1000)).astype(it)]
        return
    if op == "ScatterNd":
        fn = lambda i, u, s: tf.scatter_nd(i, u, s)
        yield fn, [np.array([[0], [3], [0], [2]], it), f(4, 5), np.array([5, 5], it)]
        yield fn, [rng.integers(0, 3, size=(6, 2)).astype(it), f(6, 4), np.array([3, 3, 4], it)]
        yield fn, [np.array([[1, 2, 0], [1, 2, 0]], it), f(2), np.array([2, 3, 2], it)]  # full depth, duplicates
        yield fn, [rng.integers(0, 4, size=(2, 3, 1)).astype(it), f(2, 3, 7), np.array([4, 7], it)]
        if tf.as_dtype(attrs["T"]).is_integer:
            # Duplicates at the type's extremes: sums wrap.
            yield fn, [rng.integers(0, 3, size=(40, 1)).astype(it), integers(rng, tf.as_dtype(attrs["T"]), (40, 2)),
                       np.array([3, 2], it)]
        return
    fn = lambda t, i, u: getattr(tf.raw_ops, op)(tensor=t, indices=i, updates=u)
    if op == "TensorScatterUpdate":
        # Any whole-word dtype, bit patterns and all; unique index tuples (with repeated ones one
        # update wins, in no defined order).
        v = lambda *s: values(rng, attrs["T"], s)
        yield fn, [v(5, 4), np.array([[0], [3], [1]], it), v(3, 4)]
        yield fn, [v(3, 3, 2), np.argwhere(np.ones((3, 3)))[rng.permutation(9)[:5]].astype(it), v(5, 2)]
        yield fn, [v(4), np.array([[1], [3]], it), v(2)]
        yield fn, [v(2, 3, 2), np.array([[1, 2, 0], [0, 0, 1]], it), v(2)]  # full depth
        yield fn, [v(2, 3), np.zeros((0, 1), it), v(0, 3)]  # no updates
        yield fn, [v(7, 3), np.array([[6], [1], [3]], it), v(3, 3)]  # odd rows: lanes of shared words
        return
    if op == "ScatterNdNonAliasingAdd":
        fn = lambda t, i, u: tf.raw_ops.ScatterNdNonAliasingAdd(input=t, indices=i, updates=u)
    # Add, Sub, Min, Max: repeated index tuples combine.
    yield fn, [f(5, 4), np.array([[0], [3], [0]], it), f(3, 4)]
    yield fn, [f(3, 3, 2), rng.integers(0, 3, size=(5, 2)).astype(it), f(5, 2)]
    yield fn, [f(4), np.array([[1], [1], [3]], it), f(3)]
    dt = tf.as_dtype(attrs["T"])
    if dt.is_integer:
        # Duplicates at the type's extremes: sums wrap, extremes compare signed or unsigned.
        yield fn, [integers(rng, dt, (3, 2)), rng.integers(0, 3, size=(40, 1)).astype(it), integers(rng, dt, (40, 2))]


def integers(rng, dtype, shape):
    """Random bit patterns of an integer (or bool) dtype, with its extremes, 0, 1 and -1 among them."""
    x = values(rng, dtype, shape)
    if dtype != tf.bool and x.size >= 8:
        info = np.iinfo(x.dtype)
        edges = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.min + 1, info.max - 1, 3], x.dtype)
        x.reshape(-1)[rng.choice(x.size, size=8, replace=False)] = edges
    return x


INTEGER_SHAPES = [((4099,), (4099,)), ((), (5, 7)), ((3, 1, 5), (4, 1)), ((2, 1, 3, 1, 2), (1, 3, 1, 2, 1)),
                  ((6, 0), (1, 0)), ((7,), (7,))]


def integer_binary_cases(op, dt, rng):
    """Every integer dtype's binary ops and comparisons: sizes that leave part of a word, broadcasts,
    wrap-around at the extremes. TF-CPU refuses zero divisors and negative integer powers, and traps
    on INT64_MIN / -1: those are left out (the plugin's answers are documented in integer.wgsl)."""
    fn = BINARY.get(op) or COMPARE[op]
    npd = dt.as_numpy_dtype
    for a, b in INTEGER_SHAPES + [broadcast_pair(rng), broadcast_pair(rng)]:
        x, y = integers(rng, dt, a), integers(rng, dt, b)
        if op in ("Div", "TruncateDiv", "FloorDiv", "FloorMod", "TruncateMod"):
            y = np.where(y == 0, np.array(1, npd), y)
            if dt == tf.int64:
                y = np.where(y == -1, np.array(-3, npd), y)
        if op == "Pow":
            y = (np.abs(y.astype(np.int64) % 70)).astype(npd)
        yield fn, [x, y]
    if op in ("LeftShift", "RightShift"):  # amounts past the width and negative ones
        bits = np.dtype(npd).itemsize * 8
        y = np.array([0, 1, bits - 1, bits, bits + 1, 2 * bits + 3] + ([-1, -bits] if dt.min < 0 else []), npd)
        yield fn, [integers(rng, dt, y.shape), y]
    if op in ("FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Div") and dt.min < 0:
        x = np.array([7, -7, 7, -7, 6, -6, dt.min, dt.max], npd)
        y = np.array([2, 2, -2, -2, 3, -3, 3, -1], npd)
        yield fn, [x, y]


def complex_values(rng, dtype, shape):
    """Complex numbers with normal parts, and NaN, inf, -0.0 and zeros among them."""
    dtype = tf.as_dtype(dtype)
    v = (rng.standard_normal(shape) * 3 + 1j * rng.standard_normal(shape) * 3).astype(dtype.as_numpy_dtype)
    if v.size >= 8:
        flat = v.reshape(-1)
        flat[rng.choice(v.size, size=5, replace=False)] = [complex(np.nan, 1), complex(np.inf, -2), complex(-0.0, 0.0), 0, complex(1, -np.inf)]
    return v


COMPLEX_OPS = {"Real": tf.math.real, "Imag": tf.math.imag, "Conj": tf.math.conj, "ComplexAbs": tf.math.abs,
               "Angle": tf.math.angle, "Complex": tf.complex}


def complex_cases(op, attrs, rng):
    """Real, Imag, Conj, Complex, ComplexAbs, Angle, and the complex rows of Neg and the arithmetic."""
    shapes = [(), (7,), (3, 5, 2), (2, 0), (4099,)]
    if op == "Complex":
        part = tf.as_dtype(attrs["T"])
        for a, b in INTEGER_SHAPES:
            yield tf.complex, [floats(rng, a).astype(part.as_numpy_dtype), floats(rng, b).astype(part.as_numpy_dtype)]
        return
    dt = tf.as_dtype(attrs["T"])
    if op in BINARY:
        for a, b in INTEGER_SHAPES + [broadcast_pair(rng)]:
            x, y = complex_values(rng, dt, a), complex_values(rng, dt, b)
            if op in ("Div", "RealDiv"):
                y = np.where(y == 0, np.array(1 + 1j, y.dtype), y)
            yield BINARY[op], [x, y]
        return
    fn = COMPLEX_OPS.get(op) or UNARY[op]
    for shape in shapes:
        yield fn, [complex_values(rng, dt, shape)]


def unary_cases(op, attrs, rng):
    fn = UNARY[op]
    dt = tf.as_dtype(attrs["T"])
    if dt.is_complex:
        yield from complex_cases(op, attrs, rng)
        return
    if dt.is_integer or dt == tf.bool:
        for shape in [(), (7,), (4099,), (3, 5, 2), (2, 0)]:
            yield fn, [integers(rng, dt, shape)]
        return
    for _ in range(4):
        yield fn, [typed(attrs, floats(rng, random_shape(rng)))]
    yield fn, [typed(attrs, floats(rng, (2, 0, 3)))]
    yield fn, [typed(attrs, floats(rng, (1000,), scale=0.01))]  # near zero: expm1/log1p precision
    # From 4096 elements the vec4 kernel runs, with 3 or 0 elements left over.
    yield fn, [typed(attrs, floats(rng, (4099,)))]
    yield fn, [typed(attrs, floats(rng, (64, 66)))]
    if dt == tf.float64 and op in SPECIAL_OPS:
        # Arguments with all 53 bits, tiny to large (both signs), and the moderate range where the
        # functions switch between their series, polynomials and asymptotic forms.
        wide = np.exp(rng.uniform(-30, 6, size=2000)) * rng.choice([-1.0, 1.0], size=2000)
        yield fn, [np.concatenate([wide, rng.uniform(0.0, 80.0, size=2000), rng.uniform(-1.0, 1.0, size=1000)])]
    if op in ("Ndtri", "Erfinv"):
        # Their domains, (0, 1) and (-1, 1), to the ends, and both sides of Ndtri's switch at exp(-2).
        lo = -1.0 if op == "Erfinv" else 0.0
        inside = rng.uniform(lo, 1.0, size=3000).astype(np.float32)
        tails = np.array([lo, 1.0, np.nextafter(np.float32(lo), np.float32(1)), np.nextafter(np.float32(1), np.float32(0)),
                          1e-30, 1e-10, 0.1353352832, 0.8646647168, 0.5, 2.0, -2.0], np.float32)
        yield fn, [typed(attrs, np.concatenate([inside, tails]))]


def binary_cases(op, attrs, rng):
    fn = BINARY[op]
    dt = tf.as_dtype(attrs["T"])
    if dt.is_complex:
        yield from complex_cases(op, attrs, rng)
        return
    if dt.is_integer:
        yield from integer_binary_cases(op, dt, rng)
        if dt == tf.int64 and op in ("FloorMod", "FloorDiv"):  # signs, exact multiples
            yield fn, [np.array([2**32 - 1, -1, 2**63 - 1, -(2**63), 21, -21, 21, -21, 5], np.int64),
                       np.array([1, 3, -7, 7, 7, 7, -4, -4, 2**40], np.int64)]
        return
    for _ in range(6):
        a, b = broadcast_pair(rng)
        yield fn, [typed(attrs, floats(rng, a)), typed(attrs, floats(rng, b))]
    yield fn, [typed(attrs, floats(rng, (0, 3))), typed(attrs, floats(rng, (1, 3)))]
    yield fn, [typed(attrs, floats(rng, (257,))), typed(attrs, floats(rng, (257,)))]
    # From 4096 elements the vec4 kernel runs: one shape with 0 or 3 elements left over, a scalar,
    # or a row over the trailing dimensions of a multiple of 4 elements (either operand, leading 1s,
    # two dimensions); a row of 66 takes the broadcasting kernel.
    for a, b in [((4099,), (4099,)), ((64, 66), (64, 66)), ((), (70, 61)), ((4101,), ()), ((1, 1), (50, 90)),
                 ((70, 64), (64,)), ((1, 40), (120, 40)), ((3, 50, 40), (50, 40)), ((70, 66), (66,))]:
        yield fn, [typed(attrs, floats(rng, a)), typed(attrs, floats(rng, b))]
    # Broadcasts that no merging of dimensions shortens: pipelines for ranks up to 4 and up to 8
    # (`RANK`), the dimensions past the real rank padded.
    for a, b in [((2, 1, 3), (1, 4, 1)), ((2, 1, 3, 1, 2), (1, 3, 1, 2, 1))]:
        yield fn, [typed(attrs, floats(rng, a)), typed(attrs, floats(rng, b))]
    if op in SPECIAL_BINARY:
        # Their domains: positive shapes and points (the Gamma family), orders and arguments past 1
        # (Zeta), whole orders (Polygamma); each from tiny to large, on both sides of the switch
        # between the series and the continued fraction.
        a = np.exp(rng.uniform(-4, 5, size=(40, 30))).astype(np.float32)
        x = np.exp(rng.uniform(-5, 5, size=(40, 30))).astype(np.float32)
        if op == "Zeta":
            a = 1.0 + a
        if op == "Polygamma":
            a = rng.integers(0, 6, size=(40, 30)).astype(np.float32)
        if dt == tf.float64:
            # All 53 bits of the arguments (Polygamma's orders stay whole).
            x = x.astype(np.float64) * (1.0 + rng.uniform(-1e-3, 1e-3, size=x.shape))
            if op != "Polygamma":
                a = a.astype(np.float64) * (1.0 + rng.uniform(-1e-3, 1e-3, size=a.shape))
        yield fn, [typed(attrs, a), typed(attrs, x)]
        yield fn, [typed(attrs, np.array([0.5, 1.0, 3.0, 2.0, 0.0, -1.0, np.inf, np.nan, 1.0], np.float32)),
                   typed(attrs, np.array([0.0, 1.0, 2.5, 2.0, 1.0, 1.0, 1.0, 1.0, np.inf], np.float32))]
    if op == "NextAfter":
        yield fn, [np.array([0.0, -0.0, 1.0, 1.0, -1.0, np.inf, 3.4028235e38, 1e-45, np.nan], np.float32),
                   np.array([1.0, -1.0, 2.0, 0.0, -np.inf, 0.0, np.inf, 0.0, 1.0], np.float32)]
    if op in ("FloorMod", "FloorDiv"):
        # x just below a multiple of y (x / y rounds up to an integer) and exponents far apart:
        # fmod must be exact here, not x - y * trunc(x / y). (No subnormals: WGSL lets GPUs flush
        # them to zero, and lavapipe does.)
        dt = np.dtype(attrs["T"])
        y = typed(attrs, floats(rng, (64,), specials=False))
        k = (rng.integers(1, 40, size=64) * rng.choice([-1, 1], size=64)).astype(dt)
        x = np.nextafter((k * y).astype(dt), np.array(-np.inf, dt))
        edge_x = np.array([3e4, -3e4, 6e4, 1.0, -2.5, 1000.5], dt)
        edge_y = np.array([7e-3, 1e-3, -3e-4, 1.0, 0.5, -0.25], dt)
        yield fn, [np.concatenate([x, edge_x]), np.concatenate([y, edge_y])]


def compare_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs["T"])
    if dt.is_integer or dt == tf.bool:
        yield from integer_binary_cases(op, dt, rng)
        x = integers(rng, dt, (5, 7))
        yield COMPARE[op], [x, x.copy()]
        return
    for _ in range(5):
        a, b = broadcast_pair(rng)
        x, y = typed(attrs, floats(rng, a)), typed(attrs, floats(rng, b))
        yield COMPARE[op], [x, y]
    x = typed(attrs, floats(rng, (5, 7)))
    yield COMPARE[op], [x, x.copy()]


DIAG_ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]


def diag_cases(op, attrs, rng):
    """The diagonal ops in every generation: single diagonals and bands (k = [lo, hi]) above, below
    and across the main one, every alignment, inferred and explicit sizes, batches, non-square and
    empty matrices, a padding value; Diag and DiagPart of ranks 1 to 3."""
    dt = attrs["T"]
    v = lambda *shape: values(rng, dt, shape)
    raw = getattr(tf.raw_ops, op)
    aligns = DIAG_ALIGNS if op.endswith("V3") else [None]
    extra = lambda align: {} if align is None else {"align": align}
    if op == "Diag":
        for shape in [(4,), (2, 3), (2, 1, 2), (0,)]:
            yield (lambda d: raw(diagonal=d)), [v(*shape)]
        return
    if op == "DiagPart":
        for shape in [(4, 4), (2, 3, 2, 3), (1, 2, 2, 1, 2, 2), (0, 0)]:
            yield (lambda x: raw(input=x)), [v(*shape)]
        return
    if op == "MatrixDiag":
        for shape in [(4,), (3, 5), (0,), (2, 0)]:
            yield (lambda d: raw(diagonal=d)), [v(*shape)]
        return
    if op == "MatrixDiagPart":
        for shape in [(4, 4), (3, 5, 2), (2, 3, 6), (0, 3)]:
            yield (lambda x: raw(input=x)), [v(*shape)]
        return
    if op == "MatrixSetDiag":
        for shape in [(4, 4), (3, 5, 2), (2, 3, 6)]:
            yield (lambda x, d: raw(input=x, diagonal=d)), [v(*shape), v(*shape[:-2], min(shape[-2:]))]
        return
    for align in aligns:
        for (rows, cols), (lo, hi) in [((4, 4), (0, 0)), ((4, 6), (-2, 1)), ((5, 3), (1, 2)), ((5, 3), (-4, -1)),
                                       ((3, 7), (-1, 5)), ((2, 2), (-1, -1))]:
            k = np.array([lo, hi], np.int32) if lo != hi else np.int32(lo)
            length = min(rows + min(hi, 0), cols - max(lo, 0))
            band = (hi - lo + 1,) if lo != hi else ()
            if op.startswith("MatrixDiagPart"):
                yield (lambda x, p, k=k, a=align: raw(input=x, k=k, padding_value=p, **extra(a))), [v(2, rows, cols), v()]
            elif op.startswith("MatrixSetDiag"):
                yield (lambda x, d, k=k, a=align: raw(input=x, diagonal=d, k=k, **extra(a))), \
                    [v(2, rows, cols), v(2, *band, length)]
            elif (rows, cols) == (4, 4):
                # An empty diagonal: a matrix of padding alone.
                yield (lambda d, p, a=align: raw(diagonal=d, k=np.int32(-2), num_rows=np.int32(-1),
                                                 num_cols=np.int32(-1), padding_value=p, **extra(a))), [v(0), v()]
            else:
                for r, c in [(-1, -1), (rows, cols), (rows, -1), (-1, cols)]:
                    yield (lambda d, p, k=k, r=r, c=c, a=align: raw(diagonal=d, k=k, num_rows=np.int32(r),
                                                                     num_cols=np.int32(c), padding_value=p,
                                                                     **extra(a))), [v(3, *band, length), v()]


def sort_cases(op, attrs, rng):
    """TopK (ties by lower index, Inf at both ends, k from 0 to the row's length, batches, empty
    batches, long rows: ranked, and sorted past one invocation's loop), InTopK (ties with the
    target, out-of-range and negative targets, a non-finite target prediction, k of 0 and past the
    row, rows counted in chunks), searchsorted (repeats, values outside
    the rows, an empty row) and Bucketize (boundaries with repeats, values on them, Inf)."""
    if op == "TopKV2":
        dt = tf.as_dtype(attrs["T"])
        if dt.is_integer:
            # The type's extremes, ties, and values whose order differs signed and unsigned.
            small = rng.integers(0, 5, size=(3, 33)).astype(dt.as_numpy_dtype)
            xs = [integers(rng, dt, (4, 5, 9)), small, integers(rng, dt, (0, 6)), integers(rng, dt, (2, 3000)),
                  rng.integers(0, 100, size=(1, 70000)).astype(dt.as_numpy_dtype)]
        else:
            tied = np.array([[3, 1, 3, 2, -np.inf, np.inf, 1, 0, -0.0, 2]], np.float32)
            xs = [typed(attrs, x) for x in [tied, floats(rng, (4, 5, 9), specials=False),
                                            np.round(floats(rng, (3, 33), specials=False)),
                                            floats(rng, (0, 6), specials=False), floats(rng, (2, 3000), specials=False),
                                            np.round(floats(rng, (1, 70000), specials=False), 1)]]
        for x in xs:
            for k in sorted({0, 1, 3, x.shape[-1]} & set(range(x.shape[-1] + 1))):
                yield (lambda t, k=k: tf.raw_ops.TopKV2(input=t, k=np.int32(k))), [x]
        return
    if op in ("InTopKV2", "InTopK"):
        it = np.int32 if attrs["T"] == "int32" else np.int64
        pred = np.round(floats(rng, (8, 6), specials=False))
        pred[3, 2] = np.nan
        pred[4, 1] = np.inf
        targets = np.array([0, 5, 2, 2, 1, -1, 6, 3], it)
        # Rows longer than one invocation's loop: counts in chunks.
        long_pred = np.round(floats(rng, (3, 70000), specials=False), 1)
        long_targets = np.array([0, 69999, 12345], it)
        for (p_, t_), k in [((pred, targets), k) for k in (0, 1, 2, 3, 6, 7, -1)] + [
                ((long_pred, long_targets), k) for k in (1, 100, 5000, 69999)]:
            if op == "InTopK":
                yield (lambda p, t, k=k: tf.raw_ops.InTopK(predictions=p, targets=t, k=k)), [p_, t_]
            else:
                yield (lambda p, t, k=k: tf.raw_ops.InTopKV2(predictions=p, targets=t, k=it(k))), [p_, t_]
        return
    if op in ("LowerBound", "UpperBound"):
        out_type = tf.as_dtype(attrs["out_type"])
        fn = lambda s, v: getattr(tf.raw_ops, op)(sorted_inputs=s, values=v, out_type=out_type)
        rows = typed(attrs, np.sort(np.round(floats(rng, (3, 40), specials=False)), axis=1))
        yield fn, [rows, typed(attrs, np.round(floats(rng, (3, 25), specials=False)))]
        yield fn, [rows, typed(attrs, np.array([[-np.inf, np.inf, rows[0, 0]], [rows[1, 5], rows[1, 39], 100.0],
                                                [rows[2, 20], -100.0, 0.0]], np.float32))]
        dt = tf.as_dtype(attrs["T"])
        if dt.is_integer:
            # The type's extremes and ties; unsigned types order their high bit above the rest.
            int_rows = np.sort(integers(rng, dt, (3, 40)), axis=1)
            int_rows[:, 10:14] = int_rows[:, 10:11]
            int_values = integers(rng, dt, (3, 25))
            int_values[:, :3] = int_rows[:, [0, 10, 39]]
            yield fn, [int_rows, int_values]
            yield fn, [np.zeros((2, 0), dt.as_numpy_dtype), integers(rng, dt, (2, 3))]
            return
        rows = typed(attrs, np.sort(np.round(floats(rng, (3, 40), specials=False)), axis=1))
        yield fn, [rows, typed(attrs, np.round(floats(rng, (3, 25), specials=False)))]
        yield fn, [rows, typed(attrs, np.array([[-np.inf, np.inf, rows[0, 0]], [rows[1, 5], rows[1, 39], 100.0],
                                                [rows[2, 20], -100.0, 0.0]], np.float32))]
        yield fn, [typed(attrs, np.zeros((2, 0), np.float32)), typed(attrs, floats(rng, (2, 3), specials=False))]
        yield fn, [rows, typed(attrs, np.zeros((3, 0), np.float32))]
        if dt == tf.float64:
            # Rows and values apart by less than float32 resolves, -0 beside +0, and NaN values.
            fine = np.sort(1.0 + rng.integers(-50, 50, size=(2, 30)) * 2.0 ** -40, axis=1)
            fine[0, :3] = [-0.0, 0.0, 0.0]
            near = np.concatenate([fine[:, ::3] + 2.0 ** -41, fine[:, ::4] - 2.0 ** -41,
                                   [[0.0, -0.0, np.nan], [np.nan, 1.0, -1.0]]], axis=1)
            yield fn, [fine, near]
        return
    # Bucketize: TF compares each value with each (float32) boundary in C++, a float64 value with the
    # boundary widened, an integer converted to float.
    dt = tf.as_dtype(attrs["T"])
    if dt.is_integer:
        x = np.concatenate([np.round(floats(rng, (200,), specials=False) * 3),
                            [0, 1, -1, 2**24, 2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**31 - 1, -(2**31)]])
        x = x.astype(dt.as_numpy_dtype)
        if dt == tf.int64:
            x = np.concatenate([x, np.array([2**62, -(2**63), 2**63 - 1, 2**40 + 1], np.int64)])
        for boundaries in ([], [0.0], [-1.0, 0.0, 0.0, 1.0, 2.5, 10.0], [16777216.0, 16777218.0, 2.0**31]):
            yield (lambda t, b=boundaries: tf.raw_ops.Bucketize(input=t, boundaries=b)), [x]
        return
    x = np.concatenate([floats(rng, (200,), specials=False), [0.0, 1.0, -1.0, np.inf, -np.inf, 2.5]]).astype(np.float32)
    x = typed(attrs, x)
    if dt == tf.float64:
        # Just below a boundary by less than float32 resolves; 0.1 below float32's 0.1; NaN.
        x = np.concatenate([x, [1.0 - 2.0 ** -40, 1.0 + 2.0 ** -40, 0.1, -0.0, np.nan, 2.5 - 1e-12]])
    for boundaries in ([], [0.0], [-1.0, 0.0, 0.0, 1.0, 2.5, 10.0], list(np.linspace(-3, 3, 50)), [0.0, np.nan, 1.0],
                       [0.1, 1.0]):
        yield (lambda t, b=boundaries: tf.raw_ops.Bucketize(input=t, boundaries=b)), [x]
    yield (lambda t: tf.raw_ops.Bucketize(input=t, boundaries=[0.0, 1.0])), [x.reshape(2, -1)]


def approximate_equal_cases(op, attrs, rng):
    """ApproximateEqual: |x - y| < tolerance at the bound, just inside and outside it, with NaN and
    infinities, for several tolerances (the default 1e-5 among them)."""
    fn = lambda x, y, t: tf.raw_ops.ApproximateEqual(x=x, y=y, tolerance=t)
    for tolerance in (1e-5, 0.5, 0.0):
        for shape in [(), (7,), (3, 5, 2), (2, 0), (4099,)]:
            x = typed(attrs, floats(rng, shape))
            y = x + typed(attrs, (floats(rng, shape, specials=False) * tolerance).astype(np.float32))
            yield (lambda x, y, t=tolerance: fn(x, y, t)), [x, y]
        x = typed(attrs, np.array([1.0, 1.0, 1.0, np.inf, np.nan, 0.0], np.float32))
        y = typed(attrs, np.array([1.0 + tolerance, 1.0 - tolerance / 2, 1.0, np.inf, np.nan, -0.0], np.float32))
        yield (lambda x, y, t=tolerance: fn(x, y, t)), [x, y]
        if attrs["T"] == "float64":
            # The float32 tolerance widened exactly: a difference of it counts, one ulp more does not
            # (float32 math would round both to the bound).
            bound = float(np.float32(tolerance))
            x = np.array([0.5, 0.5, 0.5, 0.5])
            y = np.array([0.5 + bound, np.nextafter(0.5 + bound, 2.0), 0.5 - bound, np.nextafter(0.5 - bound, -2.0)])
            yield (lambda x, y, t=tolerance: fn(x, y, t)), [x, y]


def classify_cases(op, attrs, rng):
    fn = {"IsNan": tf.math.is_nan, "IsInf": tf.math.is_inf, "IsFinite": tf.math.is_finite}[op]
    for shape in [(), (5,), (3, 7), (2, 3, 0), (1001,)]:
        yield fn, [typed(attrs, floats(rng, shape))]


def logical_cases(op, attrs, rng):
    if op == "LogicalNot":
        for shape in [(), (7,), (3, 5, 2)]:
            yield tf.logical_not, [values(rng, tf.bool, shape)]
        return
    fn = tf.logical_and if op == "LogicalAnd" else tf.logical_or
    for _ in range(5):
        a, b = broadcast_pair(rng)
        yield fn, [values(rng, tf.bool, a), values(rng, tf.bool, b)]


def select_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs["T"])
    if op == "SelectV2":
        for _ in range(4):
            a, b = broadcast_pair(rng)
            yield tf.where, [values(rng, tf.bool, a), values(rng, dt, b), values(rng, dt, a)]
    else:
        shape = (4, 3, 2)
        yield (lambda c, x, y: tf.raw_ops.Select(condition=c, x=x, y=y)), [values(rng, tf.bool, shape), values(rng, dt, shape), values(rng, dt, shape)]
        yield (lambda c, x, y: tf.raw_ops.Select(condition=c, x=x, y=y)), [values(rng, tf.bool, (4,)), values(rng, dt, shape), values(rng, dt, shape)]


def misc_math_cases(op, attrs, rng):
    def f(*args, **kwargs):  # in the kernel's float type
        return typed(attrs, floats(*args, **kwargs))

    if op in ("BiasAdd", "BiasAddV1"):
        for shape in [(3, 4), (2, 5, 7, 3), (0, 6)]:
            yield (lambda v, b: getattr(tf.raw_ops, op)(value=v, bias=b)), [f(rng, shape), f(rng, shape[-1:])]
    elif op == "AddN":
        shape = random_shape(rng)
        yield (lambda a, b, c: tf.add_n([a, b, c])), [f(rng, shape) for _ in range(3)]
        yield (lambda a: tf.add_n([a])), [f(rng, (5,))]
    elif op == "Cross":
        for shape in [(3,), (4, 3), (2, 5, 3), (0, 3), (700, 3)]:
            yield tf.linalg.cross, [f(rng, shape), f(rng, shape)]
    elif op == "ClipByValue":
        lo, hi = typed(attrs, np.array(-1.5, np.float32)), typed(attrs, np.array(2.0, np.float32))
        yield (lambda a, lo, hi: tf.clip_by_value(a, lo, hi)), [f(rng, (4, 6)), lo, hi]
        yield (lambda a, lo, hi: tf.clip_by_value(a, lo, hi)), [f(rng, (4, 6)), f(rng, (4, 6), specials=False) - typed(attrs, np.array(3, np.float32)), hi]


def cast_cases(op, attrs, rng):
    src, dst = tf.as_dtype(attrs["SrcT"]), tf.as_dtype(attrs["DstT"])
    narrow = (tf.int8, tf.uint8, tf.int16, tf.uint16, tf.uint32, tf.uint64)
    if src == tf.bool:
        x = values(rng, tf.bool, (5, 301))
    elif src.is_complex:
        # The real part converts (TF drops the imaginary one); in the integer types' ranges.
        x = complex_values(rng, src, (5, 301))
        if dst.is_integer or dst == tf.bool:
            # (Negative values wrap into uint32 and uint64; into uint8 and uint16 they are undefined.)
            shift = 0 if dst in (tf.uint8, tf.uint16) else 50
            real = np.where(np.isfinite(x.real), np.trunc(x.real) % 100 - shift, 7)
            x.real = real  # (not real + 1j * imag: 1j * inf has a NaN real part)
            x.reshape(-1)[:3] = [0.5 + 2j, -0.0 + 0j, 0 + 1j]
    elif src.is_floating and dst in narrow:
        # Floats that truncate into the destination's range: C++ leaves the others undefined, and
        # TF-CPU's answers for them differ between its scalar and vector code.
        info = np.iinfo(dst.as_numpy_dtype)
        top = min(float(info.max), 6e4 if src == tf.float16 else 1e18, 3e38)
        # (Negative values wrap into uint32 and uint64, through int64, in both TF-CPU code paths.)
        low = float(info.min) if info.min < 0 else -1e6 if dst in (tf.uint32, tf.uint64) else 0.0
        wide = rng.uniform(low, top, size=(5, 301))
        wide.reshape(-1)[:6] = [0, -0.0, 0.5, 1.5, 2.75, 0.99]
        x = wide.astype(src.as_numpy_dtype)
        whole = np.trunc(x.astype(np.float64))
        x[(whole < info.min) | (whole > info.max)] = 0  # (rounded past the range)
    elif src.is_integer and src not in (tf.int32, tf.int64):
        x = integers(rng, src, (5, 301))
    elif src.is_floating:
        scale = 1e3 if src == tf.float16 else 1e5
        x = (rng.standard_normal((5, 301)) * scale).astype(src.as_numpy_dtype)
        x.reshape(-1)[:7] = [0, -0.0, 0.5, -0.5, 1.5, -2.5, 3.0]
        if dst == tf.int64:
            x = x * 1e4  # beyond int32
    elif src == tf.int64:
        x = rng.integers(-(2**40), 2**40, size=(5, 301), dtype=np.int64)
    else:
        x = rng.integers(-(2**31), 2**31 - 1, size=(5, 301), dtype=np.int32)
    yield (lambda t: tf.cast(t, dst)), [x]
    yield (lambda t: tf.cast(t, dst)), [x[:0]]
    if src != tf.bool and not src.is_complex and not dst.is_complex:
        # Truncate: narrowing float32 to bfloat16 drops the low bits instead of rounding (odd
        # count, NaN); TF rounds other sources whatever it says. (With complex types TF's Truncate
        # zeroes mantissa bits by a width it does not define for them: not compared.)
        t = x.reshape(-1)[:1001].copy()
        if src.is_floating and dst not in narrow:
            t[7:9] = [np.nan, -np.nan]
        yield (lambda t: tf.raw_ops.Cast(x=t, DstT=dst, Truncate=True)), [t]


def movement_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs.get("T") or attrs.get("Tparams"))
    x = values(rng, dt, (4, 5, 6))
    if op == "StridedSlice":
        yield (lambda t: t[1:3, ::-2, None, 2]), [x]
        yield (lambda t: t[..., 1:-1:2]), [x]
        yield (lambda t: t[3:1]), [x]
    elif op == "Slice":
        yield (lambda t: tf.slice(t, [1, 0, 2], [2, -1, 3])), [x]
    elif op == "Split":
        yield (lambda t: tf.split(t, 3, axis=2)), [x]
        yield (lambda t: tf.split(t, 2, axis=0)), [x]
    elif op == "SplitV":
        yield (lambda t: tf.split(t, [1, -1, 2], axis=1)), [x]
    elif op == "Transpose":
        yield (lambda t: tf.transpose(t, [2, 0, 1])), [x]
        yield (lambda t: tf.transpose(t)), [values(rng, dt, (3, 1, 0))]
        # Ten dimensions that do not merge: past the shader's eight, one map per outer row.
        yield (lambda t: tf.transpose(t, [9, 1, 8, 3, 7, 5, 6, 4, 2, 0])), [values(rng, dt, (2, 3) * 5)]
    elif op == "Tile":
        yield (lambda t: tf.tile(t, [2, 1, 3])), [x]
    elif op == "SpaceToDepth":
        yield (lambda t: tf.nn.space_to_depth(t, 2)), [values(rng, dt, (2, 4, 6, 3))]
        yield (lambda t: tf.nn.space_to_depth(t, 3)), [values(rng, dt, (1, 3, 6, 2))]
        yield (lambda t: tf.nn.space_to_depth(t, 2)), [values(rng, dt, (0, 2, 2, 1))]
    elif op in ("SpaceToBatchND", "BatchToSpaceND"):
        bt = tf.as_dtype(attrs["Tblock_shape"]).as_numpy_dtype
        pt = tf.as_dtype(attrs.get("Tpaddings") or attrs["Tcrops"]).as_numpy_dtype
        raw = getattr(tf.raw_ops, op)
        pads = "paddings" if op == "SpaceToBatchND" else "crops"

        def case(shape, block, pad):
            def run(t):
                return raw(input=t, block_shape=np.array(block, bt), **{pads: np.array(pad, pt).reshape(-1, 2)})
            return run, [values(rng, dt, shape)]
        if op == "SpaceToBatchND":
            yield case((2, 5, 6, 3), [2, 3], [[1, 0], [0, 0]])  # atrous convolution's 2-D case
            yield case((1, 4, 2), [2], [[1, 3]])
            yield case((3, 2, 2, 2, 2), [1, 2, 1], [[0, 0], [0, 0], [0, 0]])
            yield case((2, 3, 4), [], [])
            yield case((2, 4, 4, 4, 4, 3), [2, 2, 2, 2], [[0, 0]] * 4)  # a 10-D transpose: by rows
            yield case((0, 2, 4, 1), [2, 2], [[0, 0], [1, 1]])
        else:
            yield case((12, 3, 2, 3), [2, 3], [[1, 0], [0, 2]])
            yield case((4, 4, 2), [2], [[1, 3]])
            yield case((6, 2, 2, 2, 2), [1, 2, 3], [[0, 0], [0, 0], [0, 0]])
            yield case((8, 1, 3), [8], [[0, 0]])
    elif op == "DepthToSpace":
        yield (lambda t: tf.nn.depth_to_space(t, 2)), [values(rng, dt, (2, 3, 2, 12))]
        yield (lambda t: tf.nn.depth_to_space(t, 3)), [values(rng, dt, (1, 2, 1, 9))]
        yield (lambda t: tf.nn.depth_to_space(t, 2)), [values(rng, dt, (1, 0, 3, 4))]
    elif op == "Pad":
        yield (lambda t: tf.pad(t, [[1, 0], [2, 3], [0, 1]])), [x]
    elif op == "PadV2":
        yield (lambda t, c: tf.raw_ops.PadV2(input=t, paddings=[[1, 0], [2, 3], [0, 1]], constant_values=c)), [x, values(rng, dt, ())]
    elif op == "MirrorPad":
        yield (lambda t: tf.pad(t, [[1, 2], [0, 3], [2, 1]], mode="REFLECT")), [x]
        yield (lambda t: tf.pad(t, [[1, 2], [0, 3], [2, 1]], mode="SYMMETRIC")), [x]
    elif op == "ReverseV2":
        yield (lambda t: tf.reverse(t, [0, 2])), [x]
    elif op == "Reverse":
        for dims in ([True, False, True], [False, False, False], [False, True, False]):
            yield (lambda t, d=dims: tf.raw_ops.Reverse(tensor=t, dims=d)), [x]
        yield (lambda t: tf.raw_ops.Reverse(tensor=t, dims=[False, True])), [values(rng, dt, (3, 0))]
    elif op == "Roll":
        st = np.int32 if attrs["Tshift"] == "int32" else np.int64
        at = np.int32 if attrs["Taxis"] == "int32" else np.int64
        for shift, axis in [(2, 1), (-7, 2), ([1, -3], [0, 2]), ([2, 2, 1], [1, 1, -1]), (0, 0), (13, -3)]:
            yield (lambda t, s=np.array(shift, st), a=np.array(axis, at): tf.roll(t, s, a)), [x]
        yield (lambda t: tf.roll(t, np.array(3, st), np.array(0, at))), [values(rng, dt, (0, 4))]
        # Past a storage binding's worth of rows (split into parts): llvmpipe's 128 MiB is far off,
        # so a long row of many dimensions stands in for the rotation's index math.
        yield (lambda t: tf.roll(t, np.array([5, -2], st), np.array([0, 1], at))), [values(rng, dt, (37, 29))]
    elif op == "ConjugateTranspose":
        pt = np.int32 if attrs["Tperm"] == "int32" else np.int64
        yield (lambda t: tf.raw_ops.ConjugateTranspose(x=t, perm=np.array([2, 0, 1], pt))), [x]
        yield (lambda t: tf.raw_ops.ConjugateTranspose(x=t, perm=np.array([1, 0], pt))), [values(rng, dt, (7, 0))]
    elif op == "Concat":
        yield (lambda t: tf.raw_ops.Concat(concat_dim=1, values=[t, t[:, :2], t[:, 1:2]])), [x]
        yield (lambda t: tf.raw_ops.Concat(concat_dim=-1, values=[t[..., :1], t])), [x]
        yield (lambda t: tf.raw_ops.Concat(concat_dim=0, values=[t[:0], t])), [x]
    elif op == "BroadcastTo":
        yield (lambda t: tf.broadcast_to(t[:, :1], [3, 4, 5, 6])), [x]
    elif op == "Fill":
        yield (lambda v: tf.fill([3, 0, 2], v)), [values(rng, dt, ())]
        yield (lambda v: tf.fill([7, 5], v)), [values(rng, dt, ())]
    elif op == "ConcatV2":
        yield (lambda t: tf.concat([t, t[:, :2], t[:, 1:2]], axis=1)), [x]
        yield (lambda t: tf.concat([t[..., :1], t, t[..., 3:4]], axis=-1)), [x]
    elif op == "Pack":
        yield (lambda t: tf.stack([t, t[::-1], t], axis=1)), [x]
    elif op == "Unpack":
        yield (lambda t: tf.unstack(t, axis=2)), [x]
    elif op == "Gather":
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        yield (lambda t, i: tf.raw_ops.Gather(params=t, indices=i)), [x, np.array([[3, 0], [2, 2]], it)]
        yield (lambda t, i: tf.raw_ops.Gather(params=t, indices=i)), [x, np.array(1, it)]
        yield (lambda t, i: tf.raw_ops.Gather(params=t, indices=i)), [x, np.zeros((0, 2), it)]
    elif op == "GatherV2":
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        yield (lambda t, i: tf.gather(t, i, axis=1)), [x, np.array([[4, 0], [2, 2]], it)]
        yield (lambda t, i: tf.gather(t, i, axis=0)), [x, np.array([3, 1, 0], it)]
    elif op == "GatherNd":
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        # Depths 2, 3 (scalars), 1 (repeated rows) and 0 (the whole tensor per tuple); no tuples.
        for idx in ([[1, 2], [3, 0]], [[[0, 1, 2]], [[3, 4, 5]]], [[2], [0], [2]], np.zeros((2, 0)), np.zeros((0, 2))):
            yield (lambda t, i: tf.raw_ops.GatherNd(params=t, indices=i)), [x, np.array(idx, it)]
        # Rows of 3 elements, 3 tuples: outputs that end inside a word (1- and 2-byte types).
        yield (lambda t, i: tf.raw_ops.GatherNd(params=t[..., 1:4], indices=i)), [x, np.array([[1, 2], [3, 0], [0, 1]], it)]


# StridedSliceGrad specs: input shape, begin, end, strides, masks (begin, end, ellipsis, new_axis,
# shrink_axis).
SLICE_GRAD_SPECS = [
    ((4, 5, 6), [1, 0, 0, 2], [3, 0, 0, 3], [1, -2, 1, 1], (0b0010, 0b0010, 0, 0b0100, 0b1000)),  # t[1:3, ::-2, None, 2]
    ((4, 5, 6), [0, 1], [0, -1], [1, 2], (0, 0, 0b01, 0, 0)),  # t[..., 1:-1:2]
    ((4, 5, 6), [3], [1], [1], (0, 0, 0, 0, 0)),  # t[3:1]: empty dy
    ((4, 5, 6), [0, 4, 0], [0, 0, 0], [-1, -3, 1], (0b101, 0b101, 0, 0, 0)),  # t[::-1, 4:0:-3, :]
    ((4, 5, 6), [2, -1, 0], [3, 0, 1], [1, 1, 1], (0, 0, 0, 0, 0b111)),  # t[2, -1, 0]: scalar dy
    ((4, 5, 6), [0, 0, 0], [0, 0, 0], [1, 1, 2], (0b100, 0b100, 0b010, 0b001, 0)),  # t[None, ..., ::2]
    ((4, 5, 6), [-10, 7], [10, -7], [1, -1], (0, 0, 0, 0, 0)),  # clamped bounds
    ((3, 70, 33), [0, 5, 0], [0, 60, 0], [1, 3, -1], (0b101, 0b101, 0, 0, 0)),  # t[:, 5:60:3, ::-1]
    ((), [0], [0], [1], (0, 0, 1, 0, 0)),  # t[...] of a scalar
]


def slice_grad_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs["T"])
    it = np.int32 if attrs["Index"] == "int32" else np.int64
    names = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    for shape, begin, end, strides, masks in SLICE_GRAD_SPECS:
        spec = dict(begin=np.array(begin, it), end=np.array(end, it), strides=np.array(strides, it), **dict(zip(names, masks)))
        with tf.device("/CPU:0"):
            dy_shape = tf.raw_ops.StridedSlice(input=np.zeros(shape, np.float32), **spec).shape
        fn = lambda dy, shape=shape, spec=spec: tf.raw_ops.StridedSliceGrad(shape=np.array(shape, it), dy=dy, **spec)
        yield fn, [values(rng, dt, dy_shape)]


def reverse_sequence_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs["T"])
    lt = np.int32 if attrs["Tlen"] == "int32" else np.int64
    # shape, seq_dim, batch_dim, lengths (zero and full lengths among them)
    for shape, seq_dim, batch_dim, lengths in [
        ((4, 5, 6), 1, 0, [0, 5, 2, 3]),
        ((4, 5, 6), 0, 2, [4, 0, 1, 3, 2, 4]),
        ((4, 5, 6), 2, 1, [6, 1, 0, 3, 5]),
        ((7, 3), 0, 1, [7, 0, 1]),
        ((2, 3, 4, 5), 3, 1, [5, 2, 0]),
        ((130, 33), 0, 1, rng.integers(0, 131, size=33)),  # more elements than one workgroup
        ((0, 4), 1, 0, []),
    ]:
        fn = lambda x, n, seq_dim=seq_dim, batch_dim=batch_dim: tf.raw_ops.ReverseSequence(
            input=x, seq_lengths=n, seq_dim=seq_dim, batch_dim=batch_dim)
        yield fn, [values(rng, dt, shape), np.array(lengths, lt)]


def rnn_cases(op, attrs, rng):
    """CudnnRNN*: TF-CPU has no kernel, so each case runs against test_rnn_ops.reference (cuDNN's
    semantics in plain TF ops on /CPU:0), see `check_rnn_case`."""
    from test_rnn_ops import Case as RnnCase

    version = op[-2:] if op[-2:] in ("V2", "V3") else "V1"
    configs = [("lstm", dict(dirs=2, layers=2)), ("gru", dict(dirs=1, layers=1, time_major=False)),
               ("rnn_relu", dict(dirs=2, layers=1, input_size=4, input_mode="skip_input"))]
    for mode, config in configs:
        if version != "V3":  # time major, every sequence full length
            config = {**config, "time_major": True, "lengths": "full"}
        yield ("rnn", RnnCase(rng, mode, steps=3, batch=3, **config), version, "Backprop" in op)


def check_rnn_case(op, attrs, case, version, backprop):
    """The op on /GPU:0 against the reference on /CPU:0 (in float32, on the same inputs rounded to
    T): the forward ops' output, output_h and output_c; the backprops' four gradients for random
    output gradients, the forward op of the same version making the reserve space."""
    dtype = np.dtype(attrs["T"])
    # float16: computed in f32 and rounded once, so about one f16 ulp from the reference; the
    # gradients sum over steps and rows, so their absolute error scales with the largest one.
    tol = 2e-3 if dtype == np.float16 else 1e-5
    lstm = case.mode == "lstm"
    dy, dh = case.w1, case.w2
    dc = case.w3 if lstm else np.float32(0.0)
    with tf.device(GPU):
        x, h, c, p = case.inputs(dtype)
        outs = case.plugin(x, h, c, p, version=version, all_outputs=True)
        got = outs[:3]
        if backprop:
            common = dict(input=x, input_h=h, input_c=c, params=p, output=outs[0], output_h=outs[1], output_c=outs[2],
                          output_backprop=tf.constant(dy.astype(dtype)), output_h_backprop=tf.constant(dh.astype(dtype)),
                          output_c_backprop=tf.constant(np.asarray(dc).astype(dtype)), reserve_space=outs[3],
                          rnn_mode=case.mode, input_mode=case.input_mode, direction=case.direction)
            if version == "V3":
                common.update(sequence_lengths=tf.constant(case.lengths), time_major=case.time_major)
            if version != "V1":
                common["host_reserved"] = outs[4]
            got = getattr(tf.raw_ops, op)(**common)
    with tf.device("/CPU:0"):
        args = case.inputs(np.float32, via=dtype)
        with tf.GradientTape() as tape:
            tape.watch(args)
            want = list(case.ref(*args))
        if backprop:
            targets, grads = want[:3] if lstm else want[:2], [dy, dh, dc][:3 if lstm else 2]
            want = tape.gradient(targets, args, output_gradients=[tf.constant(g) for g in grads],
                                 unconnected_gradients=tf.UnconnectedGradients.ZERO)
            if dtype != np.float16:
                tol = 2e-5
        elif not lstm:  # output_c: a scalar placeholder in the models without a cell state
            want[2] = tf.zeros([])
    for name, g, w in zip(range(4), got, want):
        assert g.device.endswith("device:GPU:0"), f"{op} ran on {g.device}"
        assert g.dtype == dtype, (op, name, g.dtype)
        assert g.shape == w.shape, (op, name, g.shape, w.shape)
        w = w.numpy()
        atol = tol * max(1.0, float(np.abs(w).max(initial=0))) if backprop and dtype == np.float16 else tol
        np.testing.assert_allclose(g.numpy().astype(np.float32), w, rtol=tol, atol=atol,
                                   err_msg=f"{op} {case.mode} output {name}")


def reduce_cases(op, attrs, rng):
    if op in ("All", "Any"):
        fn = tf.reduce_all if op == "All" else tf.reduce_any
        x = values(rng, tf.bool, (3, 4, 5))
        for axes in [None, 0, [1, 2], -1]:
            yield (lambda t, axes=axes: fn(t, axis=axes)), [x]
        yield (lambda t: fn(t, axis=1)), [values(rng, tf.bool, (2, 0, 3))]
        return
    if op in ("ArgMax", "ArgMin"):
        fn = tf.argmax if op == "ArgMax" else tf.argmin
        out = tf.as_dtype(attrs["output_type"])
        dt = tf.as_dtype(attrs["T"])
        if dt.is_integer:
            # Bit patterns, then many ties (the first index wins) over 70,001 elements (partial
            # (value, index) records over three launches).
            x = integers(rng, dt, (4, 5, 300))
            for axis in [0, 1, 2, -1]:
                yield (lambda t, axis=axis: fn(t, axis=axis, output_type=out)), [x]
            ties = rng.integers(0, 3, size=(2, 70001)).astype(dt.as_numpy_dtype)
            yield (lambda t: fn(t, axis=1, output_type=out)), [ties]
            yield (lambda t: fn(t, axis=0, output_type=out)), [ties]
            return
        x = typed(attrs, floats(rng, (4, 5, 300), specials=False))
        for axis in [0, 1, 2, -1]:
            yield (lambda t, axis=axis: fn(t, axis=axis, output_type=out)), [x]
        # Long axes in slices, whose candidates merge: few rows over 40,001 elements (parallel
        # slices), ties of the extreme in several slices (the first index wins), NaN (never wins),
        # a slice of nothing but NaN and the type's lowest (highest) value, and a row past one
        # invocation's loop limit (65,535 iterations of 256 elements).
        long = np.round(floats(rng, (3, 40001), specials=False))
        extreme = np.float32(long.max() + 1 if op == "ArgMax" else long.min() - 1)
        long[0, [39000, 20000, 30001]] = extreme
        long[1, :20000] = np.nan
        long[2, :] = np.finfo(np.float32).min if op == "ArgMax" else np.finfo(np.float32).max
        long[2, 25000:25003] = np.nan
        long = typed(attrs, long)
        yield (lambda t: fn(t, axis=1, output_type=out)), [long]
        yield (lambda t: fn(t, axis=0, output_type=out)), [long.T.copy()]
        if attrs["T"] in ("float32", "float64") and attrs["output_type"] == "int64":
            huge = typed(attrs, rng.standard_normal(1 << 24 | 12345).astype(np.float32))
            huge[[16_000_000, 16_777_300]] = extreme
            yield (lambda t: fn(t, output_type=out)), [huge]
        return
    fn = {"Sum": tf.reduce_sum, "Prod": tf.reduce_prod, "Max": tf.reduce_max, "Min": tf.reduce_min, "Mean": tf.reduce_mean,
          "EuclideanNorm": tf.norm_euclidean if hasattr(tf, "norm_euclidean") else
          (lambda t, axis=None, keepdims=False: tf.raw_ops.EuclideanNorm(
              input=t, axis=list(range(len(t.shape))) if axis is None else axis, keep_dims=keepdims))}[op]
    dt = tf.as_dtype(attrs["T"])
    if dt.is_integer:
        # Bit patterns with the extremes: sums and products wrap, Mean of 8- to 32-bit integers
        # does not. 70,001 elements take three launches of partial results; leading axes; empty.
        for _ in range(4):
            shape = random_shape(rng)
            axes = [a for a in range(len(shape)) if rng.random() < 0.5] or None
            yield (lambda t, axes=axes: fn(t, axis=axes, keepdims=bool(axes) and len(axes) == 1)), [integers(rng, dt, shape)]
        yield (lambda t: fn(t, axis=1)), [integers(rng, dt, (3, 0, 2))]
        yield (lambda t: fn(t)), [integers(rng, dt, (70001,))]
        yield (lambda t: fn(t, axis=0)), [integers(rng, dt, (5000, 17))]
        yield (lambda t: fn(t, axis=[0, 2])), [integers(rng, dt, (6, 40, 3))]
        return
    for _ in range(5):
        shape = random_shape(rng)
        x = typed(attrs, floats(rng, shape, specials=op in ("Max", "Min"), scale=0.8))
        axes = [a for a in range(len(shape)) if rng.random() < 0.5] or None
        keep = bool(rng.random() < 0.5)
        yield (lambda t, axes=axes, keep=keep: fn(t, axis=axes, keepdims=keep)), [x]
    yield (lambda t: fn(t, axis=1)), [typed(attrs, floats(rng, (3, 0, 2), specials=False))]
    yield (lambda t: fn(t)), [typed(attrs, floats(rng, (70001,), specials=False, scale=0.1))]
    # Leading axes (reduce_columns): 5000 rows split over 15 slices whose partials a second launch
    # combines (the last slice shorter), and merged leading axes in one launch. Products near 1.
    near_one = lambda *s: np.exp(floats(rng, s, specials=False, scale=0.01)) if op == "Prod" else floats(rng, s, specials=False)
    yield (lambda t: fn(t, axis=0)), [typed(attrs, near_one(5000, 17))]
    yield (lambda t: fn(t, axis=[0, 1], keepdims=True)), [typed(attrs, near_one(6, 40, 3))]


def matmul_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    if op == "MatMul":
        # The last two take the tiled kernel on CPU adapters (m, n, k >= 32): edges of 128-tiles,
        # and k past five tiles, where a second dispatch adds to C.
        for m, k, n in [(1, 1, 1), (7, 13, 5), (33, 17, 65), (16, 0, 3), (19, 40, 517), (130, 300, 257),
                        (40, 650, 33)]:
            yield tf.matmul, [f(m, k), f(k, n)]
            yield (lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True)), [f(k, m), f(n, k)]
    elif op == "BatchMatMulV2":
        yield tf.matmul, [f(2, 3, 4, 5), f(3, 5, 7)]
        yield (lambda a, b: tf.matmul(a, b, adjoint_b=True)), [f(2, 1, 4, 5), f(3, 7, 5)]
        yield (lambda a, b: tf.matmul(a, b, adjoint_a=True)), [f(2, 1, 129, 40), f(3, 129, 70)]
    elif op == "BatchMatMulV3":
        out = tf.as_dtype(attrs["Tout"])
        yield (lambda a, b: tf.raw_ops.BatchMatMulV3(x=a, y=b, Tout=out)), [f(2, 4, 5), f(2, 5, 3)]
    elif op == "Einsum":
        for eq, sa, sb in [("ab,bc->ac", (3, 4), (4, 5)), ("aecd,abcd->acbe", (2, 5, 3, 4), (2, 7, 3, 4)),
                           ("acbe,aecd->abcd", (2, 3, 7, 5), (2, 5, 3, 4)), ("abc,cd->abd", (2, 3, 4), (4, 6)),
                           # Ellipses (broadcast too), diagonals, labels summed from one operand.
                           ("...ij,...jk->...ik", (2, 1, 4, 5), (3, 5, 6)), ("...,...->...", (3, 1), (1, 1)),
                           ("iij,jk->ik", (3, 3, 4), (4, 2)), ("ab,cd->ad", (2, 3), (4, 5)),
                           ("...a,...a->...", (1, 4), (3, 4)), ("i,j->ij", (3,), (4,))]:
            yield (lambda a, b, eq=eq: tf.raw_ops.Einsum(inputs=[a, b], equation=eq)), [f(*sa), f(*sb)]
        # One operand: transposes, diagonals, traces and sums.
        for eq, sa in [("ij->ji", (3, 4)), ("ii->i", (4, 4)), ("ii->", (4, 4)), ("ij->", (3, 4)), ("...ij->...j", (2, 3, 4)),
                       ("aab->ba", (3, 3, 2))]:
            yield (lambda a, eq=eq: tf.raw_ops.Einsum(inputs=[a], equation=eq)), [f(*sa)]
        # TF's op takes any other character as a label: digits, and spaces (a dimension of their own).
        for eq, sa, sb in [("a1,1b->ab", (3, 4), (4, 2)), ("i j,jk->ik", (2, 3, 4), (4, 5))]:
            yield (lambda a, b, eq=eq: tf.raw_ops.Einsum(inputs=[a, b], equation=eq)), [f(*sa), f(*sb)]


def nn_cases(op, attrs, rng):
    f = lambda *s: typed(attrs, floats(rng, s, specials=False))
    f32 = lambda *s: floats(rng, s, specials=False)  # FusedBatchNormV3's statistics stay float32
    if op in ("Softmax", "LogSoftmax"):
        fn = tf.nn.softmax if op == "Softmax" else tf.nn.log_softmax
        for shape in [(5,), (3, 7), (2, 65, 9), (2, 3, 1000), (4, 1)]:
            yield fn, [f(*shape) * 5]
    elif op == "Conv2D":
        for pad in ["SAME", "VALID", [[0, 0], [1, 2], [0, 1], [0, 0]]]:
            yield (lambda x, k, pad=pad: tf.nn.conv2d(x, k, strides=[1, 2, 1, 1], padding=pad)), [f(2, 9, 8, 4), f(3, 2, 4, 5)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME", dilations=2)), [f(1, 7, 7, 3), f(3, 3, 3, 2)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="VALID")), [f(1, 6, 6, 4), f(3, 3, 2, 6)]  # groups
        # Output channels a multiple of 4, too small for the implicit GEMM: four channels per invocation.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=[1, 2, 1, 1], padding="SAME")), [f(2, 9, 8, 3), f(3, 3, 3, 8)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME", dilations=2)), [f(1, 7, 7, 3), f(3, 3, 3, 4)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding=[[0, 0], [1, 0], [0, 2], [0, 0]])), [f(2, 6, 5, 2), f(2, 3, 2, 12)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="VALID")), [f(3, 10, 9, 1), f(3, 3, 1, 16)]
        # 1x1: stride 1 runs as a matmul; stride 2 and groups take the direct kernel.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME")), [f(2, 5, 7, 6), f(1, 1, 6, 300)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=2, padding="VALID")), [f(2, 5, 7, 6), f(1, 1, 6, 5)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="VALID")), [f(1, 4, 4, 6), f(1, 1, 3, 4)]
        # Big enough for the implicit GEMM on CPU adapters (im2col rows across tile edges, k over
        # two groups of k-tiles, columns past one tile), with strides, padding and dilation.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME")), [f(2, 17, 19, 40), f(3, 3, 40, 48)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=2, padding="VALID")), [f(3, 20, 20, 33), f(5, 3, 33, 70)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME", dilations=2)), [f(1, 30, 31, 36), f(3, 3, 36, 40)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding=[[0, 0], [2, 0], [1, 3], [0, 0]])), [f(2, 12, 12, 64), f(3, 3, 64, 130)]
        # The windowed kernel (see test_convolution_reads_input_windows): filter taps of 64 KiB, one
        # per slab, so taps in three groups, the later ones adding to the output; pixels of many
        # images in one window, with stride 2 and padding on one side.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME")), [f(2, 9, 11, 128), f(3, 3, 128, 128)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=2, padding=[[0, 0], [0, 1], [2, 0], [0, 0]])), [f(40, 7, 5, 12), f(2, 3, 12, 36)]
        # A window planned to the pixel: 128 output pixels whose 129 input pixels of 512 bytes
        # overflow one 64 KiB window by one pixel, so they take two dispatches.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="VALID")), [f(1, 1, 129, 128), f(1, 2, 128, 32)]
        # Packers (see test_im2col_packers_run): small images, many to a uniform window; an input
        # buffer too small for a window; input rows too wide for one.
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=2, padding="SAME")), [f(100, 5, 6, 8), f(3, 3, 8, 36)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME")), [f(1, 10, 10, 32), f(3, 3, 32, 32)]
        yield (lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME")), [f(1, 6, 130, 64), f(3, 3, 64, 32)]
    elif op == "DepthwiseConv2dNative":
        for pad in ["SAME", "VALID"]:
            yield (lambda x, k, pad=pad: tf.raw_ops.DepthwiseConv2dNative(input=x, filter=k, strides=[1, 2, 2, 1], padding=pad)), [f(2, 9, 8, 3), f(3, 3, 3, 2)]
    elif op in ("MaxPool", "AvgPool"):
        fn = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
        for pad in ["SAME", "VALID"]:
            yield (lambda x, pad=pad: fn(x, (3, 2), (2, 2), pad)), [f(2, 9, 8, 3)]
    elif op == "MaxPoolV2":  # ksize and strides as (host-memory) tensors
        for pad in ["SAME", "VALID"]:
            yield (lambda x, k, s, pad=pad: tf.raw_ops.MaxPoolV2(input=x, ksize=k, strides=s, padding=pad)), [
                f(2, 9, 8, 3), np.array([1, 3, 2, 1], np.int32), np.array([1, 2, 2, 1], np.int32)]
    elif op.startswith("FusedBatchNormV") or op == "FusedBatchNorm":
        c = 5
        batch_norm = getattr(tf.raw_ops, op)
        stat = f if op == "FusedBatchNorm" else f32  # V1's statistics are typed T, later ones U (float32)
        yield (lambda x, s, o, m, v: batch_norm(x=x, scale=s, offset=o, mean=m, variance=v, epsilon=0.001, is_training=False)[:3]), [
            f(2, 3, 4, c), stat(c), stat(c), stat(c), np.abs(stat(c)) + 0.1]
        # Training: batch statistics, running ones blended by exponential_avg_factor.
        empty = np.zeros(0, np.float32)
        for shape in [(2, 3, 4, c), (4, 9, 10, 3)]:
            ch = shape[-1]
            yield (lambda x, s, o, m, v: batch_norm(x=x, scale=s, offset=o, mean=m, variance=v, epsilon=0.001, is_training=True)[:5]), [
                f(*shape), stat(ch), stat(ch), empty, empty]
        yield (lambda x, s, o, m, v: batch_norm(x=x, scale=s, offset=o, mean=m, variance=v, epsilon=0.01,
                                                exponential_avg_factor=0.1, is_training=True)[:5]), [
            f(3, 2, 5, c), stat(c), stat(c), stat(c), np.abs(stat(c)) + 0.1]
    elif op.startswith("FusedBatchNormGrad"):
        for shape, training in [((2, 3, 4, 5), True), ((4, 9, 10, 3), True), ((2, 3, 4, 5), False)]:
            ch = shape[-1]
            x = f(*shape)
            wide = x.astype(np.float32)
            # Training takes the batch statistics the forward pass saved; inference, population ones.
            mean = wide.mean(axis=(0, 1, 2))
            var = wide.var(axis=(0, 1, 2)) if training else np.abs(f32(ch)) + 0.1
            # The last two outputs are unused placeholders whose shape TF-CPU itself does not keep
            # stable ([0] from its Eigen kernel, [] from its oneDNN one on AVX-512 CPUs): compare
            # the three gradients.
            stats = [f32(ch), mean.astype(np.float32), var.astype(np.float32)]
            if op == "FusedBatchNormGradV3":
                fn = lambda dy, x, s, m, v, r, training=training: tf.raw_ops.FusedBatchNormGradV3(
                    y_backprop=dy, x=x, scale=s, reserve_space_1=m, reserve_space_2=v, reserve_space_3=r, epsilon=0.001,
                    is_training=training)[:3]
                yield fn, [f(*shape), x, *stats, np.zeros(0, np.float32)]
            else:  # V1 and V2: no reserve_space_3
                fn = lambda dy, x, s, m, v, training=training, grad=getattr(tf.raw_ops, op): grad(
                    y_backprop=dy, x=x, scale=s, reserve_space_1=m, reserve_space_2=v, epsilon=0.001,
                    is_training=training)[:3]
                yield fn, [f(*shape), x, *stats]
    elif op == "OneHot":
        dt = tf.as_dtype(attrs["T"])
        it = np.int32 if attrs["TI"] == "int32" else np.int64
        on = values(rng, dt, ()) if dt != tf.bool else np.array(True)
        off = values(rng, dt, ()) if dt != tf.bool else np.array(False)
        yield (lambda i, a, b: tf.one_hot(i, 5, on_value=a, off_value=b)), [np.array([0, 3, 7, -1, 4], it), on, off]
        # 1001 one-hot rows: packed outputs over many words, a tail of a word.
        yield (lambda i, a, b: tf.one_hot(i, 7, on_value=a, off_value=b, axis=1)), [
            rng.integers(-2, 9, size=(11, 91)).astype(it), on, off]
        yield (lambda i, a, b: tf.one_hot(i, 4, on_value=a, off_value=b, axis=0)), [np.array([[0, 3], [1, 2]], it), on, off]
    elif op == "Range":
        dt = tf.as_dtype(attrs["Tidx"])
        if dt.is_integer:
            for start, limit, delta in [(1, 9, 2), (1, 10, 2), (5, -3, -1), (-7, 100001, 3), (2**40, 2**40 + 9, 4),
                                        (3, 3, 1)]:
                yield (lambda: tf.range(dt.as_numpy_dtype(start), dt.as_numpy_dtype(limit), dt.as_numpy_dtype(delta))), []
        else:
            for start, limit, delta in [(1.5, 9.0, 0.75), (5.0, -3.0, -1.5), (0.1, 1000.3, 0.1), (2.0, 2.0, 1.0)]:
                yield (lambda: tf.range(dt.as_numpy_dtype(start), dt.as_numpy_dtype(limit), dt.as_numpy_dtype(delta))), []
    elif op == "LinSpace":
        dt = tf.as_dtype(attrs["T"]).as_numpy_dtype
        it = np.int32 if attrs["Tidx"] == "int32" else np.int64
        for start, stop, num in [(0, 1, 5), (1.5, -2.25, 7), (3, 4, 1), (0.1, 1e6, 100001), (-1e30, 1e30, 3), (2, 2, 4)]:
            yield (lambda a, b, n: tf.raw_ops.LinSpace(start=a, stop=b, num=n)), [dt(start), dt(stop), it(num)]


def fused_cases(op, attrs, rng):
    # Grappler's remapper makes these (the plugin turns it off for its graphs); build the nodes
    # directly in a graph to exercise the kernels.
    f = lambda *s: floats(rng, s, specials=False)
    if op == "_FusedConv2D":
        for fused, extra in [([b"BiasAdd"], 1), ([b"BiasAdd", b"Relu"], 1), ([b"FusedBatchNorm", b"Relu6"], 4)]:
            args = [f(4)] * extra if extra == 1 else [f(4), f(4), f(4), np.abs(f(4)) + 0.5]
            yield ("fused", op, fused, [f(2, 7, 6, 3), f(3, 3, 3, 4)] + args)
    else:
        for fused in [[b"BiasAdd"], [b"BiasAdd", b"Relu"], [b"BiasAdd", b"GeluExact"]]:
            yield ("fused", op, fused, [f(5, 6), f(6, 4), f(4)])


def fused_reference(op, fused, args):
    x = tf.constant(args[0])
    if op == "_FusedConv2D":
        y = tf.nn.conv2d(x, args[1], strides=1, padding="SAME")
        if fused[0] == b"BiasAdd":
            y = tf.nn.bias_add(y, args[2])
        else:
            y = (y - args[4]) * tf.math.rsqrt(args[5] + 1e-3) * args[2] + args[3]
    else:
        y = tf.nn.bias_add(tf.matmul(x, args[1]), args[2])
    act = fused[1] if len(fused) > 1 else None
    return {None: y, b"Relu": tf.nn.relu(y) if act == b"Relu" else None, b"Relu6": tf.nn.relu6(y) if act == b"Relu6" else None,
            b"GeluExact": tf.nn.gelu(y, approximate=False) if act == b"GeluExact" else None}[act]


def run_fused(op, fused, args):
    from tensorflow.python.framework import ops

    graph = tf.Graph()
    with graph.as_default(), tf.device(GPU):
        tensors = [tf.constant(a) for a in args]
        attrs = {"T": tf.float32, "fused_ops": fused, "epsilon": 1e-3, "leakyrelu_alpha": 0.2}
        if op == "_FusedConv2D":
            attrs.update(strides=[1, 1, 1, 1], padding=b"SAME", data_format=b"NHWC", dilations=[1, 1, 1, 1],
                         explicit_paddings=[], use_cudnn_on_gpu=True, num_args=len(args) - 2, num_host_args=0,
                         filter_format=b"HWIO", TArgs=[tf.float32] * (len(args) - 2))
            inputs = tensors[:2] + [tensors[2:], []]
        else:
            attrs.update(transpose_a=False, transpose_b=False, num_args=1)
            inputs = tensors[:2] + [tensors[2:]]
        out = _make_op(graph, op, inputs, attrs)
    config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        return sess.run(out)


def _make_op(graph, op, inputs, attrs):
    from tensorflow.core.framework import attr_value_pb2

    def attr(v):
        if isinstance(v, tf.DType):
            return attr_value_pb2.AttrValue(type=v.as_datatype_enum)
        if isinstance(v, bool):
            return attr_value_pb2.AttrValue(b=v)
        if isinstance(v, bytes):
            return attr_value_pb2.AttrValue(s=v)
        if isinstance(v, float):
            return attr_value_pb2.AttrValue(f=v)
        if isinstance(v, int):
            return attr_value_pb2.AttrValue(i=v)
        if isinstance(v, list) and v and isinstance(v[0], bytes):
            return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(s=v))
        if isinstance(v, list) and v and isinstance(v[0], tf.DType):
            return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(type=[d.as_datatype_enum for d in v]))
        if isinstance(v, list):
            return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(i=v))
        return attr_value_pb2.AttrValue(type=v)

    flat = []
    for i in inputs:
        flat.extend(i if isinstance(i, list) else [i])
    with graph.as_default(), tf.device(GPU):
        node = graph._create_op_internal(op, flat, [tf.float32], name="fused", attrs={k: attr(v) for k, v in attrs.items()})
    return node.outputs[0]


# dtypes whose AssignAdd/AssignSub the graph rewrite turns into AddV2/Sub kernels that exist on the
# device (float16 and float64 where the adapter computes in them).
ASSIGN_UPDATE_DTYPES = {attrs["T"] for op, attrs in KERNELS if op == "AddV2"} & {
    attrs["T"] for op, attrs in KERNELS if op == "Sub"}


# TF1 optimizers' fused updates (ResourceApplyGradientDescent has its own case above): the
# variables they update, then the other inputs in op order (`optimizer_ops`).
OPTIMIZERS = {op: s for op, s in optimizer_ops.SIGNATURES.items() if op != "ResourceApplyGradientDescent"}
OPTIMIZER_FLAGS = optimizer_ops.FLAGS
TOLERANCE.update({op: 1e-5 for op in OPTIMIZERS})
FLOAT_MATH.update(OPTIMIZERS)
# (NaN results compare as NaN whatever their sign: lavapipe's and x86's default NaNs differ.)
FLOAT_MATH.update({"AssignAddVariableOp", "AssignSubVariableOp"})
# (Repeated indices add in no defined order, and 16-bit floats round at each update.)
FLOAT_MATH.update({"ResourceScatterAdd", "ResourceScatterSub"})

# Resource variable scatters: v[i] op= u by rows (ResourceScatter*) or by index tuples
# (ResourceScatterNd*, whose resource input is named ref).
RESOURCE_SCATTERS = tuple(f"ResourceScatter{c}" for c in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")) + tuple(
    f"ResourceScatterNd{c}" for c in ("Add", "Sub", "Min", "Max", "Update"))
# Variable ops that run for every dtype they register: they move values, with no arithmetic of
# that dtype.
ANY_DTYPE_VARIABLE_OPS = {"ResourceGather", "ResourceGatherNd", "ResourceScatterUpdate", "ResourceScatterNdUpdate"}


def variable_cases(op, attrs, rng):
    dt = tf.as_dtype(attrs.get("dtype") or attrs["T"])
    if op in OPTIMIZERS:
        var_names, arg_names = OPTIMIZERS[op]
        scalars = {"logbase": 0.5, "sign_decay": 0.9, "beta": 0.9, "lr": 0.1, "momentum": 0.9, "beta1_power": 0.9**3, "beta2_power": 0.999**3, "beta1": 0.9,
                   "beta2": 0.999, "epsilon": 1e-7, "rho": 0.9, "alpha": 0.25, "l1": 0.05, "l2": 0.1,
                   "lr_power": -0.5, "l2_shrinkage": 0.05}
        base = op.replace("ResourceSparseApply", "").replace("ResourceApply", "")
        flag = OPTIMIZER_FLAGS.get(base)
        it = np.int32 if attrs.get("Tindices") == "int32" else np.int64
        for nesterov in (False, True) if flag else (False,):
            inits = tuple(typed(attrs, floats(rng, (5, 3), specials=False)) for _ in var_names)
            if base in ("Adam", "RMSProp", "Adadelta", "AdaMax", "AdamWithAmsgrad"):  # running means of squares
                inits = (inits[0], *map(np.abs, inits[1:]))
            if base in ("Adagrad", "AdagradV2", "ProximalAdagrad", "Ftrl", "FtrlV2"):  # sums of squares
                inits = (inits[0], np.abs(inits[1]) + 0.1, *inits[2:])
            if base == "AdagradDA":
                inits = (*inits[:2], np.abs(inits[2]) + 0.1)
            if base == "CenteredRMSProp":  # mean squares above the squared mean gradient: a variance
                inits = (inits[0], inits[1], np.abs(inits[2]) + np.square(inits[1]), inits[3])
            # Sparse: unique rows in any order (with repeated ones one row's update wins).
            indices = rng.permutation(5)[:3].astype(it)
            rows = len(indices) if "Sparse" in op else 5
            args = [typed(attrs, np.array(scalars[a], np.float32)) if a in scalars else indices if a == "indices"
                    else np.array(3, np.int64) if a == "global_step"
                    else typed(attrs, floats(rng, (rows, 3), specials=False)) for a in arg_names]

            def step(*vs_and_args, nesterov=nesterov):
                vs, xs = vs_and_args[:len(var_names)], vs_and_args[len(var_names):]
                flags = {flag: nesterov} if flag else {}
                getattr(tf.raw_ops, op)(**{n: v.handle for n, v in zip(var_names, vs)}, **dict(zip(arg_names, xs)), **flags)
                return [v.read_value() for v in vs]

            yield ("variable", step, inits, args)
        return
    if op == "ResourceApplyGradientDescent":
        init, delta = typed(attrs, floats(rng, (4, 3))), typed(attrs, floats(rng, (4, 3)))

        def sgd(v, alpha, delta):
            tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=alpha, delta=delta)
            return v.read_value()

        yield ("variable", sgd, init, [typed(attrs, np.array(0.25, np.float32)), delta])
        return
    if op in RESOURCE_SCATTERS:
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        assign = "Update" in op  # any whole-word dtype, bit patterns and all

        def arithmetic(shape):
            # Integers: bit patterns with the extremes; divisors TF-CPU accepts (no zero, and no -1,
            # whose quotient of the lowest value traps in int64 and wraps order-dependently below).
            if not dt.is_integer:
                return floats(rng, shape, specials=False).astype(dt.as_numpy_dtype)
            x = integers(rng, dt, shape)
            return np.where((x == 0) | (x == -1), np.array(3, x.dtype), x) if "Div" in op else x

        table = values(rng, dt, (6, 3)) if assign else arithmetic((6, 3))
        if "ScatterNd" in op:
            # Row tuples (repeated ones combine), full-depth tuples, a matrix of tuples.
            specs = (([[5], [0], [2 if assign else 5]], (3, 3)), ([[1, 2], [4, 0]], (2,)), ([[[2]], [[3]]], (2, 1, 3)))
        else:
            # Repeated indices combine; 2-D indices; a scalar update for every named row. Updates
            # have no defined order with repeated indices (one wins): none there.
            specs = (([[5, 0], [2, 1 if assign else 2]], (2, 2, 3)), ([4, 1, 3 if assign else 4], (3, 3)), ([3, 0], ()))
        for indices, shape in specs:
            update = values(rng, dt, shape) if assign else arithmetic(shape)
            yield ("variable", functools.partial(scatter_update, op), table, [np.array(indices, it), update])
        return
    if op == "ResourceGather":
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        table = values(rng, dt, (6, 3, 2))
        yield ("variable", lambda v, i: tf.gather(v, i), table, [np.array([[5, 0], [2, 2]], it)])
        yield ("variable", lambda v, i: tf.gather(v, i), table, [np.array([], it)])
        return
    if op == "ResourceGatherNd":
        it = np.int32 if attrs["Tindices"] == "int32" else np.int64
        table = values(rng, dt, (6, 3, 2))
        for indices in ([[5, 0], [2, 2]], [[[1, 2, 1]], [[0, 0, 0]]], [[3], [3]], np.zeros((0, 2))):
            yield ("variable", lambda v, i: tf.gather_nd(v, i), table, [np.array(indices, it)])
        return
    if dt.name in ASSIGN_UPDATE_DTYPES:
        x = values(rng, dt, (4, 3)) if dt.is_integer else typed(attrs | {"T": dt.name}, floats(rng, (4, 3)))
        init = values(rng, dt, (4, 3)) if dt.is_integer else typed(attrs | {"T": dt.name}, floats(rng, (4, 3)))
    else:
        x = init = values(rng, dt, (4, 3))

    def update(v, x):
        (v.assign_add if op == "AssignAddVariableOp" else v.assign_sub)(x)
        (v.assign_add if op == "AssignAddVariableOp" else v.assign_sub)(x)
        return v.read_value()

    yield ("variable", update, init, [x])


def scatter_update(op, v, indices, updates):
    getattr(tf.raw_ops, op)(**{"ref" if "ScatterNd" in op else "resource": v.handle}, indices=indices, updates=updates)
    return v.read_value()


def run_variable(fn, init, args, device):
    """`fn(variables..., args...)` in a tf.function; `init` is one initial value or a tuple of them."""
    with tf.device(device):
        vs = [tf.Variable(i) for i in (init if isinstance(init, tuple) else (init,))]
        out = tf.function(lambda *a: fn(*vs, *a))(*[tf.constant(a) for a in args])
    return out


def run_variable_eagerly(op, init, args, device):
    with tf.device(device):
        v = tf.Variable(init)
        r = v.read_value()  # a live read: the update must copy, not change it (copy-on-write)
        if op == "ResourceGather":
            return tf.gather(v, args[0])
        if op == "ResourceGatherNd":
            return tf.gather_nd(v, args[0])
        if op == "ResourceApplyGradientDescent":
            tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=args[0], delta=args[1])
        elif op in RESOURCE_SCATTERS:
            scatter_update(op, v, *args)
        else:
            (v.assign_add if op == "AssignAddVariableOp" else v.assign_sub)(args[0])
        return [v.read_value(), r]


def check_variable_case(op, attrs, fn, init, args, variable_access):
    if op in OPTIMIZERS:
        # Graphs: rewritten into element-wise ops. Eager: the kernel, where TF exports variable
        # access, and elsewhere a one-op tf.function that the same rewrite serves
        # (tensorflow_wgpu._variables). TF-CPU has no float16 kernels of the proximal optimizers:
        # their reference is its float32 kernel on the (exactly widened) inputs, rounded to half, as
        # in `run`.
        wide = attrs["T"] == "float16" and "Proximal" in op
        widen = lambda xs: tuple(x.astype(np.float32) if wide and x.dtype == np.float16 else x for x in xs)

        def reference(out):
            with tf.device("/CPU:0"):
                return [tf.cast(o, tf.float16) for o in out] if wide else out

        want = reference(run_variable(fn, widen(init), widen(args), "/CPU:0"))
        assert_same(op, run_variable(fn, init, args, GPU), want)

        def eagerly(device, init, args):
            with tf.device(device):
                return fn(*[tf.Variable(i) for i in init], *[tf.constant(a) for a in args])

        assert_same(op, eagerly(GPU, init, args), reference(eagerly("/CPU:0", widen(init), widen(args))))
        return
    if op not in ANY_DTYPE_VARIABLE_OPS and (attrs.get("dtype") or attrs["T"]) not in ASSIGN_UPDATE_DTYPES:
        # No AddV2/Sub kernel of this dtype on the device: a clear graph error, never a crash.
        with pytest.raises((tf.errors.NotFoundError, tf.errors.InvalidArgumentError), match="AddV2|Sub"):
            run_variable(fn, init, args, GPU)
    else:
        got, want = run_variable(fn, init, args, GPU), run_variable(fn, init, args, "/CPU:0")
        assert_same(op, got, want)
    # Eager mode: the kernel works on the variable, every dtype it registers, where TF lets plugins
    # reach it; elsewhere the op runs as a one-op tf.function that the graph rewrite serves
    # (tensorflow_wgpu._variables).
    dtype = attrs.get("dtype") or attrs["T"]
    if op in ANY_DTYPE_VARIABLE_OPS or dtype in ASSIGN_UPDATE_DTYPES or variable_access:
        assert_same(op, run_variable_eagerly(op, init, args, GPU), run_variable_eagerly(op, init, args, "/CPU:0"))
    else:
        with pytest.raises((tf.errors.NotFoundError, tf.errors.InvalidArgumentError), match="AddV2|Sub"):
            run_variable_eagerly(op, init, args, GPU)


# Resize attribute combinations: TF refuses half_pixel_centers with align_corners.
RESIZE_MODES = [(False, False), (True, False), (False, True)]
# (image shape, output size): up, down, odd factors, one pixel, a same-size resize, an empty batch.
RESIZE_SHAPES = [((2, 5, 7, 3), (9, 4)), ((1, 8, 8, 4), (3, 5)), ((1, 1, 1, 2), (3, 2)),
                 ((3, 4, 6, 1), (4, 6)), ((1, 3, 5, 5), (7, 13)), ((0, 3, 3, 2), (5, 5))]


def resize_cases(op, attrs, rng):
    """ResizeBilinear/Bicubic/NearestNeighbor and their gradients in every mode, against TF-CPU."""
    dt = tf.as_dtype(attrs["T"]).as_numpy_dtype
    raw = getattr(tf.raw_ops, op)
    for align, half in RESIZE_MODES:
        mode = dict(align_corners=align, half_pixel_centers=half)
        for shape, size in RESIZE_SHAPES:
            size = np.array(size, np.int32)
            if op in ("ResizeBilinear", "ResizeBicubic"):
                yield (lambda t, size=size, mode=mode: raw(images=t, size=size, **mode)), [floats(rng, shape).astype(dt)]
            elif op == "ResizeNearestNeighbor":
                yield (lambda t, size=size, mode=mode: raw(images=t, size=size, **mode)), [values(rng, dt, shape)]
            elif op in ("ResizeBilinearGrad", "ResizeBicubicGrad"):
                grads = floats(rng, (shape[0], *size, shape[3]), specials=False)
                image = np.zeros(shape, dt)
                yield (lambda g, i, mode=mode: raw(grads=g, original_image=i, **mode)), [grads, image]
            else:
                grads = floats(rng, (shape[0], *size, shape[3]), specials=False).astype(dt)
                original = np.array(shape[1:3], np.int32)
                yield (lambda g, original=original, mode=mode: raw(grads=g, size=original, **mode)), [grads]
                if (align, half) == (True, False):
                    # TF's nearest-neighbour gradient takes both at once (no check), rounding
                    # half-pixel coordinates.
                    both = dict(align_corners=True, half_pixel_centers=True)
                    yield (lambda g, original=original: raw(grads=g, size=original, **both)), [grads]


def band_part_cases(op, attrs, rng):
    """MatrixBandPart: lower and upper triangles (causal masks), bands, everything, the diagonal,
    limits equal to the matrix's size, batches, empty and one-element matrices, on raw bits."""
    dt, it = attrs["T"], np.int32 if attrs["Tindex"] == "int32" else np.int64
    for shape in [(4, 4), (3, 5, 6), (2, 7, 3), (1, 1), (0, 3), (2, 2, 9, 1)]:
        x = values(rng, dt, shape)
        for lower, upper in [(-1, 0), (0, -1), (1, 2), (0, 0), (-1, -1), (shape[-2], shape[-1])]:
            if lower > shape[-2] or upper > shape[-1]:  # (refused: test_fuzz tries those)
                continue
            yield (lambda x, lo, up: tf.raw_ops.MatrixBandPart(input=x, num_lower=lo, num_upper=up)), [x, it(lower), it(upper)]


def scan_cases(op, attrs, rng):
    """Cumsum and Cumprod on every axis, exclusive and reverse, NaN/Inf, empty tensors, and axes
    longer than llvmpipe's loop limit (65535: scanned in blocks)."""
    it = np.int32 if attrs["Tidx"] == "int32" else np.int64
    scan = getattr(tf.raw_ops, op)
    dt = tf.as_dtype(attrs["T"])
    if dt.is_integer:
        # Integers wrap: random bit patterns with the type's extremes, and small values whose
        # products stay exact for a while before they wrap too.
        for shape, axis in [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 3, 4), 1), ((2, 0, 3), 1), ((2, 70001), 1)]:
            for x in [integers(rng, dt, shape), rng.integers(-3, 4, size=shape).astype(dt.as_numpy_dtype)]:
                for exclusive in (False, True):
                    for reverse in (False, True):
                        yield (lambda x, a, e=exclusive, r=reverse: scan(x=x, axis=a, exclusive=e, reverse=r)), \
                            [x, it(axis)]
        return
    for shape, axis in [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 3, 4), 1), ((2, 0, 3), 1), ((2, 70001), 1),
                        ((140001, 2), 0)]:
        x = typed(attrs, floats(rng, shape, specials=max(shape) < 100, scale=1.0))
        if op == "Cumprod" and max(shape) > 100:
            # Long products under- or overflow: factors near 1 keep them finite.
            x = typed(attrs, 1.0 + floats(rng, shape, specials=False, scale=1e-3))
        for exclusive in (False, True):
            for reverse in (False, True):
                yield (lambda x, a, e=exclusive, r=reverse: scan(x=x, axis=a, exclusive=e, reverse=r)), [x, it(axis)]


SAMPLING_KERNELS = ["lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic"]


def scale_and_translate_cases(op, attrs, rng):
    """ScaleAndTranslate (tf.image.resize's lanczos, gaussian, area-like and antialiased methods)
    and its gradient: every sampling kernel, with and without antialiasing, up- and downscaling,
    translations that move samples off the image."""
    dt = tf.as_dtype(attrs["T"]).as_numpy_dtype
    for kernel in SAMPLING_KERNELS:
        for antialias in (False, True):
            for shape, size, scale, translation in [((2, 5, 7, 3), (9, 4), (1.8, 0.6), (0.3, -0.7)),
                                                   ((1, 8, 8, 2), (3, 5), (0.4, 0.6), (0.0, 0.0)),
                                                   ((1, 9, 4, 1), (20, 11), (2.2, 2.75), (-3.0, 1.0))]:
                transform = dict(scale=np.array(scale, np.float32), translation=np.array(translation, np.float32),
                                 kernel_type=kernel, antialias=antialias)
                if op == "ScaleAndTranslate":
                    fn = lambda x, size=np.array(size, np.int32), t=transform: tf.raw_ops.ScaleAndTranslate(images=x, size=size, **t)
                    yield fn, [floats(rng, shape).astype(dt)]
                else:
                    grads = floats(rng, (shape[0], *size, shape[3]), specials=False)
                    fn = lambda g, x, t=transform: tf.raw_ops.ScaleAndTranslateGrad(grads=g, original_image=x, **t)
                    yield fn, [grads, np.zeros(shape, dt)]


def mirror_pad_grad_cases(op, attrs, rng):
    """MirrorPadGrad in both modes: padded dims first, last and all, int32 and int64 paddings,
    paddings up to their limits, an unpadded (same-shape) gradient. (TF 2.21 refuses empty
    dimensions: total paddings must be below the gradient's size; the fuzzer tries them.)"""
    dt = tf.as_dtype(attrs["T"]).as_numpy_dtype
    for mode, limit in (("REFLECT", 1), ("SYMMETRIC", 0)):
        for shape, pads in [((5,), [[2, 3]]), ((4, 6), [[0, 0], [1, 2]]), ((3, 4, 5), [[1, 1], [0, 0], [2, 1]]),
                            ((2, 3, 4, 5), [[1, 0], [2, 2], [3, 0], [0, 4]]), ((3, 3), [[0, 0], [0, 0]])]:
            pads = np.minimum(np.array(pads), np.maximum(np.array(shape)[:, None] - limit, 0))
            padded = tuple(int(d + p.sum()) for d, p in zip(shape, pads))
            for ptype in (np.int32, np.int64):
                grad = floats(rng, padded, specials=False).astype(dt)
                yield (lambda g, pads=pads.astype(ptype), mode=mode:
                       tf.raw_ops.MirrorPadGrad(input=g, paddings=pads, mode=mode)), [grad]


CASES = {}
for name in UNARY:
    CASES[name] = unary_cases
for name in BINARY:
    CASES[name] = binary_cases
for name in COMPARE:
    CASES[name] = compare_cases
for name in ("IsNan", "IsInf", "IsFinite"):
    CASES[name] = classify_cases
CASES["ApproximateEqual"] = approximate_equal_cases
for name in ("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3", "MatrixDiagPart", "MatrixDiagPartV2", "MatrixDiagPartV3",
             "MatrixSetDiag", "MatrixSetDiagV2", "MatrixSetDiagV3", "Diag", "DiagPart"):
    CASES[name] = diag_cases
for name in ("TopKV2", "InTopKV2", "InTopK", "LowerBound", "UpperBound", "Bucketize"):
    CASES[name] = sort_cases
for name in ("LogicalAnd", "LogicalOr", "LogicalNot"):
    CASES[name] = logical_cases
for name in ("Select", "SelectV2"):
    CASES[name] = select_cases
for name in ("BiasAdd", "BiasAddV1", "AddN", "ClipByValue", "Cross"):
    CASES[name] = misc_math_cases
CASES["Cast"] = cast_cases
for name in COMPLEX_OPS:
    CASES[name] = complex_cases
for name in ("StridedSlice", "Slice", "Split", "SplitV", "Transpose", "Tile", "Pad", "PadV2", "MirrorPad",
             "SpaceToDepth", "DepthToSpace", "SpaceToBatchND", "BatchToSpaceND", "ReverseV2", "BroadcastTo", "Fill", "ConcatV2", "Pack", "Unpack", "GatherV2", "GatherNd",
             "Reverse", "ConjugateTranspose", "Concat", "Gather", "Roll"):
    CASES[name] = movement_cases
for name in ("Sum", "Prod", "Max", "Min", "Mean", "All", "Any", "ArgMax", "ArgMin", "EuclideanNorm"):
    CASES[name] = reduce_cases
for name in ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"):
    CASES[name] = matmul_cases
for name in ("Softmax", "LogSoftmax", "Conv2D", "DepthwiseConv2dNative", "MaxPool", "MaxPoolV2", "AvgPool",
             "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV2",
             "FusedBatchNormGradV3", "OneHot", "Range", "LinSpace"):
    CASES[name] = nn_cases
for name in ("_FusedConv2D", "_FusedMatMul"):
    CASES[name] = fused_cases
for name in ("ResourceGather", "ResourceGatherNd", "AssignAddVariableOp", "AssignSubVariableOp",
             "ResourceApplyGradientDescent", *RESOURCE_SCATTERS, *OPTIMIZERS):
    CASES[name] = variable_cases
for name in GRADS:
    CASES[name] = grad_cases
for name in ("BiasAddGrad", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"):
    CASES[name] = training_cases
for name in ("Conv2DBackpropInput", "Conv2DBackpropInputV2", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
             "DepthwiseConv2dNativeBackpropFilter"):
    CASES[name] = conv_grad_cases
for name in ("MaxPoolGrad", "MaxPoolGradV2", "AvgPoolGrad", "MaxPoolWithArgmax", "MaxPoolGradWithArgmax",
             "MaxPoolGradGrad", "MaxPoolGradGradV2"):
    CASES[name] = pool_grad_cases
for name in ("StatelessRandomGetKeyCounter", "StatelessRandomUniformV2", "StatelessRandomNormalV2",
             "StatelessTruncatedNormalV2", "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
             "StatelessRandomUniformInt", "StatelessRandomUniformFullInt", "StatelessRandomUniformIntV2",
             "StatelessRandomUniformFullIntV2", "StatelessRandomGetAlg", "StatelessRandomGetKeyCounterAlg",
             "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"):
    CASES[name] = random_cases
for name in ("L2Loss", "UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMin", "UnsortedSegmentMax",
             "ScatterNd", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin", "TensorScatterMax",
             "TensorScatterUpdate", "ScatterNdNonAliasingAdd", "SegmentSum", "SegmentProd", "SegmentMin", "SegmentMax",
             "SegmentMean"):
    CASES[name] = scatter_and_loss_cases
for name in ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3D", "AvgPool3D", "MaxPool3DGrad", "AvgPool3DGrad", "MaxPool3DGradGrad"):
    CASES[name] = volume_cases
CASES["Conv"] = generic_conv_cases
CASES["StridedSliceGrad"] = slice_grad_cases
CASES["ReverseSequence"] = reverse_sequence_cases
for name in ("ResizeBilinear", "ResizeBicubic", "ResizeNearestNeighbor", "ResizeBilinearGrad", "ResizeBicubicGrad",
             "ResizeNearestNeighborGrad"):
    CASES[name] = resize_cases
CASES["MirrorPadGrad"] = mirror_pad_grad_cases
CASES["MatrixBandPart"] = band_part_cases
CASES["Where"] = where_cases
CASES["Unique"] = CASES["UniqueWithCounts"] = CASES["ListDiff"] = unique_cases
CASES["Bincount"] = CASES["DenseBincount"] = bincount_cases
for name in ("Cumsum", "Cumprod", "CumulativeLogsumexp"):
    CASES[name] = scan_cases
for name in ("ScaleAndTranslate", "ScaleAndTranslateGrad"):
    CASES[name] = scale_and_translate_cases
for name in ("CudnnRNN", "CudnnRNNV2", "CudnnRNNV3", "CudnnRNNBackprop", "CudnnRNNBackpropV2", "CudnnRNNBackpropV3"):
    CASES[name] = rnn_cases


# The op set issue 3 asks for (float32 at least). ResourceGather runs in graphs only (see
# src/rewrite/mod.rs); its test cases run it inside tf.function.
REQUIRED_FLOAT32_OPS = (
    "Abs Neg Sign Square Sqrt Rsqrt Reciprocal Exp Expm1 Log Log1p Sin Cos Tan Tanh Sigmoid Erf Floor Ceil "
    "Round Rint Relu Relu6 Elu Selu LeakyRelu Softplus Softsign IsNan IsInf IsFinite ZerosLike OnesLike "
    "AddV2 Sub Mul RealDiv DivNoNan FloorDiv FloorMod Maximum Minimum Pow SquaredDifference Equal NotEqual "
    "Less LessEqual Greater GreaterEqual BiasAdd AddN Select SelectV2 ClipByValue Cast Fill Range Transpose "
    "ConcatV2 Pack Unpack Split SplitV Slice StridedSlice Tile Pad PadV2 MirrorPad GatherV2 ResourceGather OneHot ReverseV2 "
    "BroadcastTo Sum Mean Max Min Prod ArgMax ArgMin MatMul BatchMatMulV2 BatchMatMulV3 Einsum Softmax "
    "LogSoftmax Conv2D DepthwiseConv2dNative MaxPool AvgPool FusedBatchNormV3"
).split()


def test_required_ops_are_registered():
    registered = {op for op, attrs in KERNELS if "float32" in attrs.values() or op == "Cast"}
    missing = [op for op in REQUIRED_FLOAT32_OPS if op not in registered]
    assert not missing, f"required float32 ops not registered: {missing}"
    bool_ops = {op for op, attrs in KERNELS if not attrs or "bool" in attrs.values()}
    assert {"LogicalAnd", "LogicalOr", "LogicalNot", "All", "Any"} <= bool_ops


def test_optimizer_signatures_match_tf_op_registry():
    """`optimizer_ops` (plain data, shared with the fuzzer) names each optimizer op's inputs as TF does."""
    from tensorflow.python.framework import op_def_registry

    resource = tf.resource.as_datatype_enum
    for op, want in optimizer_ops.SIGNATURES.items():
        inputs = op_def_registry.get(op).input_arg
        got = (tuple(a.name for a in inputs if a.type == resource), tuple(a.name for a in inputs if a.type != resource))
        assert got == want, op


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_past_eight_dimensions_matches_numpy(mode, strict_placement):
    """Nine padded dimensions, which do not merge: the index map runs one outer row at a time,
    padding rows among them. TF-CPU's Pad stops at rank 8, so NumPy is the reference."""
    x = np.arange(2**9, dtype=np.float32).reshape((2,) * 9)
    pads = [[1, 1]] * 9
    with tf.device("/GPU:0"):
        got = tf.pad(tf.constant(x), pads, mode=mode).numpy()
    np.testing.assert_array_equal(got, np.pad(x, pads, mode={"CONSTANT": "constant", "REFLECT": "reflect",
                                                             "SYMMETRIC": "symmetric"}[mode]))


@pytest.mark.parametrize("op", ["transpose", "reverse"])
def test_index_maps_of_many_rows_past_eight_dimensions(op, strict_placement):
    """21 dimensions that do not merge: 2^13 rows of one rank less each, more than the 4096 parts
    the index map once stopped at (Unimplemented). NumPy is the reference."""
    x = np.arange(2**21, dtype=np.float32).reshape((2,) * 21)
    reversed_axes = list(range(21))[::-1]
    run = {"transpose": (lambda t: tf.transpose(t, reversed_axes), lambda a: np.transpose(a, reversed_axes)),
           "reverse": (lambda t: tf.reverse(t, list(range(0, 21, 2))), lambda a: np.flip(a, list(range(0, 21, 2))))}[op]
    with tf.device("/GPU:0"):
        got = run[0](tf.constant(x)).numpy()
    np.testing.assert_array_equal(got, run[1](x))


def test_every_registered_op_is_exercised():
    missing = sorted({op for op, _ in KERNELS if op not in CASES})
    assert not missing, f"registered ops without a test case: {missing}"


def kernel_id(kernel):
    op, attrs = kernel
    return "-".join([op] + [f"{v}" for v in attrs.values()])


@pytest.mark.parametrize("kernel", KERNELS, ids=[kernel_id(k) for k in KERNELS])
def test_kernel_matches_cpu(kernel, strict_placement, variable_access):
    op, attrs = kernel
    rng = rng_for(kernel_id(kernel))
    cases = list(CASES[op](op, attrs, rng))
    assert cases, f"no cases for {op}"
    for case in cases:
        if case[0] == "variable":
            check_variable_case(op, attrs, *case[1:], variable_access)
            continue
        if case[0] == "rnn":
            check_rnn_case(op, attrs, *case[1:])
            continue
        if case[0] == "fused":
            _, fop, fused, args = case
            got = run_fused(fop, fused, args)
            want = fused_reference(fop, fused, args).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{fop} {fused}")
            continue
        fn, args, *reference = case  # a case may name its CPU reference (an op TF-CPU lacks)
        got, want = run(fn, args, op, *reference)
        assert_same(op, got, want)


NO_LOOP_LIMIT_SCRIPT = """
import numpy as np, tensorflow as tf
rng = np.random.default_rng(7)
g = rng.standard_normal((2, 9, 7, 3)).astype(np.float32)
x = np.zeros((2, 4, 5, 3), np.float32)
cases = [
    lambda: tf.raw_ops.ResizeBilinearGrad(grads=g, original_image=x, align_corners=False, half_pixel_centers=True),
    lambda: tf.raw_ops.ResizeNearestNeighborGrad(grads=g, size=[4, 5], align_corners=True, half_pixel_centers=False),
    lambda: tf.raw_ops.MirrorPadGrad(input=g, paddings=[[0, 0], [2, 3], [1, 1], [0, 0]], mode="REFLECT"),
]
for case in cases:
    with tf.device("/GPU:0"):
        got = case().numpy()
    with tf.device("/CPU:0"):
        want = case().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
print("ok")
"""


def test_bincount_drops_negative_values_as_tf_gpu_does(strict_placement):
    # TF-CPU refuses a negative value; TF-GPU's histogram counts [0, size) and drops the rest.
    values = np.array([-1, 0, 2, -5, 2, 9], np.int32)
    with tf.device(GPU):
        counts = tf.raw_ops.Bincount(arr=values, size=3, weights=tf.constant([], tf.float32))
        dense = tf.raw_ops.DenseBincount(input=values.reshape(2, 3), size=3, weights=tf.constant([], tf.int32))
    assert counts.numpy().tolist() == [1.0, 0.0, 2.0]
    assert dense.numpy().tolist() == [[1, 0, 1], [0, 0, 1]]


def test_64_bit_scatter_chains_longer_than_a_loop_may_run(strict_placement):
    """8-byte integer scatters chain each row's updates and let one invocation walk the chain; on
    llvmpipe (loops capped at 65535 iterations) the tuples go in batches that bound a chain. Here
    70,000 ones land on one row, and an integer division walks 2,000 divisors (20 minus twos among
    ones, shuffled) of a value over 2^32, whose every step runs a 64-step loop: a chain cut short
    would leave a smaller sum and a larger quotient."""
    rng = np.random.default_rng(11)
    ids = np.zeros(70_000, np.int64)
    ids[::7] = 1
    with tf.device(GPU):
        sums = tf.math.unsorted_segment_sum(tf.ones([70_000, 2], tf.int64), ids, 2).numpy()
    assert sums.tolist() == [[60_000, 60_000], [10_000, 10_000]]
    divisors = np.ones(2_000, np.int64)
    divisors[rng.choice(2_000, size=20, replace=False)] = -2
    with tf.device(GPU):
        table = tf.Variable(np.array([[2**62 + 5], [-(2**62)], [7]], np.int64))
        step = tf.function(lambda i, u: table.scatter_div(tf.IndexedSlices(u, i)))
        step(np.zeros(2_000, np.int32), divisors[:, None])
        got = table.numpy().ravel().tolist()
    assert got == [(2**62 + 5) // 2**20, -(2**62), 7]


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16])
def test_half_precision_scatter_updates_round_to_nearest_even(dtype, strict_placement):
    """16-bit float ResourceScatterAdd/Sub: each update's float32 result rounded to nearest even
    (ties, subnormals, overflow to infinity), as TF-CPU's half arithmetic rounds."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**16, size=(2, 4096), dtype=np.uint16)
    if dtype == tf.float16:
        x = bits.view(np.float16)
        x[(bits & 0x7C00) == 0x7C00] = 1.0  # no NaN or inf inputs
        x[:, :64] = np.float16(60000.0)  # sums past the largest half
        v, u = x[0].reshape(-1, 1), x[1].reshape(-1, 1)
    else:
        x = tf.bitcast(tf.constant(bits), tf.bfloat16).numpy()
        wide = np.abs(x.astype(np.float32))
        # No NaN or inf, and no subnormals (float32's: adapters may flush them).
        x[~np.isfinite(wide) | ((wide != 0) & (wide < np.finfo(np.float32).tiny))] = 1.0
        v, u = x[0].reshape(-1, 1), x[1].reshape(-1, 1)
    indices = rng.permutation(4096).astype(np.int32)
    for op, sign in (("ResourceScatterAdd", 1.0), ("ResourceScatterSub", -1.0)):
        with tf.device(GPU):
            var = tf.Variable(v)
            getattr(tf.raw_ops, op)(resource=var.handle, indices=indices, updates=u)
            got = var.numpy().astype(np.float32)
        exact = v.astype(np.float32).copy()
        exact[indices] += sign * u.astype(np.float32)
        want = tf.cast(tf.constant(exact), dtype).numpy().astype(np.float32)
        np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("dtype", [tf.uint32, tf.int8, tf.uint16, tf.int64])
def test_integer_scatter_division_by_zero_sets_every_bit(dtype, strict_placement):
    """TF-CPU refuses a zero divisor and TF-GPU leaves the quotient undefined; every integer width
    here gives a quotient with every bit set, as integer Div does (README, "Known limits")."""
    with tf.device(GPU):
        var = tf.Variable(tf.constant([[7, 9], [5, 6]], dtype))
        tf.raw_ops.ResourceScatterDiv(resource=var.handle, indices=[0], updates=tf.constant([[0, 2]], dtype))
        got = var.numpy()
    ones = np.array(-1).astype(dtype.as_numpy_dtype)
    assert got.tolist() == [[ones, 4], [5, 6]]


def test_gradient_sums_plan_loops_as_on_a_gpu():
    """The gather-sum passes of the resize and mirror-pad gradients with no loop limit (GPUs have
    none; TF_WGPU_NO_LOOP_LIMIT=1 plans so on llvmpipe): each destination's whole source list in
    one launch, whatever its place in the table (a bound computed past u32 wrapped there)."""
    env = dict(os.environ, TF_WGPU_NO_LOOP_LIMIT="1", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", NO_LOOP_LIMIT_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


HALF_PARTS_SCRIPT = """
import numpy as np, tensorflow as tf
x = np.random.default_rng(3).standard_normal((7, 2, 3, 1)).astype(np.float16)
for mode in ({}, {"half_pixel_centers": True}):
    with tf.device("/GPU:0"):
        got = tf.raw_ops.ResizeNearestNeighbor(images=x, size=[15, 23], **mode).numpy()
    with tf.device("/CPU:0"):
        want = tf.raw_ops.ResizeNearestNeighbor(images=x, size=[15, 23], **mode).numpy()
    assert got.tobytes() == want.tobytes(), (got, want)
print("ok")
"""


def test_half_precision_nearest_resize_in_batch_parts():
    """Seven float16 images of 345 elements each, in batch parts under a 4 KiB binding limit: the
    second part (images 3 to 5) starts half-way into a 32-bit word, and the gather keeps the other
    half of that word."""
    env = dict(os.environ, TF_WGPU_MAX_BINDING_BYTES="4096", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", HALF_PARTS_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_matmul_of_views_at_unaligned_offsets(strict_placement):
    """Split outputs start 50 * 65 floats into the buffer: not a storage-binding boundary, so both
    matmul kernels (and the tiled kernel's packer) must honour an element offset."""
    rng = rng_for("matmul views")
    x = rng.standard_normal((150, 65)).astype(np.float32)
    w = rng.standard_normal((65, 40)).astype(np.float32)
    with tf.device(GPU):
        parts = tf.split(tf.identity(tf.constant(x)), 3)
        got = [tf.matmul(p, tf.constant(w)).numpy() for p in parts] + [tf.matmul(tf.constant(w), p, transpose_a=True, transpose_b=True).numpy() for p in parts]
    for i in range(3):
        np.testing.assert_allclose(got[i], x[50 * i:50 * (i + 1)] @ w, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got[3 + i], (x[50 * i:50 * (i + 1)] @ w).T, rtol=1e-5, atol=1e-4)


def test_vectorised_elementwise_ops_on_views(strict_placement):
    """Split rows of 4099 floats start at every offset mod 4 inside one buffer: rows on a vec4 run
    four elements at a time (binary and unary ops), the others the scalar kernel, and both must
    honour the offset."""
    rng = rng_for("vec4 views")
    x = rng.standard_normal((8, 4099)).astype(np.float32)
    y = rng.standard_normal((8, 4099)).astype(np.float32)
    with tf.device(GPU):
        xs = tf.split(tf.identity(tf.constant(x)), 8)
        ys = tf.split(tf.identity(tf.constant(y)), 8)
        sums = [tf.add(a, b).numpy() for a, b in zip(xs, ys)]
        scaled = [tf.subtract(2.0, a).numpy() for a in xs]
        grads = [tf.raw_ops.ReluGrad(gradients=a, features=b).numpy() for a, b in zip(xs, ys)]
        relus = [tf.nn.relu(a).numpy() for a in xs]
    for i in range(8):
        np.testing.assert_array_equal(relus[i], np.maximum(x[i:i + 1], 0))
        np.testing.assert_array_equal(sums[i], x[i:i + 1] + y[i:i + 1])
        np.testing.assert_array_equal(scaled[i], 2.0 - x[i:i + 1])
        np.testing.assert_array_equal(grads[i], x[i:i + 1] * (y[i:i + 1] > 0))


def dispatch_log(script, **env_vars):
    """The plugin's trace log (each dispatch and submit) of `script`, run in a fresh interpreter with
    `env_vars` added to the environment. The tests that read it name lavapipe's kernels, so it runs
    the CPU kernel profile unless `TF_WGPU_KERNELS` is given (CI also runs this file under
    TF_WGPU_KERNELS=gpu)."""
    env = dict(os.environ, TF_WGPU_LOG="tensorflow_wgpu=trace", TF_CPP_MIN_LOG_LEVEL="2")
    env.update({"TF_WGPU_KERNELS": "cpu", **env_vars})
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stderr


def test_large_elementwise_ops_run_four_elements_at_a_time():
    """The vec4 kernel really runs (the cases above would pass on the scalar kernel alone): the
    dispatch log of a big Mul, a Mul by a scalar, a ReluGrad, a Relu, a row added to a matrix and a
    BiasAdd names it."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    x = tf.identity(tf.ones([64, 66]))\n"
        "    (x * x).numpy(); (x * 2.0).numpy(); tf.raw_ops.ReluGrad(gradients=x, features=x).numpy()\n"
        "    tf.nn.relu(x).numpy()\n"
        "    y, row = tf.identity(tf.ones([64, 64])), tf.identity(tf.ones([64]))\n"
        "    (y + row).numpy(); tf.nn.bias_add(y, row).numpy()\n"
    )
    log = dispatch_log(script)
    assert log.count("dispatch binary vec4") >= 5, log[-3000:]
    assert "dispatch unary vec4" in log, log[-3000:]


def test_large_elementwise_ops_read_operands_through_textures(strict_placement):
    """On CPU adapters, f32 binary and unary ops of 64K elements or more read their operands from
    textures (copies of them, `main_vec4_texels`): full-size operands, rows and scalars on either side, a tail
    of 3 elements, split parts of odd lengths, and textures that grow (a partial last row of 4096
    texels, then 20 rows, then 128) and are reused smaller, against NumPy."""
    rng = rng_for("texels")
    x = rng.standard_normal((257, 1023)).astype(np.float32)
    y = rng.standard_normal((257, 1023)).astype(np.float32)
    big = rng.standard_normal((2048, 1024)).astype(np.float32)
    row = rng.standard_normal(1024).astype(np.float32)
    rows = rng.standard_normal((8, 70001)).astype(np.float32)
    with tf.device(GPU):
        tx, ty, tbig, trow = (tf.identity(tf.constant(v)) for v in (x, y, big, row))
        got = {
            "sub": tf.subtract(tx, ty), "div": tf.divide(tx, ty), "max": tf.maximum(tx, ty),
            "relu_grad": tf.raw_ops.ReluGrad(gradients=tx, features=ty),
            "sq_diff": tf.math.squared_difference(tx, ty),
            "scalar_minus": tf.subtract(3.0, tx), "minus_scalar": tf.subtract(tx, 3.0),
            "big_plus_row": tbig + trow, "row_minus_big": trow - tbig, "bias": tf.nn.bias_add(tbig, trow),
            "big_times_big": tbig * tbig, "small_again": tf.subtract(ty, tx),
            "relu": tf.nn.relu(tx), "neg": tf.negative(tbig), "abs": tf.abs(ty),
        }
        got = {k: v.numpy() for k, v in got.items()}
        parts = tf.split(tf.identity(tf.constant(rows)), 8)
        diffs = [(p - 1.5 * p).numpy() for p in parts]
    want = {
        "sub": x - y, "div": x / y, "max": np.maximum(x, y), "relu_grad": x * (y > 0),
        "sq_diff": (x - y) ** 2, "scalar_minus": 3.0 - x, "minus_scalar": x - 3.0,
        "big_plus_row": big + row, "row_minus_big": row - big, "bias": big + row,
        "big_times_big": big * big, "small_again": y - x,
        "relu": np.maximum(x, 0), "neg": -big, "abs": np.abs(y),
    }
    for k in want:
        if k == "div":
            np.testing.assert_allclose(got[k], want[k], rtol=3e-7, err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], want[k].astype(np.float32), err_msg=k)
    for i in range(8):
        np.testing.assert_array_equal(diffs[i], rows[i:i + 1] - np.float32(1.5) * rows[i:i + 1])


def test_large_elementwise_ops_take_the_texel_kernel():
    """The case above would pass on the storage kernel alone: the dispatch log shows the texel
    kernel for a full-size pair, a row, a scalar, a split part with a tail and a Relu, and the
    storage kernels below the texel kernels' threshold."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    x, row = tf.identity(tf.ones([256, 1024])), tf.identity(tf.ones([1024]))\n"
        "    (x - x).numpy(); (x + row).numpy(); (x * 2.0).numpy()\n"
        "    part = tf.split(tf.identity(tf.ones([2, 70001])), 2)[1]\n"
        "    (part + part).numpy()\n"
        "    small = tf.identity(tf.ones([64, 66]))\n"
        "    (small + small).numpy(); tf.nn.relu(x).numpy(); tf.nn.relu(small).numpy()\n"
    )
    log = dispatch_log(script)
    assert log.count("dispatch binary vec4 texels") == 4, log[-3000:]
    assert log.count("dispatch unary vec4 texels") == 1, log[-3000:]
    assert "dispatch unary vec4 [" in log, log[-3000:]
    assert "dispatch binary vec4 [" in log, log[-3000:]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int64",
                                   "complex64", "complex128", "bool"])
def test_tiles_and_broadcasts_of_a_row_match_cpu(strict_placement, dtype):
    """Tile and BroadcastTo that repeat their input whole (Keras's moments gradient tiles a
    [1, 1, 1, C] row over the batch) copy it by vec4s, from a texture on CPU adapters for 64K vec4s
    or more: rows of whole and partial vec4s, one to many repeats, against TF-CPU bit for bit."""
    if dtype == "float64" and ("Tile", {"T": "float64"}) not in KERNELS:
        pytest.skip("no float64 kernels on this adapter")
    rng = rng_for(f"row tiles {dtype}")
    cases = [((1, 1, 1, 32), (32, 32, 32, 1)), ((1, 16), (7, 1)), ((1, 3), (5000, 1)), ((1, 1, 64), (3, 1000, 1)),
             ((1, 4096), (70, 1))]
    for shape, multiples in cases:
        x = tf.cast(tf.constant(rng.standard_normal(shape) * 50), dtype)
        with tf.device(GPU):
            tiled = tf.tile(tf.identity(x), multiples).numpy()
            target = [s * m for s, m in zip(shape, multiples)]
            broadcast = tf.broadcast_to(tf.identity(x), target).numpy()
        with tf.device("/CPU:0"):
            want = tf.tile(x, multiples).numpy()
        np.testing.assert_array_equal(tiled, want, err_msg=f"{shape} {multiples}")
        np.testing.assert_array_equal(broadcast, want, err_msg=f"{shape} {multiples}")


def test_large_column_reductions_read_through_textures(strict_placement):
    """Column reductions of 64K vec4s or more (BatchNormalization's moments, BiasAddGrad) read f32
    input from a texture on CPU adapters: Sum, Mean, Max, Min and Prod down the columns of an NHWC
    batch and of a batch of matrices (one kept dimension outside the reduced one), within float32's
    rounding of the exact float64 result (Max and Min exactly); the dispatch log shows the kernel."""
    rng = rng_for("column texels")
    cases = [(rng.standard_normal((32, 32, 32, 32)), [0, 1, 2]), (rng.standard_normal((4, 8192, 32)), [1])]
    ops = {"sum": (tf.reduce_sum, np.sum), "mean": (tf.reduce_mean, np.mean), "max": (tf.reduce_max, np.max),
           "min": (tf.reduce_min, np.min), "prod": (tf.reduce_prod, np.prod)}
    for x, axes in cases:
        x = x.astype(np.float32)
        # Products of values near 1, so that thousands of factors stay finite.
        near_one = (1 + x / 1000).astype(np.float32)
        for name, (tf_op, np_op) in ops.items():
            data = near_one if name == "prod" else x
            with tf.device(GPU):
                got = tf_op(tf.identity(tf.constant(data)), axes).numpy()
            exact = np_op(data.astype(np.float64), axis=tuple(axes))
            if name in ("max", "min"):
                np.testing.assert_array_equal(got, exact.astype(np.float32), err_msg=name)
            else:
                np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-4, err_msg=f"{name} {x.shape}")
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    tf.reduce_sum(tf.identity(tf.ones([32, 32, 32, 32])), [0, 1, 2]).numpy()\n"
    )
    assert "dispatch reduce_columns_vec16_texels" in dispatch_log(script)


def test_first_layer_filter_gradients_read_through_textures():
    """Conv2DBackpropFilter of a 3-channel input with 64K vec4s of dy takes the rows kernel with
    its loads from textures on CPU adapters (test_conv_grads.py's `*-texels` layers check the
    results)."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    x, dy = tf.identity(tf.ones([4, 64, 64, 3])), tf.identity(tf.ones([4, 64, 64, 32]))\n"
        "    tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 3, 3, 32], out_backprop=dy,\n"
        "                                    strides=[1, 1, 1, 1], padding='SAME').numpy()\n"
    )
    assert "dispatch conv2d_grad_filter_rows texels" in dispatch_log(script)


def test_tiles_of_a_row_take_the_row_kernels():
    """The case above would pass on the index-map kernel alone: the dispatch log shows the texel
    kernel for a large repeat, the vec4 kernel for a small one, and the map for a row of 3 floats."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    row = tf.identity(tf.ones([1, 1, 1, 32]))\n"
        "    tf.tile(row, [32, 32, 32, 1]).numpy(); tf.broadcast_to(row, [4, 4, 4, 32]).numpy()\n"
        "    tf.tile(tf.identity(tf.ones([1, 3])), [100, 1]).numpy()\n"
    )
    log = dispatch_log(script)
    assert log.count("dispatch repeat_row_texels") == 1, log[-3000:]
    assert log.count("dispatch repeat_row_vec4") == 1, log[-3000:]
    assert "dispatch map_words" in log, log[-3000:]


ARG_FLOAT_TYPES = [t for t in ("float32", "float64", "float16", "bfloat16")
                   if ("ArgMax", {"T": t, "output_type": "int64"}) in KERNELS]


@pytest.mark.parametrize("dtype", ARG_FLOAT_TYPES)
def test_argmax_and_argmin_treat_nan_and_infinities_as_tf_does(strict_placement, dtype):
    """ArgMax/ArgMin follow Eigen's tuple reducers, which TF's CPU and GPU kernels run: a NaN never
    wins, ties go to the lowest index, and where nothing beats the start (the type's lowest or
    highest at index 0: all NaN, or -inf for ArgMax) the answer is 0. Rows long enough for the
    workgroup tree to meet NaNs out of order are included."""
    rows = [[1, np.nan, 3], [np.nan, 5, np.nan], [2, 3, np.nan], [5, np.nan, 1], [np.nan, np.nan],
            [-np.inf, np.nan, -np.inf], [np.inf, np.inf], [np.inf, np.nan, -np.inf]]
    rng = np.random.default_rng(5)
    long = rng.standard_normal(3000)
    long[rng.integers(0, 3000, 300)] = np.nan
    long[[7, 2900]] = 9.0
    for values in [*rows, long]:
        x = np.asarray(values, dtype=np.float64)
        for fn in (tf.math.argmax, tf.math.argmin):
            with tf.device(GPU):
                got = fn(tf.identity(tf.constant(x, dtype))).numpy()
            with tf.device("/CPU:0"):
                want = fn(tf.constant(x, dtype)).numpy()
            assert got == want, (fn.__name__, dtype, values if len(values) < 10 else "long row", got, want)


@pytest.mark.skipif(("Angle", {"T": "complex128", "Tout": "float64"}) not in KERNELS,
                    reason="complex128 Angle needs SHADER_F64")
def test_complex128_angle_on_special_values(strict_placement):
    """complex128 Angle is atan2(imaginary, real) in f64: every pair of signed zeros, ones,
    infinities, NaN, a subnormal-range part and ordinary values, within 2 ulp of TF-CPU, NaN where
    it is NaN and zeros' signs as it gives them."""
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 3.5, -2.25])
    x = (v[:, None] + 1j * v[None, :]).ravel().astype(np.complex128)
    with tf.device(GPU):
        got = tf.math.angle(tf.identity(tf.constant(x))).numpy()
    with tf.device("/CPU:0"):
        want = tf.math.angle(tf.constant(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))
    np.testing.assert_array_less(np.abs(got[finite] - want[finite]), 2 * np.spacing(np.abs(want[finite])) + 1e-320)


@pytest.mark.skipif(("Round", {"T": "float64"}) not in KERNELS, reason="no float64 kernels on this adapter")
def test_float64_rounding_at_every_magnitude(strict_placement):
    """float64 Round, Rint, Floor, Ceil and the casts to int64 and int32 keep every bit from 2^0 to
    2^60, halves and fractions beside each power, both signs, as TF-CPU. (llvmpipe's own f64 round
    and trunc return values from 2^24 up unchanged on some CPUs: the kernels do not use them.)"""
    powers = 2.0 ** np.arange(61)
    x = np.concatenate([powers * 1.37, powers + 0.5, powers - 0.5, powers + 1.5, 3 * powers + 0.25,
                        [0.0, -0.0, 0.49999999999999994, 4503599627370495.5, np.inf, np.nan]])
    x = np.concatenate([x, -x])
    for op in (tf.round, tf.math.rint, tf.floor, tf.math.ceil):
        with tf.device(GPU):
            got = op(tf.identity(tf.constant(x))).numpy()
        with tf.device("/CPU:0"):
            want = op(tf.constant(x)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=op.__name__)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=op.__name__)
    for dtype, bound in ((tf.int64, 2.0**62), (tf.int32, 2.0**30)):
        inside = x[np.abs(x) < bound]
        with tf.device(GPU):
            got = tf.cast(tf.identity(tf.constant(inside)), dtype).numpy()
        with tf.device("/CPU:0"):
            want = tf.cast(tf.constant(inside), dtype).numpy()
        np.testing.assert_array_equal(got, want, err_msg=dtype.name)


EDGES64 = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                    -2.2250738585072014e-308, 1e-300, -1e-300, 0.5, -0.5, 1.0, -1.0, 2.0, 705.5, -705.5, 1e300,
                    -1e300, 1.7976931348623157e308, -4096.5, -999999.25, 3000.75])


@pytest.mark.skipif(("BesselJ1", {"T": "float64"}) not in KERNELS, reason="no float64 kernels on this adapter")
@pytest.mark.parametrize("op", sorted(SPECIAL_OPS))
def test_float64_special_functions_at_their_edges(op, strict_placement):
    """float64 special functions at zeros of both signs, infinities, NaN, subnormals (taken as zero
    of their sign, as TF-CPU's threads take them), tiny and huge arguments: the same class (NaN,
    infinity of a sign, zero of a sign) as TF-CPU, and the same value to 1e-14 elsewhere. Two-operand
    functions take every pair."""
    fn = UNARY.get(op) or BINARY[op]
    args = [EDGES64] if op in UNARY else [np.repeat(EDGES64, EDGES64.size), np.tile(EDGES64, EDGES64.size)]
    if op == "Polygamma":
        args[0] = np.floor(np.abs(np.nan_to_num(args[0], nan=3.0, posinf=7.0))) % 12
    with tf.device(GPU):
        got = fn(*[tf.constant(a) for a in args])
    with tf.device("/CPU:0"):
        want = fn(*[tf.constant(a) for a in args]).numpy()
    assert got.device.endswith("GPU:0")
    got = got.numpy()
    inputs = list(zip(*args))
    for k in np.nonzero(np.isnan(got) != np.isnan(want))[0]:
        pytest.fail(f"{op}{inputs[k]}: {got[k]!r} on GPU, {want[k]!r} on CPU")
    same_zero_or_inf = np.where((want == 0) | np.isinf(want), (got == want) & (np.signbit(got) == np.signbit(want)), True)
    for k in np.nonzero(~same_zero_or_inf)[0]:
        pytest.fail(f"{op}{inputs[k]}: {got[k]!r} on GPU, {want[k]!r} on CPU")
    atol = 0.0
    if op in ("Zeta", "Polygamma"):
        # At a negative q the sum has terms of both signs, up to n! / d^s where d is q's distance to
        # the nearest integer, and cancels to far below them: both TF-CPU's sum and ours err by a
        # few ulps of that largest term (ours, in closed form past q = -2048, is the nearer to the
        # exact value at q = -4096.5), so that is the scale of the tolerance there.
        order, q = args
        # (Polygamma's orders here are whole and non-negative: n! = gamma(n + 1).)
        s, factor = (order + 1, np.vectorize(math.gamma)(order + 1)) if op == "Polygamma" else (order, 1.0)
        with np.errstate(all="ignore"):
            largest = factor * np.abs(q - np.round(q)) ** -s
        atol = np.where((q < 0) & np.isfinite(largest), 1e-14 * largest, 0.0)
    finite = np.isfinite(want)
    error = np.abs(np.where(finite, got, 0.0) - np.where(finite, want, 0.0))
    np.testing.assert_array_less(error, 1e-14 * np.abs(np.where(finite, want, 0.0)) + atol + 1e-300, err_msg=op)


@pytest.mark.skipif(("FloorMod", {"T": "float64"}) not in KERNELS, reason="no float64 kernels on this adapter")
def test_float64_floor_mod_and_next_after_edges(strict_placement):
    """float64 FloorMod is exact (fmod by binades) for quotients up to 2^2000, tiny divisors, signed
    zeros and infinities (not subnormal operands: TF-CPU flushes them, issue 15's numerics); NextAfter reaches the subnormals from zero and leaves them toward
    zero (its results are written as bits, which no flush touches), and steps across binades."""
    tiny, big = 5e-324, 1.7976931348623157e308
    x = np.array([5.5, -5.5, 1e300, -1e-300, 7.0, -0.0, 3.0, 1e308, -1e308, 1.0, 4.0, 2.5e-300, np.inf, 0.5])
    y = np.array([2.0, 2.0, 3.3e-7, 3.0, np.inf, 2.0, -np.inf, 1e-300, 7e-306, 3e-307, -3.0, 1e-307, 1.0, -0.0])
    a = np.array([0.0, -0.0, 0.0, 1.0, 1.0, -1.0, tiny, -tiny, 2.2250738585072014e-308, np.inf, big, 2.0, 0.5, np.nan])
    b = np.array([1.0, -1.0, -0.0, 2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, np.inf, 0.0, 1.0, 1.0])
    for fn, args in ((tf.math.floormod, (x, y)), (tf.math.nextafter, (a, b))):
        with tf.device(GPU):
            got = fn(*[tf.identity(tf.constant(v)) for v in args]).numpy()
        with tf.device("/CPU:0"):
            want = fn(*[tf.constant(v) for v in args]).numpy()
        np.testing.assert_array_equal(got, want, err_msg=fn.__name__)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]), err_msg=fn.__name__)


COMPLEX_PROD_TYPES = [t for t in ("complex64", "complex128") if ("Prod", {"T": t}) in KERNELS]


@pytest.mark.parametrize("dtype", COMPLEX_PROD_TYPES)
def test_complex_prod_over_axes(strict_placement, dtype):
    """complex Prod over every axis set, odd lengths (the halving folds the odd row), keep_dims, an
    empty reduction (1 + 0i) and an empty output, against TF-CPU's sequential product."""
    rng = np.random.default_rng(3)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    for shape, axes, keep in [((7,), None, False), ((5, 3), 0, False), ((5, 3), 1, True), ((4, 9, 3), (0, 2), False),
                              ((2, 0, 3), 1, False), ((0, 4), 0, True), ((3, 1), None, True),
                              ((33, 2, 5), (1, 0), False), ((1000,), 0, False)]:
        x = ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * 0.9).astype(dtype)
        with tf.device(GPU):
            got = tf.reduce_prod(tf.identity(tf.constant(x)), axis=axes, keepdims=keep)
        with tf.device("/CPU:0"):
            want = tf.reduce_prod(tf.constant(x), axis=axes, keepdims=keep)
        assert got.shape == want.shape, (shape, axes)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=0, err_msg=f"{shape} {axes} {keep}")


ROW_KERNEL_TYPES = [t for t in ("float32", "float64") if ("Softmax", {"T": t}) in KERNELS]
ROW_OP_NAMES = ["softmax", "log_softmax", "sparse loss", "sparse backprop", "loss", "backprop"]


def row_op_results(x, labels, dense):
    """The row ops' outputs (ROW_OP_NAMES) on logits `x`, sparse `labels` and `dense` labels, on
    /GPU:0 and on /CPU:0."""
    results = []
    for device in (GPU, "/CPU:0"):
        with tf.device(device):
            xt, lt, dt = tf.constant(x), tf.constant(labels), tf.constant(dense)
            results.append([tf.raw_ops.Softmax(logits=xt), tf.raw_ops.LogSoftmax(logits=xt),
                            *tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=xt, labels=lt),
                            *tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=xt, labels=dt)])
    return results


@pytest.mark.parametrize("dtype", ROW_KERNEL_TYPES)
def test_row_kernels_across_row_lengths(strict_placement, dtype):
    """Softmax, LogSoftmax and both cross-entropies on rows of 1 to 5000 columns, which take each of
    the row kernels' splits (one invocation a row, 32 invocations on the GPU profile, a workgroup),
    in float32 and float64 (computed in f64: TF-CPU's own float64 results to 1e-13)."""
    rng = np.random.default_rng(11)
    tol = 1e-13 if dtype == "float64" else 2e-5
    for rows, cols in [(1, 1), (7, 31), (9, 33), (300, 100), (3, 1000), (5, 4096), (2, 5000)]:
        x = (rng.standard_normal((rows, cols)) * 5).astype(dtype)
        labels = rng.integers(0, cols, rows).astype(np.int32)
        dense = rng.random((rows, cols)).astype(dtype)
        for name, got, want in zip(ROW_OP_NAMES, *row_op_results(x, labels, dense)):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol,
                                       err_msg=f"{name} of {rows} x {cols} {dtype}")


@pytest.mark.parametrize("dtype", ROW_KERNEL_TYPES)
def test_row_kernels_on_rows_past_the_loop_limit(strict_placement, dtype):
    """Rows of 4.3M columns, past what one workgroup's loops walk on llvmpipe (65,535 iterations
    of four passes over 256 lanes), take the row ops as launches over the whole tensor with the
    row reductions in slices: Softmax, LogSoftmax and both cross-entropies, with an infinite
    logit (-inf, which the sparse loss must not turn into NaN beside a zero label) and NaN in a
    row. Sums over 4.3M terms round differently in every implementation (TF 2.16's float32 dense
    loss is 1e-3 off), so each output is measured against the exact answer (long double), within
    twice TF-CPU's own error or a few ulps of the row's scale; non-finite entries equal TF-CPU's.
    A sparse label outside the row gives TF-GPU's NaN row (TF-CPU raises), checked on its own."""
    rng = np.random.default_rng(13)
    rows, cols = 3, 4_300_000
    x = (rng.standard_normal((rows, cols)) * 5).astype(dtype)
    x[0, 17] = -np.inf
    x[1, 4_000_000] = 40.0
    x[2, 123] = np.nan
    labels = np.array([5, 4_000_000, 4_299_999], np.int32)
    dense = rng.random((rows, cols)).astype(dtype)
    results = row_op_results(x, labels, dense)
    with np.errstate(invalid="ignore"):
        shifted = x.astype(np.longdouble) - x.astype(np.longdouble).max(axis=1, keepdims=True)
        exps = np.exp(shifted)
        total = exps.sum(axis=1, keepdims=True)
        softmax, lse = exps / total, np.log(total)
        onehot = np.zeros((rows, cols), np.longdouble)
        onehot[np.arange(rows), labels] = 1
        exact = [softmax, shifted - lse, lse[:, 0] - shifted[np.arange(rows), labels], softmax - onehot,
                 (dense * (lse - shifted)).sum(axis=1), softmax - dense]
    ulp = float(np.finfo(dtype).eps)
    for name, got, cpu, want in zip(ROW_OP_NAMES, *results, exact):
        assert got.device.endswith("GPU:0") and got.dtype == cpu.dtype, name
        got, cpu = got.numpy(), cpu.numpy()
        finite = np.isfinite(cpu)
        np.testing.assert_array_equal(got[~finite], cpu[~finite], err_msg=f"{name} {dtype}: non-finite entries")
        want = want[finite].astype(np.float64)
        scale = max(1.0, float(np.abs(want).max()))
        ours = float(np.abs(got[finite] - want).max())
        theirs = float(np.abs(cpu[finite] - want).max())
        assert ours <= max(2 * theirs, 64 * ulp * scale), (name, dtype, ours, theirs, scale)
    with tf.device(GPU):
        loss, backprop = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
            features=tf.constant(x[:2]), labels=tf.constant(np.array([3, cols], np.int32)))
    assert np.isfinite(loss.numpy()[0]) and np.isnan(loss.numpy()[1])
    assert not np.isnan(backprop.numpy()[0]).any() and np.isnan(backprop.numpy()[1]).all()


def test_bool_reductions_past_the_loop_limit(strict_placement):
    """All and Any over 17M elements per output (past 65,535 loop iterations of 256 threads on
    llvmpipe, which raised Unimplemented) run in slices, each clearing (All) or setting (Any) the
    output's byte: the one deciding element sits in the last slice, the first, or nowhere."""
    n = 17_000_000
    cases = []
    for at in (n - 1, 0, None):
        ones, zeros = np.ones(n, bool), np.zeros(n, bool)
        if at is not None:
            ones[at], zeros[at] = False, True
        cases += [(tf.reduce_all, ones, None), (tf.reduce_any, zeros, None)]
    columns = np.ones((n // 4, 4), bool)
    columns[-1, 2] = False
    cases += [(tf.reduce_all, columns, 0), (tf.reduce_any, ~columns, 0)]
    for fn, x, axis in cases:
        with tf.device(GPU):
            got = fn(tf.constant(x), axis=axis)
        assert got.device.endswith("GPU:0")
        np.testing.assert_array_equal(got.numpy(), x.all(axis=axis) if fn is tf.reduce_all else x.any(axis=axis))


@pytest.mark.parametrize("rows", [4109, 4111], ids=["below-2^23", "above-2^23"])
def test_index_math_on_either_side_of_the_fast_division_limit(strict_placement, rows):
    """Broadcasts and reductions split flat indices into coordinates through f32 division while
    every index is below 2^23 (`wgsl/quot.wgsl`), through integer division above: 4109 x 2041 and
    4111 x 2041 elements. (With 2041, multiplying by an f32 reciprocal instead of dividing would be
    off by one for 2085 indices below 2^23.)"""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 2041)).astype(np.float32)
    b = rng.standard_normal(2041).astype(np.float32)
    with tf.device(GPU):
        xt = tf.identity(tf.constant(x))
        added = (xt + tf.constant(b)).numpy()
        columns = tf.reduce_sum(xt, axis=0).numpy()
        rows_max = tf.reduce_max(xt, axis=1).numpy()
    np.testing.assert_array_equal(added, x + b)
    np.testing.assert_allclose(columns, x.sum(axis=0, dtype=np.float64), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(rows_max, x.max(axis=1))


# Tiled-matmul shapes: edges of 128-tiles, k over two groups of k-tiles (the second adds to C), a
# batch, and a convolution through im2col.
TILED_MATMUL_SCRIPT = (
    "import numpy as np, tensorflow as tf\n"
    "rng = np.random.default_rng(5)\n"
    "for m, k, n in [(130, 300, 257), (40, 650, 33), (200, 129, 64)]:\n"
    "    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)\n"
    "    with tf.device('/GPU:0'):\n"
    "        got = tf.matmul(tf.constant(a), tf.constant(b)).numpy()\n"
    "    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)\n"
    "a, b = rng.standard_normal((3, 70, 40), np.float32), rng.standard_normal((3, 40, 90), np.float32)\n"
    "with tf.device('/GPU:0'):\n"
    "    got = tf.matmul(tf.constant(a), tf.constant(b)).numpy()\n"
    "np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)\n"
    "x, f = rng.standard_normal((2, 17, 19, 40), np.float32), rng.standard_normal((3, 3, 40, 48), np.float32)\n"
    "with tf.device('/GPU:0'):\n"
    "    got = tf.nn.conv2d(tf.constant(x), tf.constant(f), 1, 'SAME').numpy()\n"
    "with tf.device('/CPU:0'):\n"
    "    want = tf.nn.conv2d(x, f, 1, 'SAME').numpy()\n"
    "np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)\n"
)


def test_tiled_matmul_shares_rows_through_subgroups():
    """On an adapter with subgroups (lavapipe has them), the tile products run the subgroup kernel:
    the MatMul and Conv2D cases above check its results against TF-CPU. By default the CPU profile
    reads its tiles from textures, a dispatch per product; TF_WGPU_MATMUL=tiles-uniform keeps the
    uniform bindings, a dispatch per tile of C and group of k-tiles, and checks that kernel here."""
    log = dispatch_log(TILED_MATMUL_SCRIPT)
    assert "dispatch matmul tiles texels" in log, log[-3000:]
    assert "dispatch matmul tiles subgroup" not in log and "dispatch matmul tiles [" not in log, log[-3000:]
    log = dispatch_log(TILED_MATMUL_SCRIPT, TF_WGPU_MATMUL="tiles-uniform")
    assert "dispatch matmul tiles subgroup" in log, log[-3000:]
    assert "dispatch matmul tiles [" not in log and "matmul tiles texels" not in log, log[-3000:]


# Products for the texel kernel against the uniform one: edges of 128-tiles, k of several groups of
# k-tiles (stored after each group) and ending mid-tile, batches (one broadcast), both transposes,
# half-precision outputs, and the convolution routes: im2col chunks, the filter gradient (its chunks
# add to the output), the input gradient and a 1x1 convolution (98 row tiles in one dispatch).
TEXEL_TILES_SCRIPT = (
    "import sys, numpy as np, tensorflow as tf\n"
    "rng = np.random.default_rng(1)\n"
    "out = []\n"
    "cases = [((130, 300), (300, 257), False, False), ((40, 650), (650, 33), False, False),\n"
    "         ((200, 129), (129, 64), False, False), ((3, 70, 40), (3, 40, 90), False, False),\n"
    "         ((300, 130), (257, 300), True, True), ((2, 1, 129, 777), (5, 777, 66), False, False),\n"
    "         ((1000, 24), (24, 144), False, False), ((128, 2000), (2000, 100), False, False)]\n"
    "for sa, sb, ta, tb in cases:\n"
    "    a, b = rng.standard_normal(sa, np.float32), rng.standard_normal(sb, np.float32)\n"
    "    with tf.device('/GPU:0'):\n"
    "        out.append(tf.matmul(tf.identity(a), tf.identity(b), transpose_a=ta, transpose_b=tb).numpy())\n"
    "        for dt in [tf.float16, tf.bfloat16]:\n"
    "            h = tf.matmul(tf.cast(a, dt), tf.cast(b, dt), transpose_a=ta, transpose_b=tb)\n"
    "            out.append(tf.cast(h, tf.float32).numpy())\n"
    "x, f = rng.standard_normal((2, 17, 19, 40), np.float32), rng.standard_normal((3, 3, 40, 48), np.float32)\n"
    "dy = rng.standard_normal((2, 17, 19, 48), np.float32)\n"
    "x1, f1 = rng.standard_normal((8, 56, 56, 24), np.float32), rng.standard_normal((1, 1, 24, 144), np.float32)\n"
    "with tf.device('/GPU:0'):\n"
    "    out.append(tf.nn.conv2d(tf.identity(x), tf.identity(f), 1, 'SAME').numpy())\n"
    "    out.append(tf.compat.v1.nn.conv2d_backprop_filter(x, [3, 3, 40, 48], dy, [1, 1, 1, 1], 'SAME').numpy())\n"
    "    out.append(tf.compat.v1.nn.conv2d_backprop_input([2, 17, 19, 40], f, dy, [1, 1, 1, 1], 'SAME').numpy())\n"
    "    out.append(tf.nn.conv2d(tf.identity(x1), tf.identity(f1), 1, 'SAME').numpy())\n"
    # Convolutions on the tile kernel of their own (input and filter in textures): strides,
    # VALID and SAME padding, dilation, 512 channels (taps in several groups), and their input
    # gradients (the same kernel on the flipped filter).
    "convs = [((4, 16, 16, 32), (3, 3, 32, 64), 1, 'SAME', 1), ((2, 15, 15, 8), (5, 5, 8, 12), 2, 'VALID', 1),\n"
    "         ((1, 20, 20, 16), (3, 3, 16, 20), 1, 'SAME', 2), ((2, 9, 9, 512), (3, 3, 512, 64), 1, 'SAME', 1),\n"
    "         ((2, 30, 30, 4), (7, 7, 4, 8), 2, 'SAME', 1)]\n"
    "for xs, fs, s, pad, d in convs:\n"
    "    x, f = rng.standard_normal(xs, np.float32), rng.standard_normal(fs, np.float32)\n"
    "    with tf.device('/GPU:0'):\n"
    "        y = tf.nn.conv2d(tf.identity(x), tf.identity(f), s, pad, dilations=d)\n"
    "        out.append(y.numpy())\n"
    "        dy = rng.standard_normal(y.shape, np.float32)\n"
    "        if d == 1:\n"
    "            g = tf.compat.v1.nn.conv2d_backprop_input(list(xs), f, tf.identity(dy), [1, s, s, 1], pad)\n"
    "            out.append(g.numpy())\n"
    "    if xs[-1] == 512:\n"
    "        with tf.device('/CPU:0'):\n"
    "            cpu_deep = [tf.nn.conv2d(x, f, s, pad).numpy(),\n"
    "                        tf.compat.v1.nn.conv2d_backprop_input(list(xs), f, dy, [1, s, s, 1], pad).numpy()]\n"
    "np.savez(sys.argv[1], *out, *cpu_deep)\n"
)
# The 512-channel convolution and its input gradient: a tap (512 x 64 floats) passes a 64 KiB slab,
# so the uniform kernels compute them as im2col products (k in groups of 384) and the texel kernel
# by groups of 3 taps; TF-CPU's results follow the others.
TEXEL_TILES_DEEP = {"arr_33": "arr_37", "arr_34": "arr_38"}


def test_texel_tile_products_match_the_uniform_kernel_bit_for_bit(tmp_path):
    """The texel kernels (`matmul_tiles_texels.wgsl`: the packed tiles in two textures, one dispatch
    per product; `conv_tiles_texels.wgsl`: a convolution's input and filter in them, one dispatch
    per convolution) compute the uniform subgroup kernels' sums in their order, so every product
    and convolution above matches those kernels' (TF_WGPU_MATMUL=tiles-uniform) bit for bit, and
    float64 NumPy within the tiled products' tolerance; the 512-channel convolution and its input
    gradient, whose taps pass a uniform slab (so the uniform route is an im2col product), match
    TF-CPU. Both runs force the tiles
    (TF_WGPU_MATMUL=tiles for the texels), so that they take the same routes; the dispatch logs
    show which kernels ran."""
    results = {}
    for kernel in ["tiles", "tiles-uniform"]:
        path = tmp_path / f"{kernel}.npz"
        log = dispatch_log(TEXEL_TILES_SCRIPT.replace("sys.argv[1]", repr(str(path))), TF_WGPU_MATMUL=kernel)
        results[kernel] = np.load(path)
        texels = kernel == "tiles"
        assert ("dispatch matmul tiles texels" in log) == texels, log[-3000:]
        assert ("dispatch conv tiles texels" in log) == texels, log[-3000:]
        assert ("dispatch matmul tiles subgroup" in log) != texels, log[-3000:]
        assert ("dispatch conv tiles subgroup" in log) != texels, log[-3000:]
        if texels:
            assert log.count("dispatch matmul tiles texels") >= 12, log[-3000:]
            assert log.count("dispatch conv tiles texels") >= 7, log[-3000:]
    texels, uniform = results["tiles"], results["tiles-uniform"]
    assert texels.files == uniform.files and len(texels.files) == 39
    for name in texels.files[:37]:
        if name in TEXEL_TILES_DEEP:
            # Summed in other groups than the uniform route's: both against TF-CPU instead.
            for got in [texels[name], uniform[name]]:
                np.testing.assert_allclose(got, texels[TEXEL_TILES_DEEP[name]], rtol=1e-4, atol=2e-3, err_msg=name)
            continue
        np.testing.assert_array_equal(texels[name].view(np.uint32), uniform[name].view(np.uint32), err_msg=name)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((130, 300), np.float32), rng.standard_normal((300, 257), np.float32)
    np.testing.assert_allclose(texels["arr_0"], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_gpu_profile_runs_workgroup_tiles():
    """The GPU kernel profile (forced here with TF_WGPU_KERNELS=gpu; GPUs take it by default) runs
    the products above, the convolution included, on matmul_gpu.wgsl's workgroup tiles, and splits
    the contractions of the products with few tiles (the 40 x 650 x 33 one) across workgroups."""
    log = dispatch_log(TILED_MATMUL_SCRIPT, TF_WGPU_KERNELS="gpu")
    assert log.count("dispatch matmul gpu [") >= 5, log[-3000:]
    assert "dispatch matmul gpu sum splits" in log, log[-3000:]
    assert "dispatch matmul tiles" not in log and "pack_im2col" not in log, log[-3000:]


@pytest.mark.skipif(not (tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"),
                    reason="a kernel's own check, a minute on lavapipe: TF 2.21 only (TF_WGPU_HEAVY=1 runs it anywhere)")
def test_gpu_matmul_splits_columns_past_the_dispatch_grid():
    """A product wider than 65535 tiles of 64 columns (the grid's x dimension) runs in blocks of
    columns, B plain and transposed, on the GPU profile's kernel. Its 50 s on lavapipe do not depend
    on TF's version."""
    script = (
        "import numpy as np, tensorflow as tf\n"
        "tf.config.set_soft_device_placement(False)\n"
        "n = 65535 * 64 + 77\n"
        "rng = np.random.default_rng(9)\n"
        "a, b = rng.standard_normal((2, 3), np.float32), rng.standard_normal((3, n), np.float32)\n"
        "with tf.device('/GPU:0'):\n"
        "    plain = tf.matmul(tf.constant(a), tf.constant(b)).numpy()\n"
        "    transposed = tf.matmul(tf.constant(a), tf.constant(b.T.copy()), transpose_b=True).numpy()\n"
        "want = a.astype(np.float64) @ b\n"
        "np.testing.assert_allclose(plain, want, rtol=1e-5, atol=1e-5)\n"
        "np.testing.assert_allclose(transposed, want, rtol=1e-5, atol=1e-5)\n"
    )
    log = dispatch_log(script, TF_WGPU_KERNELS="gpu")
    assert log.count("dispatch matmul gpu [65535, 1, 1]") == 2, log[-3000:]


# Products with a small side (matmul_skinny.wgsl on the CPU profile): (m, k, n), every transpose.
# They cover 1 to 4 rows of D, 5 to 8, and more (the kernel's row groups), C's rows or its columns
# as D's rows, columns that are and are not multiples of 4 (vec4 and element access), k that is
# not a multiple of 4, contractions in several chunks (2048, 1100, 1040: D read back, by vec4s
# too), short contractions with both sides long, and a classifier head's shapes. Between them they
# take both entries and each pairing of element and vec4 access that exists
# (`test_skinny_products_take_the_skinny_kernel` checks that from the dispatch log).
SKINNY_PRODUCTS = [(1, 300, 37), (3, 7, 37), (8, 7, 8), (3, 64, 1000), (4, 2048, 1000), (7, 1100, 64),
                   (24, 130, 257), (300, 77, 2), (257, 520, 10), (257, 1040, 12), (2048, 4, 1000),
                   (130, 13, 250), (1000, 8, 999)]


def skinny_products(rng):
    """Pairs of (got on WGPU, exact in float64, bound) for SKINNY_PRODUCTS in every transpose."""
    out = []
    for (m, k, n) in SKINNY_PRODUCTS:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        # f32 sums of up to 512 products per chunk: a wrong element is off by O(1).
        bound = 3e-5 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
        for ta in (False, True):
            for tb in (False, True):
                x, y = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
                with tf.device(GPU):
                    got = tf.matmul(tf.identity(x), tf.identity(y), transpose_a=ta, transpose_b=tb).numpy()
                out.append(((m, k, n, ta, tb), got, exact, bound))
    return out


def test_skinny_products_match_float64(strict_placement):
    """Every SKINNY_PRODUCTS case within a 512-term f32 sum's error of the float64 product, also on
    split outputs, as a product's A and as its transposed B, and as a BatchMatMul of one batch.
    (Split copies its outputs here: operands at element offsets that are not a multiple of 4,
    which take element access, come only from the plugin's own windows of bigger tensors.)"""
    rng = rng_for("skinny products")
    for case, got, exact, bound in skinny_products(rng):
        assert np.all(np.abs(got - exact) <= bound), (case, float(np.max(np.abs(got - exact) - bound)))
    x = rng.standard_normal((3 * 5, 301)).astype(np.float32)
    w = rng.standard_normal((301, 36)).astype(np.float32)
    with tf.device(GPU):
        parts = tf.split(tf.identity(x), 3)
        got = [tf.matmul(p, tf.identity(w)).numpy() for p in parts]
        got += [tf.matmul(tf.identity(w), p, transpose_a=True, transpose_b=True).numpy() for p in parts]
        batched = tf.matmul(tf.identity(x[None, :5]), tf.identity(w)).numpy()
    for i in range(3):
        exact = x[5 * i:5 * (i + 1)].astype(np.float64) @ w
        np.testing.assert_allclose(got[i], exact, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got[3 + i], exact.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(batched[0], x[:5].astype(np.float64) @ w, rtol=1e-5, atol=1e-4)


def test_skinny_products_take_the_skinny_kernel():
    """The products above really run matmul_skinny on the CPU profile (a classifier head's three
    products and a 1x1 convolution's filter gradient included), and not on the GPU profile, which
    keeps its own kernels."""
    script = (
        "import numpy as np, tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    a, b, dc = tf.identity(tf.ones([4, 2048])), tf.identity(tf.ones([2048, 1000])), tf.identity(tf.ones([4, 1000]))\n"
        "    tf.matmul(a, b).numpy(); tf.matmul(dc, b, transpose_b=True).numpy(); tf.matmul(a, dc, transpose_a=True).numpy()\n"
        "    x, w = tf.identity(tf.ones([4, 56, 56, 24])), tf.identity(tf.ones([1, 1, 24, 144]))\n"
        "    tf.nn.conv2d(x, w, 1, 'VALID').numpy()\n"
        "    dy = tf.identity(tf.ones([4, 56, 56, 144]))\n"
        "    tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[1, 1, 24, 144], out_backprop=dy,\n"
        "                                    strides=[1, 1, 1, 1], padding='VALID').numpy()\n"
    )
    products = dispatch_log(
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_ops\n"
        "test_ops.skinny_products(np.random.default_rng(0))\n"
        "test_ops.test_skinny_products_match_float64(None)\n")
    kernels = set(re.findall(r"(matmul_skinny\w*) (cols|dots): D (\d+) x", products))
    used = {(shader, entry) for shader, entry, _ in kernels}
    assert used == {("matmul_skinny", "cols"), ("matmul_skinny_s4", "cols"), ("matmul_skinny_d4", "cols"),
                    ("matmul_skinny_s4_d4", "cols"), ("matmul_skinny", "dots"), ("matmul_skinny_d4", "dots")}, used
    # `dots` computes 4, 8 or 16 rows of D an invocation, by D's rows.
    dot_rows = {4 if int(p) <= 4 else 8 if int(p) <= 8 else 16 for _, entry, p in kernels if entry == "dots"}
    assert dot_rows == {4, 8, 16}, kernels
    log = dispatch_log(script)
    # The head's three products, and the filter gradient of MobileNetV2's 1x1 expansion (24 x 12544
    # x 144, which took the direct kernel) in 25 chunks. The expansion itself (12544 x 24 x 144)
    # takes the texel tile kernel, one dispatch (8 ms on lavapipe, 14 on the skinny kernel; the
    # uniform tiles' 196 dispatches were slower than the skinny kernel).
    assert log.count("dispatch matmul skinny pack") == 4, log[-3000:]
    assert log.count("dispatch matmul skinny [") == 4 + 2 + 1 + 25, log[-3000:]
    assert "matmul_skinny_s4_d4 cols: D 24 x 144, k 12544 in 25 chunks" in log, log[-3000:]
    assert log.count("dispatch matmul tiles texels") == 1, log[-3000:]
    assert "dispatch matmul [" not in log and "matmul tiles subgroup" not in log, log[-3000:]
    gpu = dispatch_log(script, TF_WGPU_KERNELS="gpu")
    assert "matmul skinny" not in gpu and "dispatch matmul gpu" in gpu, gpu[-3000:]


VEC4_PACK_SCRIPT = (
    "import numpy as np, tensorflow as tf\n"
    "rng = np.random.default_rng(6)\n"
    "cases = [((130, 64), (64, 136), False, False), ((40, 132), (36, 132), False, True),\n"
    "         ((68, 40), (68, 30), True, False), ((36, 44), (52, 36), True, True),\n"
    "         ((3, 40, 28), (1, 28, 72), False, False), ((2, 28, 40), (2, 60, 28), True, True),\n"
    "         ((50, 30), (30, 70), False, False), ((30, 50), (70, 30), True, True)]\n"
    "for sa, sb, ta, tb in cases:\n"
    "    a, b = rng.standard_normal(sa, np.float32), rng.standard_normal(sb, np.float32)\n"
    "    with tf.device('/GPU:0'):\n"
    "        got = tf.matmul(tf.identity(a), tf.identity(b), transpose_a=ta, transpose_b=tb).numpy()\n"
    "    want = np.matmul(np.swapaxes(a, -1, -2) if ta else a.astype(np.float64), np.swapaxes(b, -1, -2) if tb else b)\n"
    "    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3, err_msg=str((sa, sb, ta, tb)))\n"
)


def test_small_deep_convolutions_take_the_texel_kernel():
    """Convolutions with under 32 output pixels but a deep contraction, like ResNet50's last stage
    at 64x64 (batch 4 of 2x2: a 3x3 512 -> 512 convolution and the 1x1 stride-2 1024 -> 2048
    shortcut), run on the texel kernel instead of the direct one (13 and 30 ms there on lavapipe),
    by default, and match TF-CPU; a small shallow one keeps the direct kernel."""
    script = (
        "import sys, numpy as np, tensorflow as tf\n"
        "rng = np.random.default_rng(3)\n"
        "for xs, fs, s in [((4, 2, 2, 512), (3, 3, 512, 512), 1), ((4, 4, 4, 1024), (1, 1, 1024, 2048), 2),\n"
        "                  ((1, 3, 3, 8), (3, 3, 8, 8), 1)]:\n"
        "    x, f = rng.standard_normal(xs, np.float32), rng.standard_normal(fs, np.float32)\n"
        "    with tf.device('/GPU:0'):\n"
        "        got = tf.nn.conv2d(tf.identity(x), tf.identity(f), s, 'SAME').numpy()\n"
        "    with tf.device('/CPU:0'):\n"
        "        want = tf.nn.conv2d(x, f, s, 'SAME').numpy()\n"
        "    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-3)\n"
        "    print('conv done', file=sys.stderr, flush=True)\n"
    )
    log = dispatch_log(script)
    first, second, third = log.split("conv done")[:3]
    assert "dispatch conv tiles texels" in first and "conv2d_oc4" not in first, first[-3000:]
    assert "dispatch conv tiles texels" in second and "conv2d_oc4" not in second, second[-3000:]
    assert "conv tiles texels" not in third, third[-3000:]


def test_tiled_matmul_packs_aligned_operands_as_vec4s():
    """The tile packer reads f32 operands whose contiguous side, strides and offset are multiples of
    4 as vec4s: rows (`pack_vec4`), or the columns of a transposed operand as 4 x 4 blocks
    (`pack_columns_vec4`), broadcast batches included; the others element by element (`pack`). The
    products match float64 NumPy."""
    log = dispatch_log(VEC4_PACK_SCRIPT, TF_WGPU_MATMUL="tiles")
    for packer in ["pack_vec4", "pack_columns_vec4", "pack"]:
        assert f"dispatch {packer} [" in log, (packer, log[-3000:])


def test_tiled_matmul_without_subgroups_matches_numpy():
    """The plain tiled kernel, the one for CPU adapters without subgroups (forced here with
    TF_WGPU_MATMUL=tiles-plain), still computes the right products."""
    log = dispatch_log(TILED_MATMUL_SCRIPT, TF_WGPU_MATMUL="tiles-plain")
    assert "dispatch matmul tiles [" in log, log[-3000:]
    assert "dispatch matmul tiles subgroup" not in log, log[-3000:]


def test_leading_axis_reductions_run_by_columns():
    """Sums over leading axes take reduce_columns (the reduction cases above check its results):
    one launch for a small input, two for a big one with few columns (partials per slice of rows,
    then their sum)."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    tf.reduce_sum(tf.identity(tf.ones([100, 30])), axis=0).numpy()\n"
        "    tf.raw_ops.BiasAddGrad(out_backprop=tf.identity(tf.ones([20, 30, 30, 16]))).numpy()\n"
    )
    log = dispatch_log(script)
    assert log.count("dispatch reduce_columns") == 3, log[-3000:]


# One convolution per shape, each after a marker line on stderr (in the dispatch log).
CONV_SHAPES_SCRIPT = (
    "import sys, tensorflow as tf\n"
    "with tf.device('/GPU:0'):\n"
    "    for xs, ks in [((2, 12, 12, 64), (3, 3, 64, 40)), ((1, 6, 130, 64), (3, 3, 64, 32)),\n"
    "                   ((3, 20, 20, 33), (5, 3, 33, 70))]:\n"
    "        x, k = tf.identity(tf.ones(xs)), tf.identity(tf.ones(ks))\n"
    "        print('CONVOLUTION', file=sys.stderr, flush=True)\n"
    "        tf.nn.conv2d(x, k, strides=1, padding='SAME').numpy()\n"
)


def test_im2col_packers_run():
    """Each im2col packer of the implicit-GEMM convolution really runs on the shapes meant for it
    (the Conv2D cases compare their results with TF-CPU): uniform windows, vec4 storage loads where
    a window does not fit. A channel count that is not a multiple of 4 (33) is padded to one and
    read as vec4s too: the element packer is left to inputs that do not start on a vec4. The plain
    tile kernel is forced, as the subgroup one reads the first shape's input windows itself."""
    log = dispatch_log(CONV_SHAPES_SCRIPT, TF_WGPU_MATMUL="tiles-plain")
    for packer in ["pack_im2col_window", "pack_im2col_vec4"]:
        assert f"dispatch {packer}" in log, (packer, log[-3000:])
    odd = log.split("CONVOLUTION")[3]
    assert "dispatch pack_im2col " not in odd and "dispatch pack_im2col_" in odd, odd[-3000:]
    assert "dispatch conv tiles subgroup" not in log, log[-3000:]


def test_convolution_reads_input_windows():
    """With subgroups and the uniform tiles (TF_WGPU_MATMUL=tiles-uniform), a convolution whose
    channels are multiples of 4 and whose output rows' input fits a uniform window takes
    conv_tiles_subgroup and packs nothing (the Conv2D cases compare its results with TF-CPU); rows
    too wide for a window and 33 channels still take the packers. By default the CPU profile reads
    both multiple-of-4 convolutions from textures instead (conv_tiles_texels, no window needed),
    and 33 channels still take the packers."""
    log = dispatch_log(CONV_SHAPES_SCRIPT, TF_WGPU_MATMUL="tiles-uniform")
    windowed, wide, odd = log.split("CONVOLUTION")[1:]
    assert "dispatch conv tiles subgroup" in windowed and "pack_im2col" not in windowed, windowed[-3000:]
    for packed in [wide, odd]:
        assert "dispatch conv tiles subgroup" not in packed and "pack_im2col" in packed, packed[-3000:]
    windowed, wide, odd = dispatch_log(CONV_SHAPES_SCRIPT).split("CONVOLUTION")[1:]
    for texels in [windowed, wide]:
        assert texels.count("dispatch conv tiles texels") == 1 and "pack_im2col" not in texels, texels[-3000:]
    assert "conv tiles" not in odd and "pack_im2col" in odd, odd[-3000:]


def test_convolution_windows_are_planned_to_the_pixel():
    """A window of conv_tiles_subgroup holds its pixels' input from the first tap inside the image to
    the last, not whole input rows: 128 output pixels reading 129 input pixels of 512 bytes take two
    dispatches (the Conv2D cases check the results), and a 3x3 SAME convolution on 56x56x64 fills
    windows with 128 pixels (24 dispatches; whole input rows would take 40). The window kernel is
    the uniform tiles' (TF_WGPU_MATMUL=tiles-uniform; by default the CPU profile reads textures)."""
    script = (
        "import sys, tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    for xs, ks, pad in [((1, 1, 129, 128), (1, 2, 128, 32), 'VALID'),\n"
        "                        ((1, 56, 56, 64), (3, 3, 64, 64), 'SAME')]:\n"
        "        x, k = tf.identity(tf.ones(xs)), tf.identity(tf.ones(ks))\n"
        "        print('CONVOLUTION', file=sys.stderr, flush=True)\n"
        "        tf.nn.conv2d(x, k, strides=1, padding=pad).numpy()\n"
    )
    overflowing, square = dispatch_log(script, TF_WGPU_MATMUL="tiles-uniform").split("CONVOLUTION")[1:]
    assert overflowing.count("dispatch conv tiles subgroup") == 2, overflowing[-3000:]
    assert square.count("dispatch conv tiles subgroup") <= 25, square[-3000:]


SMALL_OPS_SCRIPT = (
    "import sys, tensorflow as tf\n"
    "with tf.device('/GPU:0'):\n"
    "    t = tf.identity(tf.constant([1.0, 2.0, 3.0]))\n"
    "    t.numpy()\n"
    "    print('CHAIN', file=sys.stderr, flush=True)\n"
    "    for _ in range(40):\n"
    "        t = t * 1.0001 + 0.5\n"
    "    t.numpy()\n"
)


def test_small_ops_share_dispatches():
    """On a CPU adapter, small f32 binary ops join one dispatch of `main_batch` (up to 32 records
    and 28 buffers, until another command or a submit), not a dispatch each: 80 ops take at most 8
    dispatches and no other kernel runs (the results: see the next test)."""
    chain = dispatch_log(SMALL_OPS_SCRIPT).split("CHAIN")[1]
    assert 1 <= chain.count("dispatch binary batch") <= 8, chain[-3000:]
    assert chain.count("dispatch ") == chain.count("dispatch binary batch"), chain[-3000:]


def test_small_ops_in_one_batch_match_cpu(strict_placement):
    """Every binary op of `binary.wgsl` as records of batches: small operands, a scalar on either
    side, 64 elements (the largest batched output) and 65 (not batched), and a dependent chain
    through the results, with no sync in between."""
    rng = np.random.default_rng(11)
    float32_ops = {op for op, attrs in KERNELS if attrs.get("T") == "float32"}
    ops = {**{op: fn for op, fn in BINARY.items() if op in float32_ops},
           **{op: (lambda a, b, op=op: getattr(tf.raw_ops, op)(**dict(zip(GRADS[op], (a, b))),
                                                                 **({"alpha": 0.15} if op == "LeakyReluGrad" else {})))
              for op in GRADS if op != "InvGrad"}}
    shapes = [((7,), (7,)), ((), (7,)), ((5,), ()), ((2, 32), (2, 32)), ((65,), (65,)), ((), ())]
    cases = [(op, floats(rng, sa, specials=False), floats(rng, sb, specials=False))
             for op in ops for sa, sb in shapes if op in BINARY or sa == sb]

    def run(device):
        with tf.device(device):
            outs = [ops[op](tf.constant(a), tf.constant(b)) for op, a, b in cases]
            t = tf.constant([0.5, 1.5])
            for i in range(50):
                t = t * 1.01 + float(i) - t * 0.5
            return [o.numpy() for o in outs] + [t.numpy()]

    got, want = run(GPU), run("/CPU:0")
    for (op, a, b), g, w in zip(cases + [("chain", None, None)], got, want):
        tol = max(TOLERANCE.get(op, 1e-6), 1e-6)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{op} {None if a is None else (a.shape, b.shape)}")


def test_back_to_back_convolutions_keep_their_filters(strict_placement):
    """Convolutions enqueued without a sync in between each copy their filter into the same scratch
    slabs: every copy must wait for the dispatches before it that read the previous filter
    (write-after-read), and every dispatch for its own copy (read-after-write)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 20, 20, 32)).astype(np.float32)
    filters = [rng.standard_normal((3, 3, 32, 40)).astype(np.float32) for _ in range(3)]
    with tf.device(GPU):
        xt = tf.identity(tf.constant(x))
        outs = [tf.nn.conv2d(xt, tf.identity(tf.constant(k)), 1, "SAME") for k in filters]
        got = [o.numpy() for o in outs]
    with tf.device("/CPU:0"):
        want = [tf.nn.conv2d(x, k, 1, "SAME").numpy() for k in filters]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 12, 12, 64), (1, 10, 10, 64)], ids=["windows", "vec4-loads"])
def test_convolution_ignores_what_an_earlier_one_left_in_its_scratch(strict_placement, shape):
    """The packed im2col tiles are zero past the last filter tap, whatever the scratch buffer held:
    a convolution with more taps first leaves infinities where the second one's padding columns
    lie (0 * inf would turn its output into NaN). The second input is big enough for uniform
    windows, or too small for one. (42 output channels keep both off conv_tiles_subgroup, which
    packs no im2col tiles.)"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    k = rng.standard_normal((3, 3, 64, 42)).astype(np.float32)
    with tf.device(GPU):
        tf.nn.conv2d(tf.fill([2, 12, 12, 72], np.inf), tf.ones([3, 3, 72, 42]), 1, "SAME").numpy()
        got = tf.nn.conv2d(tf.identity(tf.constant(x)), tf.constant(k), strides=1, padding="SAME").numpy()
    with tf.device("/CPU:0"):
        want = tf.nn.conv2d(x, k, strides=1, padding="SAME").numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_kernels_consume_split_and_unstacked_device_tensors(strict_placement):
    """Outputs of Split and Unpack feed further kernels on the device. (Kernels on views at
    interior, non-binding-aligned addresses are tested in Rust: tests/stream_executor.rs.)"""
    big = np.arange(4 * 1031, dtype=np.float32).reshape(4, 1031)
    with tf.device(GPU):
        x = tf.identity(tf.constant(big))
        parts = tf.split(x, 4)  # four separate tensors on the device
        rows = tf.unstack(x)
        got = [tf.add(p, 1.0) for p in parts] + [tf.multiply(r, 2.0) for r in rows]
    for i, g in enumerate(got[:4]):
        np.testing.assert_array_equal(g.numpy(), big[i:i + 1] + 1.0)
    for i, g in enumerate(got[4:]):
        np.testing.assert_array_equal(g.numpy(), big[i] * 2.0)


@pytest.mark.parametrize("m,k,n,transpose_a,transpose_b", [(2, 70000, 3, False, False), (1, 200000, 1, True, False),
                                                           (5, 140000, 7, False, True), (3, 66000, 2, True, True)])
def test_matmul_longer_than_the_loop_limit(m, k, n, transpose_a, transpose_b):
    """A contraction longer than llvmpipe's 65535 loop iterations, on the direct kernel (a row or
    two of output): the kernel runs it in parts that add to C, where it answered Unimplemented."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    with tf.device("/GPU:0"):
        got = tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b).numpy()
        batched = tf.matmul(np.stack([a, 2 * a]), b, transpose_a=transpose_a, transpose_b=transpose_b).numpy()
    want = (a.T if transpose_a else a).astype(np.float64) @ (b.T if transpose_b else b).astype(np.float64)
    # Plain f32 sums of k unit products (as TF-CPU's): rounding grows with k; a lost part would be
    # off by about the square root of its length, hundreds.
    tol = 1e-6 * k
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    np.testing.assert_allclose(batched, np.stack([want, 2 * want]), rtol=0, atol=2 * tol)


# (rtol, atol): float16 rounds sums of about 260 within half an ulp (0.125) plus the f32 sum's
# error; bfloat16, whose ulp past 512 is 4, within one ulp relative (2^-7), as TF-CPU's rounding of
# its own f32 sum is. A lost part of k would be off by hundreds.
HALF_MATMUL_TOLERANCE = {tf.float16: (0.0, 0.3), tf.bfloat16: (2.0**-7, 0.05)}


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_half_matmul_longer_than_the_loop_limit(transpose_b, dtype):
    """A float16 contraction past llvmpipe's loop cap: its parts of k cannot add up in a float16 C,
    so the product runs in f32 and rounds once (it answered Unimplemented; bfloat16, whose kernel
    did not refuse, is its twin). TF-CPU also sums in f32 and rounds once."""
    rng = np.random.default_rng(7)
    a = tf.cast(rng.standard_normal((2, 70000)).astype(np.float32), dtype)
    b = tf.cast(rng.standard_normal((3, 70000) if transpose_b else (70000, 3)).astype(np.float32), dtype)
    with tf.device("/GPU:0"):
        got = tf.cast(tf.matmul(a, b, transpose_b=transpose_b), tf.float64).numpy()
    with tf.device("/CPU:0"):
        want = tf.cast(tf.matmul(a, b, transpose_b=transpose_b), tf.float64).numpy()
    a64, b64 = tf.cast(a, tf.float64).numpy(), tf.cast(b, tf.float64).numpy()
    exact = a64 @ (b64.T if transpose_b else b64)
    rtol, atol = HALF_MATMUL_TOLERANCE[dtype]
    np.testing.assert_allclose(got, exact, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

def _r(shape, seed=0):
    return np.random.default_rng([seed, *shape]).standard_normal(shape).astype(np.float32)


# Windows whose loops pass llvmpipe's 65,535 iterations per invocation: the direct kernels' loops
# would be cut short (silently: wrong pools) or refused (Unimplemented convolutions). Convolutions
# take the implicit GEMM, pools pool one axis at a time.
WINDOWS_PAST_THE_LOOP_LIMIT = {
    "conv2d_deep": lambda: tf.nn.conv2d(_r((1, 6, 6, 8000)), _r((3, 3, 8000, 2)), 1, "SAME"),
    "conv2d_deep_half": lambda: tf.nn.conv2d(tf.cast(_r((1, 6, 6, 8000)), tf.float16),
                                             tf.cast(_r((3, 3, 8000, 2)) / 50, tf.float16), 1, "SAME"),
    "depthwise_big_window": lambda: tf.nn.depthwise_conv2d(_r((1, 270, 270, 2)), _r((260, 260, 2, 1)) / 100,
                                                           [1, 1, 1, 1], "VALID"),
    "depthwise_deep_multiplier_grad_input": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=[1, 4, 4, 2], filter=_r((3, 3, 2, 8000)), out_backprop=_r((1, 4, 4, 16000)),
        strides=[1, 1, 1, 1], padding="SAME"),
    # Wide, but within the cap: the direct kernels.
    "depthwise_wide": lambda: tf.nn.depthwise_conv2d(_r((2, 9, 9, 64)), _r((3, 3, 64, 200)), [1, 2, 2, 1], "SAME"),
    "depthwise_wide_grad_input": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=[2, 9, 9, 64], filter=_r((3, 3, 64, 200)), out_backprop=_r((2, 5, 5, 12800)),
        strides=[1, 2, 2, 1], padding="SAME"),
    "max_pool_global": lambda: tf.nn.max_pool2d(_r((1, 300, 300, 2)), 300, 1, "VALID"),
    "avg_pool_global": lambda: tf.nn.avg_pool2d(_r((1, 300, 300, 2)), 300, 1, "VALID"),
    "max_pool_same": lambda: tf.nn.max_pool2d(_r((2, 300, 310, 3)), [290, 300], [7, 9], "SAME"),
    "avg_pool_same": lambda: tf.nn.avg_pool2d(_r((2, 300, 310, 3)), [290, 300], [7, 9], "SAME"),
    "max_pool3d": lambda: tf.nn.max_pool3d(_r((1, 50, 50, 50, 2)), 45, 5, "VALID"),
    "avg_pool3d_same": lambda: tf.nn.avg_pool3d(_r((2, 50, 45, 47, 3)), [44, 40, 42], [3, 4, 5], "SAME"),
}


@pytest.mark.parametrize("case", WINDOWS_PAST_THE_LOOP_LIMIT)
def test_windows_past_the_loop_limit(case, strict_placement):
    with tf.device("/GPU:0"):
        got = WINDOWS_PAST_THE_LOOP_LIMIT[case]().numpy().astype(np.float64)
    with tf.device("/CPU:0"):
        want = WINDOWS_PAST_THE_LOOP_LIMIT[case]().numpy().astype(np.float64)
    tol = 2e-2 if "half" in case else 1e-5
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))


def vec4_kernel_cases():
    """Inputs for the vec4 twins of the reductions, batch norm and tile products: shapes whose
    channels or columns are multiples of 4 (the vec4 kernels) beside ones that are not (the scalar
    kernels), rows that do not fill a block, and views at odd offsets."""
    rng = rng_for("vec4 kernels")
    return {
        "rows": [rng.standard_normal(s).astype(np.float32) for s in [(37, 64), (5, 12), (3, 100), (9, 7), (2, 3, 512)]],
        "columns": [rng.standard_normal(s).astype(np.float32) for s in [(3000, 64), (100, 16), (50, 30), (7, 5, 12)]],
        "images": [rng.standard_normal(s).astype(np.float32) for s in [(3, 5, 7, 8), (2, 9, 9, 64), (1, 3, 11, 12), (2, 3, 4, 6),
                                                                       (2, 20, 20, 8)]],
        "nan_image": np.where(rng.random((2, 7, 9, 12)) < 0.05, np.nan, rng.standard_normal((2, 7, 9, 12))).astype(np.float32),
        "products": [(rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32))
                     for m, k, n in [(300, 24, 144), (130, 3, 8), (129, 64, 256), (70, 130, 6), (200, 200, 12), (9, 1, 4),
                                     (300, 128, 144), (300, 500, 20), (300, 200, 18), (40, 400, 36), (150, 385, 64)]],
        # Reduced over the middle axis (Mean over an image's H and W): batches of column reductions,
        # in one launch and in slices, four columns at once or one. (Drawn last: the cases above keep
        # their inputs; positive, so that the long sums do not cancel to below the tolerance.)
        "batched_columns": [rng.random(s).astype(np.float32) + 0.5 for s in [(3, 500, 12), (2, 3000, 64), (4, 50, 30),
                                                                             (2, 9, 11, 8), (2, 5000, 10)]],
    }


def run_vec4_kernel_cases(device, cases):
    out = []
    with tf.device(device):
        for x in cases["rows"]:
            t = tf.identity(tf.constant(x))
            out += [tf.reduce_sum(t, -1), tf.reduce_max(t, -1), tf.reduce_min(t, -1), tf.reduce_mean(t, -1),
                    tf.reduce_prod(t * 0.01 + 1.0, -1)]
            # A view one element into the buffer: the scalar kernel's offset.
            view = tf.split(tf.identity(tf.constant(np.concatenate([[0.0], x.ravel()]).astype(np.float32))),
                            [1, x.size])[1]
            out.append(tf.reduce_sum(tf.reshape(view, x.shape), -1))
        for x in cases["columns"]:
            t = tf.identity(tf.constant(x))
            out += [tf.reduce_sum(t, 0), tf.reduce_max(t, 0), tf.reduce_mean(t, list(range(x.ndim - 1)))]
        for x in cases["batched_columns"]:
            t = tf.identity(tf.constant(x))
            middle = list(range(1, x.ndim - 1))
            out += [tf.reduce_sum(t, middle), tf.reduce_min(t, middle), tf.reduce_mean(t, middle, keepdims=True),
                    tf.reduce_prod(t * 0.001 + 1.0, middle)]
        for x in cases["images"]:
            c = x.shape[-1]
            t = tf.identity(tf.constant(x))
            scale, offset = tf.constant(np.linspace(0.5, 2.0, c, dtype=np.float32)), tf.constant(np.linspace(-1, 1, c, dtype=np.float32))
            y, mean, var, saved_mean, saved_var, _ = tf.raw_ops.FusedBatchNormV3(
                x=t, scale=scale, offset=offset, mean=tf.zeros([c]), variance=tf.ones([c]), epsilon=0.001,
                exponential_avg_factor=0.3, is_training=True)
            out += [y, mean, var, saved_mean, saved_var]
            dy = tf.identity(tf.constant(np.cos(x * 3.0).astype(np.float32)))
            for training in (True, False):
                out += list(tf.raw_ops.FusedBatchNormGradV3(
                    y_backprop=dy, x=t, scale=scale, reserve_space_1=saved_mean, reserve_space_2=saved_var + 0.5,
                    reserve_space_3=tf.zeros([0]), epsilon=0.001, is_training=training)[:3])
        for x in cases["images"] + [cases["nan_image"]]:
            t = tf.identity(tf.constant(x))
            out += [tf.nn.max_pool2d(t, 3, 2, "SAME"), tf.nn.max_pool2d(t, (3, 2), (1, 2), "VALID"),
                    tf.nn.avg_pool2d(t, 3, 2, "SAME"), tf.nn.avg_pool2d(t, (2, 3), (2, 1), "VALID")]
        for x in cases["images"]:
            t = tf.identity(tf.constant(x))
            c = x.shape[-1]
            for kh, kw, strides, dilations, pad in [(3, 3, 1, 1, "SAME"), (5, 3, 2, 1, "VALID"), (3, 3, 1, 2, "SAME"),
                                                    (1, 2, 3, 1, "SAME")]:
                k = tf.constant(np.linspace(-1, 1, kh * kw * c, dtype=np.float32).reshape(kh, kw, c, 1))
                if x.shape[1] >= (kh - 1) * dilations + 1 or pad == "SAME":
                    y = tf.nn.depthwise_conv2d(t, k, [1, strides, strides, 1], pad,
                                               dilations=[dilations, dilations] if dilations > 1 else None)
                    out.append(y)
                    if dilations == 1:  # TF-CPU's raw op ignores dilations (its gradient path does not take it)
                        out.append(tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
                            input=t, filter_sizes=[kh, kw, c, 1], out_backprop=tf.math.cos(y * 3.0),
                            strides=[1, strides, strides, 1], padding=pad))
            for ksize, strides, pad in [(3, 2, "SAME"), ((3, 2), (1, 2), "VALID"), (2, 2, "VALID")]:
                y = tf.nn.max_pool2d(t, ksize, strides, pad)
                dy = tf.reshape(tf.range(tf.size(y), dtype=tf.float32) * 0.01, tf.shape(y))
                out.append(tf.raw_ops.MaxPoolGrad(orig_input=t, orig_output=y, grad=dy, ksize=[1, *np.broadcast_to(ksize, 2), 1],
                                                  strides=[1, *np.broadcast_to(strides, 2), 1], padding=pad))
        for a, b in cases["products"]:
            out.append(tf.matmul(tf.identity(tf.constant(a)), tf.identity(tf.constant(b))))
        # Channels a multiple of 4 in views one element into their buffer: the scalar fallbacks.
        for x in cases["images"][:2]:
            c = x.shape[-1]
            padded = tf.identity(tf.constant(np.concatenate([[0.0], x.ravel()]).astype(np.float32)))
            t = tf.reshape(tf.split(padded, [1, x.size])[1], x.shape)
            ones = tf.ones([c])
            out += list(tf.raw_ops.FusedBatchNormV3(x=t, scale=ones, offset=ones, mean=ones, variance=ones,
                                                    is_training=True)[:3])
            out += [tf.nn.max_pool2d(t, 3, 2, "SAME"), tf.nn.avg_pool2d(t, 2, 2, "VALID"), tf.reduce_sum(t, [0, 1, 2]),
                    tf.reduce_sum(t, -1)]
        # An infinite dy at a pixel whose taps reach into the padding: 0 * inf is NaN there.
        x = cases["images"][4]
        dy = np.cos(x * 2.0)
        dy[:, 0, 0, :] = np.inf
        out.append(tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
            input=tf.identity(tf.constant(x)), filter_sizes=[3, 3, x.shape[-1], 1], out_backprop=tf.constant(dy),
            strides=[1, 1, 1, 1], padding="SAME"))
        return [r.numpy() for r in out]


def test_vec4_reductions_batch_norm_and_products_match_cpu(strict_placement):
    """Each vec4 kernel (reduce_f32_serial_vec4, reduce_columns_vec4, batch norm's *_vec4, the pools'
    *_c4, depthwise_c4's blocks of four pixels, depthwise_grad_filter_c4, the tile products' vec4
    stores and k-depth) and
    MaxPoolGrad's two passes against TF-CPU on
    the same inputs, beside the scalar kernels they fall back to."""
    cases = vec4_kernel_cases()
    got, want = run_vec4_kernel_cases(GPU, cases), run_vec4_kernel_cases("/CPU:0", cases)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=f"result {i}")


def test_vec4_kernels_run():
    """The vec4 kernels really run on the shapes meant for them (the comparison above would pass on
    the scalar kernels alone)."""
    script = (
        "import tensorflow as tf\n"
        "with tf.device('/GPU:0'):\n"
        "    x = tf.identity(tf.ones([2, 9, 9, 64]))\n"
        "    tf.reduce_sum(x, -1).numpy(); tf.reduce_sum(x, [0, 1, 2]).numpy()\n"
        "    tf.reduce_sum(tf.identity(tf.ones([2, 9, 9, 12])), [0, 1, 2]).numpy()\n"
        "    c = tf.ones([64])\n"
        "    y, m, v, sm, sv, _ = tf.raw_ops.FusedBatchNormV3(x=x, scale=c, offset=c, mean=c, variance=c, is_training=True)\n"
        "    tf.raw_ops.FusedBatchNormGradV3(y_backprop=x, x=x, scale=c, reserve_space_1=sm, reserve_space_2=sv,\n"
        "                                    reserve_space_3=tf.zeros([0]), is_training=True)[0].numpy()\n"
        "    tf.nn.avg_pool2d(x, 2, 2, 'SAME').numpy()\n"
        "    with tf.GradientTape() as tape:\n"
        "        tape.watch(x)\n"
        "        y = tf.nn.max_pool2d(x, 3, 2, 'SAME')\n"
        "    tape.gradient(y, x).numpy()\n"
        "    with tf.GradientTape() as tape:\n"
        "        k = tf.ones([3, 3, 64, 1])\n"
        "        tape.watch(k)\n"
        "        y = tf.nn.depthwise_conv2d(x, k, [1, 1, 1, 1], 'SAME')\n"
        "    tape.gradient(y, k).numpy()\n"
    )
    log = dispatch_log(script)
    # Mean over H and W, a batch of column reductions: sixteen columns at a time, the only reduction
    # (its first pass reading the input from a texture, at this size).
    mean_log = dispatch_log("import tensorflow as tf\n"
                            "with tf.device('/GPU:0'):\n"
                            "    tf.reduce_mean(tf.identity(tf.ones([2, 30, 30, 64])), [1, 2]).numpy()\n")
    assert {line.split("dispatch ")[1].split()[0] for line in mean_log.splitlines() if "dispatch reduce" in line} \
        == {"reduce_columns_vec16", "reduce_columns_vec16_texels"}, mean_log[-3000:]
    for entry in ["reduce_f32_serial_vec4", "reduce_columns_vec4", "reduce_columns_vec16", "stats_vec4", "normalize_vec4", "grad_stats_vec4",
                  "grad_input_vec4", "max_pool_c4", "avg_pool_c4", "max_pool_grad_argmax", "max_pool_grad_routed",
                  "depthwise_rows", "depthwise_grad_filter_rows"]:
        assert f"dispatch {entry}" in log, (entry, log[-3000:])


def test_depthwise_rows_and_their_fallbacks_run():
    """The `_rows` depthwise entries run where their register arrays hold the window, and the
    four-channel kernels past that (9 taps; 19 columns at dilation 3; the input gradient at stride 3)."""
    def entries(config):
        script = ("import sys; sys.path.insert(0, %r); import test_ops as t\n"
                  "t._depthwise_rows_case(*%r, on_gpu=True)\n" % (os.path.dirname(__file__), config))
        log = dispatch_log(script)
        return {line.split("dispatch ")[1].split()[0] for line in log.splitlines() if "dispatch depthwise" in line}
    rows = {"depthwise_rows", "depthwise_grad_input_rows", "depthwise_grad_filter_rows"}
    c4 = {"depthwise_c4", "depthwise_grad_input_c4", "depthwise_grad_filter_c4"}
    for config, want in [((3, 3, 1, 1, "SAME", (2, 9, 11, 8)), rows), ((3, 3, 2, 1, "SAME", (1, 9, 13, 4)), rows),
                         ((4, 4, 4, 1, "SAME", (1, 8, 17, 4)), rows), ((1, 9, 1, 1, "SAME", (1, 4, 12, 4)), c4),
                         ((3, 6, 1, 3, "SAME", (1, 6, 22, 4)), c4), ((2, 8, 3, 1, "SAME", (1, 7, 19, 4)), c4)]:
        assert config in DEPTHWISE_ROWS_CONFIGS
        assert entries(config) == want, config


@pytest.mark.parametrize("channels", [1, 4])
def test_max_pool_skips_nan_and_starts_from_the_lowest_value(strict_placement, channels):
    """TF-CPU's MaxPool (and TF-GPU's, unless TF_ENABLE_MAXPOOL_NANPROP is set) skips NaNs and starts
    from the lowest finite value: a window of NaNs or -inf gives -FLT_MAX. Both the scalar and the
    four-channel kernel."""
    windows = [[np.nan, 1, 2, 3], [1, 2, 3, np.nan], [1, np.nan, 5, 3], [np.nan] * 4, [-np.inf] * 4, [-np.inf, np.nan, -np.inf, -1]]
    x = np.repeat(np.array(windows, np.float32).reshape(len(windows), 2, 2, 1), channels, axis=3)
    with tf.device(GPU):
        got = tf.nn.max_pool2d(tf.identity(tf.constant(x)), 2, 2, "VALID").numpy()
    with tf.device("/CPU:0"):
        want = tf.nn.max_pool2d(tf.constant(x), 2, 2, "VALID").numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, 0, 0, 0], np.array([3, 3, 5, np.finfo(np.float32).min, np.finfo(np.float32).min, -1], np.float32))


# (kh, kw, stride, dilation, padding, image [batch, h, w, c]): windows of every width the `_rows`
# depthwise entries unroll (1 to 8 taps), strides 1 to 3, dilation 2, rows not a multiple of 4
# wide, and the fallbacks past their register arrays (9 taps; 3 * stride + (kw - 1) * dilation + 1
# columns over 16).
DEPTHWISE_ROWS_CONFIGS = [
    (3, 3, 1, 1, "SAME", (2, 9, 11, 8)),
    (5, 5, 1, 1, "SAME", (2, 10, 13, 12)),
    (3, 3, 2, 1, "SAME", (2, 12, 14, 8)),
    (3, 3, 2, 1, "VALID", (1, 9, 9, 4)),
    (1, 1, 1, 1, "VALID", (2, 5, 6, 8)),
    (7, 7, 1, 1, "SAME", (1, 9, 10, 4)),
    (2, 8, 3, 1, "SAME", (1, 7, 19, 4)),
    (3, 4, 1, 2, "SAME", (2, 9, 13, 8)),
    (3, 3, 1, 2, "VALID", (1, 8, 9, 4)),
    (1, 9, 1, 1, "SAME", (1, 4, 12, 4)),
    (3, 6, 1, 3, "SAME", (1, 6, 22, 4)),
    # The input gradient at strides 2 and 4, with the padding at each phase of the stride.
    (3, 3, 2, 1, "SAME", (1, 9, 13, 4)),
    (5, 5, 2, 1, "SAME", (1, 9, 15, 8)),
    (4, 4, 4, 1, "SAME", (1, 8, 17, 4)),
    (3, 5, 2, 1, [[0, 0], [2, 1], [3, 1], [0, 0]], (2, 7, 10, 4)),
    # A filter gradient over several slices of quads: slices of whole rows (8 quads a row, slices
    # of 128), and the second of two slices of 67 quads starting within a row (7 quads a row).
    (3, 3, 1, 1, "SAME", (2, 24, 30, 8)),
    (3, 3, 1, 1, "SAME", (1, 19, 26, 4)),
    # The register arrays' bounds: 2, 6 and 8 taps, stride 3 (12 columns), stride 4's other phases.
    (2, 2, 1, 1, "VALID", (2, 5, 9, 4)),
    (3, 6, 1, 1, "SAME", (1, 6, 14, 8)),
    (2, 8, 1, 1, "SAME", (1, 5, 15, 4)),
    (3, 3, 3, 1, "SAME", (1, 10, 17, 4)),
    (4, 4, 4, 1, [[0, 0], [0, 0], [0, 0], [0, 0]], (1, 8, 16, 4)),
    (4, 4, 4, 1, [[0, 0], [2, 1], [2, 1], [0, 0]], (1, 8, 17, 4)),
    (4, 4, 4, 1, [[0, 0], [3, 0], [3, 0], [0, 0]], (1, 9, 17, 4)),
]


def _depthwise_rows_case(kh, kw, stride, dilation, padding, shape, on_gpu):
    rng = rng_for(f"depthwise rows {kh} {kw} {stride} {dilation} {padding} {shape}")
    x = rng.standard_normal(shape).astype(np.float32)
    k = rng.standard_normal((kh, kw, shape[-1], 1)).astype(np.float32)
    strides, dilations = [1, stride, stride, 1], [1, dilation, dilation, 1]
    explicit = {} if isinstance(padding, str) else {"explicit_paddings": sum(padding, [])}
    if not on_gpu:
        # TF-CPU's raw ops ignore dilations; tf.nn.depthwise_conv2d dilates through space_to_batch.
        with tf.device("/CPU:0"):
            tx, tk = tf.constant(x), tf.constant(k)
            with tf.GradientTape() as tape:
                tape.watch([tx, tk])
                y = tf.nn.depthwise_conv2d(tx, tk, strides, padding, dilations=[dilation, dilation])
            dy = tf.constant(np.cos(np.arange(y.shape.num_elements()) * 0.37).reshape(y.shape).astype(np.float32))
            dx, dk = tape.gradient(y, [tx, tk], output_gradients=dy)
            return [y.numpy(), dx.numpy(), dk.numpy()]
    with tf.device(GPU):
        tx, tk = tf.identity(tf.constant(x)), tf.identity(tf.constant(k))
        raw_padding = padding if isinstance(padding, str) else "EXPLICIT"
        y = tf.raw_ops.DepthwiseConv2dNative(input=tx, filter=tk, strides=strides, padding=raw_padding,
                                             dilations=dilations, **explicit)
        dy = tf.identity(tf.constant(np.cos(np.arange(y.shape.num_elements()) * 0.37).reshape(y.shape).astype(np.float32)))
        dx = tf.raw_ops.DepthwiseConv2dNativeBackpropInput(input_sizes=list(shape), filter=tk, out_backprop=dy,
                                                            strides=strides, padding=raw_padding, dilations=dilations,
                                                            **explicit)
        dk = tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(input=tx, filter_sizes=list(k.shape), out_backprop=dy,
                                                             strides=strides, padding=raw_padding, dilations=dilations,
                                                             **explicit)
        return [y.numpy(), dx.numpy(), dk.numpy()]


@pytest.mark.parametrize("config", DEPTHWISE_ROWS_CONFIGS,
                         ids=lambda c: "x".join(map(str, c[:4])) + "-" + (c[4] if isinstance(c[4], str) else "EXPLICIT"))
def test_depthwise_rows_match_cpu(strict_placement, config):
    """DepthwiseConv2dNative and both its gradients through the `_rows` entries (four pixels of a
    row per invocation, the window's columns as override constants) and their fallbacks, against
    TF-CPU's depthwise convolution and its gradients (dilated through space_to_batch there)."""
    got = _depthwise_rows_case(*config, on_gpu=True)
    want = _depthwise_rows_case(*config, on_gpu=False)
    for name, g, w in zip(["y", "dx", "dfilter"], got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=5e-5, err_msg=name)


def _depthwise_skipping_padding(x, k, stride, pad):
    """NumPy's depthwise convolution (multiplier 1) and its input gradient for dy = 1, summing only
    the taps inside the image, as TF-GPU's kernels do."""
    b, h, w, c = x.shape
    kh, kw = k.shape[:2]
    oh, ow = -(-h // stride), -(-w // stride)
    y, dx = np.zeros((b, oh, ow, c), np.float64), np.zeros(x.shape, np.float64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * stride + ky - pad[0], ox * stride + kx - pad[1]
                    if 0 <= iy < h and 0 <= ix < w:
                        y[:, oy, ox] += x[:, iy, ix] * k[ky, kx, :, 0]
                        dx[:, iy, ix] += k[ky, kx, :, 0]
    return y, dx


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_skips_filter_taps_in_the_padding(strict_placement, stride):
    """The depthwise convolution and its input gradient skip the taps that fall in the padding, as
    TF-GPU's kernels do: an infinite tap there gives no NaN at the border. (TF-CPU's kernels differ
    by shape: 4 channels skip them, 8 multiply the padding's zeros. The filter gradient multiplies
    the padding's zeros by dy, as both do: `test_vec4_reductions_batch_norm_and_products_match_cpu`.)"""
    x = np.linspace(0.5, 1.5, 2 * 7 * 9 * 8, dtype=np.float32).reshape(2, 7, 9, 8)
    k = np.ones((3, 3, 8, 1), np.float32)
    k[0, 0, :4, 0], k[2, 2, 4:, 0] = np.inf, -np.inf
    strides = [1, stride, stride, 1]
    with tf.device(GPU):
        y = tf.raw_ops.DepthwiseConv2dNative(input=tf.identity(tf.constant(x)), filter=tf.identity(tf.constant(k)),
                                             strides=strides, padding="SAME")
        dx = tf.raw_ops.DepthwiseConv2dNativeBackpropInput(input_sizes=list(x.shape), filter=tf.identity(tf.constant(k)),
                                                           out_backprop=tf.ones_like(y), strides=strides, padding="SAME")
    # SAME padding's leading part is 1 at both strides: at stride 2, (ceil(7 / 2) - 1) * 2 + 3 - 7 = 2
    # rows (and as many columns) in all, 1 before.
    want_y, want_dx = _depthwise_skipping_padding(x, k, stride, (1, 1))
    assert not np.isnan(want_y).any() and not np.isnan(want_dx).any()
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-5)
    np.testing.assert_allclose(dx.numpy(), want_dx, rtol=1e-5)


# (kh, kw, stride, dilation, padding, image [batch, h, w, c], oc): Conv2DBackpropFilter of images
# with 1 to 3 channels (`conv2d_grad_filter_rows`): 1 to 8 taps across, strides 1 to 3, dilation
# 2, SAME/VALID/EXPLICIT, widths that leave a partial quad, slices starting within a row, and
# the fallbacks (oc not a multiple of 4; 4 channels; 9 taps).
CONV_GRAD_FILTER_ROWS_CONFIGS = [
    (3, 3, 1, 1, "SAME", (4, 16, 16, 3), 32),
    (7, 7, 2, 1, "SAME", (2, 30, 30, 3), 8),
    (1, 1, 1, 1, "VALID", (2, 5, 7, 1), 4),
    (2, 2, 2, 1, "VALID", (3, 9, 9, 2), 12),
    (5, 5, 1, 2, "SAME", (2, 15, 13, 3), 4),
    (3, 8, 1, 1, "SAME", (1, 6, 19, 3), 8),
    (3, 6, 3, 1, [[0, 0], [1, 2], [3, 1], [0, 0]], (2, 11, 14, 2), 4),
    (3, 3, 1, 1, "SAME", (6, 30, 26, 3), 16),
    (3, 3, 1, 1, "SAME", (1, 19, 26, 3), 8),
    (3, 3, 1, 1, "SAME", (2, 8, 8, 3), 6),
    (3, 3, 1, 1, "SAME", (2, 8, 8, 4), 8),
    (1, 9, 1, 1, "SAME", (2, 4, 12, 3), 8),
]


def _conv_grad_filter_case(kh, kw, stride, dilation, padding, shape, oc, on_gpu):
    """The filter gradient of one configuration on the GPU (the raw op), or its float64 NumPy
    reference: the sum over pixels of each tap's zero-padded input times dy (TF-CPU has no
    dilated convolution gradients)."""
    rng = rng_for(f"conv grad filter rows {kh} {kw} {stride} {dilation} {padding} {shape} {oc}")
    x = rng.standard_normal(shape).astype(np.float32)
    _, h, w, c = shape
    if isinstance(padding, str):
        out = [-(-n // stride) if padding == "SAME" else (n - (k - 1) * dilation - 1) // stride + 1
               for n, k in [(h, kh), (w, kw)]]
        total = [max((o - 1) * stride + (k - 1) * dilation + 1 - n, 0) if padding == "SAME" else 0
                 for o, n, k in zip(out, [h, w], [kh, kw])]
        pads = [(t // 2, t - t // 2) for t in total]
    else:
        pads = [tuple(padding[1]), tuple(padding[2])]
        out = [(n + sum(pd) - (k - 1) * dilation - 1) // stride + 1 for n, pd, k in zip([h, w], pads, [kh, kw])]
    dy = np.cos(np.arange(shape[0] * out[0] * out[1] * oc) * 0.37).reshape(shape[0], *out, oc).astype(np.float32)
    if not on_gpu:
        xp = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)])
        df = np.zeros((kh, kw, c, oc))
        for ky in range(kh):
            for kx in range(kw):
                y0, x0 = ky * dilation, kx * dilation
                taps = xp[:, y0:y0 + (out[0] - 1) * stride + 1:stride, x0:x0 + (out[1] - 1) * stride + 1:stride]
                df[ky, kx] = np.einsum("bhwc,bhwo->co", taps, dy.astype(np.float64))
        return df
    explicit = {} if isinstance(padding, str) else {"explicit_paddings": sum(padding, [])}
    with tf.device(GPU):
        return tf.raw_ops.Conv2DBackpropFilter(
            input=tf.identity(tf.constant(x)), filter_sizes=[kh, kw, c, oc], out_backprop=tf.identity(tf.constant(dy)),
            strides=[1, stride, stride, 1], padding=padding if isinstance(padding, str) else "EXPLICIT",
            dilations=[1, dilation, dilation, 1], **explicit).numpy()


@pytest.mark.parametrize("config", CONV_GRAD_FILTER_ROWS_CONFIGS,
                         ids=lambda c: "x".join(map(str, c[:4])) + "-" + (c[4] if isinstance(c[4], str) else "EXPLICIT")
                         + f"-c{c[5][-1]}-oc{c[6]}")
def test_conv_grad_filter_rows_match_cpu(strict_placement, config):
    """Conv2DBackpropFilter of few-channel images through `conv2d_grad_filter_rows` (and its
    fallbacks) against the exact sums (float64 NumPy)."""
    got = _conv_grad_filter_case(*config, on_gpu=True)
    want = _conv_grad_filter_case(*config, on_gpu=False)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-4)


def test_conv_grad_filter_rows_runs():
    """conv2d_grad_filter_rows runs for an RGB image's filter gradient (the comparison above would
    pass on the tiled product alone), and not for 4 channels or oc not a multiple of 4."""
    def entries(config):
        script = ("import sys; sys.path.insert(0, %r); import test_ops as t\n"
                  "t._conv_grad_filter_case(*%r, on_gpu=True)\n" % (os.path.dirname(__file__), config))
        return dispatch_log(script)
    assert "dispatch conv2d_grad_filter_rows" in entries(CONV_GRAD_FILTER_ROWS_CONFIGS[0])
    for config in CONV_GRAD_FILTER_ROWS_CONFIGS[-3:]:
        assert "dispatch conv2d_grad_filter_rows" not in entries(config), config


def test_whole_tensor_reductions_in_chunks_match_cpu(strict_placement):
    """Sum/Mean/Max/Min/Prod of long contiguous runs with few outputs (a whole tensor, a few rows)
    in two passes (`launch_in_chunks`: chunks by reduce_f32_serial_vec4, then the tree), beside
    the slices they fall back to (a run no chunk length divides, a view at an odd offset), against
    TF-CPU; and the dispatch log names the chunk pass."""
    rng = rng_for("reductions in chunks")
    cases = [rng.random((4, 56, 56, 16)).astype(np.float32) + 0.5, rng.random((3, 40000)).astype(np.float32) + 0.5,
             rng.random((32771,)).astype(np.float32) + 0.5, rng.random((2, 3, 65536)).astype(np.float32) - 0.5,
             # A multiple of 4 that no chunk length (a multiple of 4 from 64 to 512) divides.
             rng.random((4 * 8209,)).astype(np.float32) + 0.5]

    def run(device):
        out = []
        with tf.device(device):
            for x in cases:
                t = tf.identity(tf.constant(x))
                last = [x.ndim - 1] if x.ndim > 1 else None
                for axis in [None, last]:
                    # Prod of powers of two, exact in any order (a float32 product of 200,000
                    # factors near 1 drifts by its order: TF-CPU multiplies packets in a tree).
                    factors = tf.where(t > 1.4999, 2.0, tf.where(t < 0.5001, 0.5, 1.0))
                    out += [tf.reduce_sum(t, axis), tf.reduce_mean(t, axis), tf.reduce_max(t, axis),
                            tf.reduce_min(t, axis), tf.reduce_prod(factors, axis)]
            # One element into its buffer: the slices (no vec4 window).
            padded = tf.identity(tf.constant(np.concatenate([[0.0], cases[0].ravel()]).astype(np.float32)))
            out.append(tf.reduce_sum(tf.split(padded, [1, cases[0].size])[1]))
        return [r.numpy() for r in out]

    for i, (g, w) in enumerate(zip(run(GPU), run("/CPU:0"))):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5, err_msg=f"result {i}")
    log = dispatch_log("import tensorflow as tf\n"
                       "with tf.device('/GPU:0'):\n"
                       "    tf.reduce_sum(tf.identity(tf.ones([4, 56, 56, 16]))).numpy()\n")
    assert "dispatch reduce_f32_serial_vec4" in log, log[-3000:]


@pytest.mark.parametrize("op", ["ResizeBilinearGrad", "ResizeBicubicGrad"])
def test_float64_resize_gradients_sum_in_f64(op, strict_placement):
    """A 2x upscale with legacy coordinates puts every source at a whole or half pixel, so each of
    TF's float32 products of a gradient and its weights is exact and TF-CPU's float64 sums are
    the exact sums. Gradients of 1 beside ones of 2^-40 keep bits that float32 sums would drop:
    the plugin's float64 gradient equals TF-CPU's bit for bit."""
    rng = np.random.default_rng(7)
    grads = np.where(rng.random((2, 8, 10, 3)) < 0.5, 1.0, 2.0 ** -40).astype(np.float32)
    grads *= rng.choice([-1.0, 1.0], size=grads.shape).astype(np.float32)
    original = np.zeros((2, 4, 5, 3), np.float64)
    fn = getattr(tf.raw_ops, op)
    results = []
    for device in (GPU, "/CPU:0"):
        with tf.device(device):
            out = fn(grads=tf.constant(grads), original_image=tf.constant(original), align_corners=False,
                     half_pixel_centers=False)
            results.append((out.device, out.numpy()))
    (device, got), (_, want) = results
    assert device.endswith("GPU:0") and got.dtype == np.float64
    assert np.any(want != want.astype(np.float32)), "the reference needs more than float32's bits"
    np.testing.assert_array_equal(got, want)


def tied_pool_input(shape, rng):
    """Channels that tell passes of window rows apart (the first pass of a 256-row window takes
    253 rows on llvmpipe): random values whose maximum lies in the last rows, all ones (the first element
    wins), and ones with a 2 in the first rows and the last (a tie across passes, which the first
    row wins), as an [images, *spatial, 3] float32 array."""
    x = rng.random(shape + (3,)).astype(np.float32)
    last = (slice(None),) + tuple(s - 1 for s in shape[1:])
    x[last + (0,)] = 3.0
    x[..., 1:] = 1.0
    first = (slice(None),) + (1,) * (len(shape) - 1)
    x[first + (2,)] = 2.0
    x[last + (2,)] = 2.0
    return x


def pools_past_the_loop_limit():
    """The pools, MaxPoolWithArgmax, the max-pool gradients and the average-pool gradients with
    windows (or windows over an element) past llvmpipe's 65,535 loop iterations per invocation:
    name -> a function run under each device."""
    rng = rng_for("pools_past_the_loop_limit")
    x = tied_pool_input((2, 257, 257), rng)
    tiles = tied_pool_input((1, 512, 512), rng)
    volume = tied_pool_input((1, 48, 48, 48), rng)
    # Values 1e-3 apart: MaxPool3DGrad routes a window's gradient to every element within 1e-5 of
    # its maximum, which 2-D MaxPoolGrad (its reference) would not.
    plane = (rng.permutation(511 * 511).reshape(1, 1, 511, 511, 1) * 1e-3).astype(np.float32)
    k, k3 = [1, 256, 256, 1], [1, 48, 48, 48, 1]
    grad = rng.standard_normal((2, 2, 2, 3)).astype(np.float32)
    grad_grad = rng.standard_normal(x.shape).astype(np.float32)
    # 255 rows of 256 taps: 65,535 taps, one pass under a count that left out the rows' own loop
    # (65,791 iterations), whose last rows llvmpipe then skipped.
    edge = tied_pool_input((1, 255, 256), rng)
    # Columns of 30,000 rows (90,001 iterations): the separable route's row pass needs passes;
    # 4 channels take the vec4 shader.
    column = tied_pool_input((1, 30000, 2), rng)
    column4 = np.concatenate([column, column[..., :1] * 0.5], axis=-1)
    deep = tied_pool_input((1, 25000, 2, 2), rng)
    # One row of 70,000 taps (past the cap by itself): passes of the row's taps.
    wide = tied_pool_input((1, 70001), rng)[:, None]
    wide_grad_grad = rng.standard_normal(wide.shape).astype(np.float32)

    def max_pool_grad(x, size, stride, grad):
        y = tf.nn.max_pool2d(x, size, stride, "VALID")
        return tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=grad, ksize=k,
                                      strides=[1, stride, stride, 1], padding="VALID")

    def with_argmax(include_batch):
        def run():
            y, argmax = tf.nn.max_pool_with_argmax(x, 256, 1, "VALID", include_batch_in_index=include_batch)
            dx = tf.raw_ops.MaxPoolGradWithArgmax(input=x, grad=grad, argmax=argmax, ksize=k, strides=[1] * 4,
                                                  padding="VALID", include_batch_in_index=include_batch)
            return [y, argmax, dx]
        return run

    return {
        "MaxPoolWithArgmax-and-grad": with_argmax(False),
        "MaxPoolWithArgmax-and-grad-batch-index": with_argmax(True),
        "MaxPoolWithArgmax-255x256": lambda: list(tf.nn.max_pool_with_argmax(edge, [255, 256], 1, "VALID")),
        "MaxPool-AvgPool-column": lambda: [tf.nn.max_pool2d(column, [30000, 1], 1, "VALID"),
                                           tf.nn.avg_pool2d(column, [30000, 1], 1, "VALID"),
                                           tf.nn.avg_pool2d(column, [29999, 1], 2, "SAME")],
        "MaxPool-AvgPool-column-c4": lambda: [tf.nn.max_pool2d(column4, [30000, 1], 1, "VALID"),
                                              tf.nn.avg_pool2d(column4, [30000, 1], 1, "VALID")],
        "MaxPool3D-AvgPool3D-deep": lambda: [tf.nn.max_pool3d(deep, [25000, 1, 1], 1, "VALID"),
                                             tf.nn.avg_pool3d(deep, [25000, 1, 1], 1, "VALID"),
                                             tf.nn.avg_pool3d(deep, [24999, 1, 1], 2, "SAME")],
        "row-of-70000-taps": lambda: [
            *tf.nn.max_pool_with_argmax(wide, [1, 70000], 1, "VALID"),
            tf.nn.max_pool2d(wide, [1, 70000], 1, "VALID"),
            tf.nn.avg_pool2d(wide, [1, 70000], 1, "VALID"),
            tf.raw_ops.MaxPoolGrad(orig_input=wide, orig_output=tf.nn.max_pool2d(wide, [1, 70000], 1, "VALID"),
                                   grad=rng_grad((1, 1, 2, 3)), ksize=[1, 1, 70000, 1], strides=[1] * 4,
                                   padding="VALID"),
            tf.raw_ops.MaxPoolGradGrad(orig_input=wide, orig_output=tf.nn.max_pool2d(wide, [1, 70000], 1, "VALID"),
                                       grad=wide_grad_grad, ksize=[1, 1, 70000, 1], strides=[1] * 4,
                                       padding="VALID")],
        "MaxPoolGrad-overlapping": lambda: max_pool_grad(x, 256, 1, grad),
        "MaxPoolGrad-disjoint": lambda: max_pool_grad(tiles, 256, 256, rng_grad((1, 2, 2, 3))),
        "MaxPoolGradGrad": lambda: tf.raw_ops.MaxPoolGradGrad(
            orig_input=x, orig_output=tf.nn.max_pool2d(x, 256, 1, "VALID"), grad=grad_grad, ksize=k,
            strides=[1] * 4, padding="VALID"),
        # 511 x 511 under 256 x 256 windows: up to 256 x 256 windows over an element. TF-CPU takes
        # 15 s here; the exact answer is each element's sum of its windows' gradients / 65,536.
        "AvgPoolGrad": (
            lambda: tf.raw_ops.AvgPoolGrad(
                orig_input_shape=[1, 511, 511, 1], grad=rng_grad((1, 256, 256, 1)), ksize=k, strides=[1] * 4,
                padding="VALID"),
            lambda: box_sums(rng_grad((1, 256, 256, 1))[0, :, :, 0], 256)[None, :, :, None] / 65536),
        # Up to 256 x 256 windows over an element of a [1, 1, 511, 511, 1] volume.
        # TF-CPU's MaxPool3DGrad takes two minutes here: the exact answer routes each window's
        # gradient to its maximum (distinct values: one per window).
        "MaxPool3DGrad-covering": (
            lambda: tf.raw_ops.MaxPool3DGrad(
                orig_input=plane, orig_output=tf.nn.max_pool3d(plane, [1, 256, 256], 1, "VALID"),
                grad=rng_grad((1, 1, 256, 256, 1)), ksize=[1, 1, 256, 256, 1], strides=[1] * 5, padding="VALID"),
            lambda: routed_to_maxima(plane[0, 0, :, :, 0], 256, rng_grad((1, 1, 256, 256, 1))[0, 0, :, :, 0])[
                None, None, :, :, None]),
        "AvgPool3DGrad-covering": lambda: tf.raw_ops.AvgPool3DGrad(
            orig_input_shape=[1, 1, 511, 511, 1], grad=rng_grad((1, 1, 256, 256, 1)), ksize=[1, 1, 256, 256, 1],
            strides=[1] * 5, padding="VALID"),
        "MaxPool3DGradGrad": lambda: tf.raw_ops.MaxPool3DGradGrad(
            orig_input=volume, orig_output=tf.nn.max_pool3d(volume, 48, 1, "VALID"),
            grad=rng_grad(volume.shape), ksize=k3, strides=[1] * 5, padding="VALID"),
    }


def box_sums(values, k):
    """Each element's sum of the float64 `values` of the k x k stride-1 windows covering it, over
    the [n + k - 1]-square image those windows pool."""
    padded = np.pad(values.astype(np.float64), k - 1)
    table = np.pad(padded.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    return table[k:, k:] - table[:-k, k:] - table[k:, :-k] + table[:-k, :-k]


def routed_to_maxima(image, k, grad):
    """MaxPoolGrad of distinct `image` values under k x k stride-1 VALID windows, exactly: each
    window's gradient added (in float64) at its maximum, found through separable maxima."""
    windows = np.lib.stride_tricks.sliding_window_view
    maxima = windows(windows(image, k, axis=1).max(-1), k, axis=0).max(-1)
    where = np.argsort(image, axis=None)
    at = where[np.searchsorted(image.ravel()[where], maxima.ravel())]
    dx = np.zeros(image.size)
    np.add.at(dx, at, grad.ravel().astype(np.float64))
    return dx.reshape(image.shape)


def rng_grad(shape):
    """A gradient of `shape` that depends on nothing but the shape (the same on both devices)."""
    return rng_for("pool gradient", tuple(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("case", list(pools_past_the_loop_limit()))
def test_pools_past_the_loop_limit(strict_placement, case):
    """Windows of 65,536 taps (and 65,536 windows over an element, for AvgPoolGrad) raised
    Unimplemented on llvmpipe; their kernels run in passes of window rows now (a row of 70,000
    taps alone, in passes of its taps), each resuming the argmax, the sum or the first match where
    the pass before left it. The inputs put a maximum in
    the second pass's rows and ties across passes (`tied_pool_input`); the answers equal TF-CPU's
    (the first maximum in row-major order, TF's convention on both devices)."""
    run = pools_past_the_loop_limit()[case]
    run, reference = run if isinstance(run, tuple) else (run, run)
    with tf.device(GPU):
        got = run()
    with tf.device("/CPU:0"):
        want = reference()
    got, want = (got if isinstance(got, list) else [got]), (want if isinstance(want, list) else [want])
    for g, w in zip(got, want):
        assert g.device.endswith("GPU:0"), case
        w = np.asarray(w)
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g.numpy(), w)
            continue
        # Float32 sums of up to 65,536 gradients (1.7e-5 from the exact sum seen), in another order.
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-6 * max(1, np.abs(w).max()))
