"""Runs every pool kernel that splits its windows into passes on small shapes, on /GPU:0 (soft
placement off) and on TF-CPU, and prints one JSON line per case: {"case", "ok", "detail"}.

    TF_WGPU_LOOP_LIMIT=64 python loop_limit_worker.py [CASE...]

Under a loop limit of 64 the windows here run in passes of rows, and rows wider than the limit in
passes of their taps, as windows of 65,536 taps do under llvmpipe's real limit: small, fast cases
that reach every pass path (and the same paths on a GPU, which has no limit of its own).
"""

import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf.config.set_soft_device_placement(False)
ONLY = set(sys.argv[1:])
rng = np.random.default_rng(64)


def tied(*shape):
    """[*shape, 3] float32: random values with the maximum in the last taps; values from {0..3}
    (ties everywhere, which the first in row-major order wins); ones with a 2 at the first taps and
    the last (a tie across passes)."""
    x = rng.random(shape + (3,)).astype(np.float32)
    last = (slice(None),) + tuple(s - 1 for s in shape[1:])
    x[last + (0,)] = 3.0
    x[..., 1] = rng.integers(0, 4, shape)
    x[..., 2] = 1.0
    x[(slice(None),) + (0,) * (len(shape) - 1) + (2,)] = 2.0
    x[last + (2,)] = 2.0
    return x


def distinct(*shape):
    """float32 values 1e-2 apart (MaxPool3DGrad routes to every element within 1e-5 of a maximum)."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 1e-2).astype(np.float32)


def grad_of(shape):
    return np.random.default_rng(hash(tuple(shape)) % 2**32).standard_normal(shape).astype(np.float32)


def pool_family(x, ksize, strides, padding):
    """MaxPool, AvgPool, MaxPoolWithArgmax (both index conventions) and its gradient, MaxPoolGrad,
    MaxPoolGradGrad and AvgPoolGrad of one window geometry."""
    k, s = [1, *ksize, 1], [1, *strides, 1]

    def run():
        y = tf.nn.max_pool2d(x, ksize, strides, padding)
        grad = grad_of(tuple(y.shape))
        outputs = [y, tf.nn.avg_pool2d(x, ksize, strides, padding)]
        for batch in (False, True):
            pooled, argmax = tf.nn.max_pool_with_argmax(x, ksize, strides, padding, include_batch_in_index=batch)
            outputs += [pooled, argmax, tf.raw_ops.MaxPoolGradWithArgmax(
                input=x, grad=grad, argmax=argmax, ksize=k, strides=s, padding=padding,
                include_batch_in_index=batch)]
        outputs.append(tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=grad, ksize=k, strides=s,
                                              padding=padding))
        outputs.append(tf.raw_ops.MaxPoolGradGrad(orig_input=x, orig_output=y, grad=grad_of(x.shape), ksize=k,
                                                  strides=s, padding=padding))
        outputs.append(tf.raw_ops.AvgPoolGrad(orig_input_shape=x.shape, grad=grad, ksize=k, strides=s,
                                              padding=padding))
        return outputs
    return run


def pool3d_family(x, ksize, strides, padding):
    """MaxPool3D, AvgPool3D, MaxPool3DGrad, MaxPool3DGradGrad and AvgPool3DGrad of one geometry."""
    k, s = [1, *ksize, 1], [1, *strides, 1]

    def run():
        y = tf.nn.max_pool3d(x, ksize, strides, padding)
        grad = grad_of(tuple(y.shape))
        return [y, tf.nn.avg_pool3d(x, ksize, strides, padding),
                tf.raw_ops.MaxPool3DGrad(orig_input=x, orig_output=y, grad=grad, ksize=k, strides=s,
                                         padding=padding),
                tf.raw_ops.MaxPool3DGradGrad(orig_input=x, orig_output=y, grad=grad_of(x.shape), ksize=k,
                                             strides=s, padding=padding),
                tf.raw_ops.AvgPool3DGrad(orig_input_shape=x.shape, grad=grad, ksize=k, strides=s,
                                         padding=padding)]
    return run


CASES = {
    # 10 x 10 windows (111 iterations): passes of 3 rows; 8 x 8 windows covering an element.
    "square-valid": pool_family(tied(2, 12, 12), [10, 10], [1, 1], "VALID"),
    "square-same-strided": pool_family(tied(2, 15, 13), [9, 8], [2, 3], "SAME"),
    "overlapping-covering": pool_family(tied(1, 16, 16), [8, 8], [1, 1], "VALID"),
    # Rows of 60 and 100 taps (past 64): passes of one row's taps at a time.
    "wide-rows": pool_family(tied(1, 3, 120), [2, 60], [1, 1], "VALID"),
    "wide-rows-same": pool_family(tied(2, 2, 101), [2, 100], [1, 7], "SAME"),
    "one-wide-row": pool_family(tied(1, 1, 150), [1, 150], [1, 1], "VALID"),
    # Columns of 40 rows (81 iterations): MaxPool's and AvgPool's separable row stage in passes.
    "deep-column": pool_family(tied(1, 70, 2), [40, 1], [2, 1], "SAME"),
    # Four channels take the vec4 pools.
    "wide-rows-c4": pool_family(np.concatenate([tied(1, 3, 120), tied(1, 3, 120)[..., :1]], -1), [2, 60],
                                [1, 2], "VALID"),
    "deep-column-c4": pool_family(np.concatenate([tied(1, 70, 2), tied(1, 70, 2)[..., :1]], -1), [40, 1],
                                  [1, 1], "SAME"),
    "volume-cube": pool3d_family(distinct(1, 8, 8, 8, 2), [4, 4, 4], [1, 1, 1], "VALID"),
    "volume-same-strided": pool3d_family(distinct(2, 7, 6, 9, 1), [5, 4, 6], [2, 1, 3], "SAME"),
    "volume-wide-rows": pool3d_family(distinct(1, 2, 2, 130, 1), [1, 2, 60], [1, 1, 1], "VALID"),
    "volume-deep": pool3d_family(distinct(1, 45, 2, 2, 2), [40, 1, 1], [1, 1, 1], "SAME"),
}


def run_case(name):
    with tf.device("/GPU:0"):
        got = CASES[name]()
    with tf.device("/CPU:0"):
        want = CASES[name]()
    for index, (g, w) in enumerate(zip(got, want)):
        if not g.device.endswith("GPU:0"):
            return f"output {index} ran on {g.device}"
        g, w = g.numpy(), w.numpy()
        if np.issubdtype(w.dtype, np.integer):
            if not np.array_equal(g, w):
                return f"output {index}: {np.sum(g != w)} of {w.size} indices differ"
        elif not np.allclose(g, w, rtol=1e-5, atol=1e-5):
            return f"output {index}: largest difference {np.abs(g - w).max():.3g}"
    return None


def main():
    for name in CASES:
        if ONLY and name not in ONLY:
            continue
        try:
            failure = run_case(name)
        except Exception as e:  # noqa: BLE001 - every failure is reported as the case's result
            failure = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        print(json.dumps({"case": name, "ok": failure is None, "detail": failure or ""}), flush=True)


if __name__ == "__main__":
    main()
