"""Convolutions and their gradients over a sweep of geometries we did not pick by hand (issue 18): seeded random
kernel sizes, strides, dilations, SAME/VALID/EXPLICIT padding (one-sided and wider than the window),
odd and vec4-friendly channel counts, and sizes from a few pixels to ones that take the implicit
GEMM. The reference is the definition itself, summed in float64 with NumPy, so it covers the
dilated and strided cases TF-CPU's own kernels refuse.
"""

import numpy as np
import pytest
import tensorflow as tf

GPU = "/GPU:0"


def window(size, k, stride, dilation, padding, explicit):
    """TF's output size and leading padding of one spatial dimension."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span + stride) // stride, 0
    if padding == "SAME":
        out = (size + stride - 1) // stride
        return out, max((out - 1) * stride + span - size, 0) // 2
    before, after = explicit
    return (size + before + after - span + stride) // stride, before


def geometry(rng, big):
    """A random convolution whose output is not empty."""
    while True:
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        sh, sw = (int(v) for v in rng.integers(1, 4, 2))
        dh, dw = (int(v) for v in rng.integers(1, 3, 2)) if rng.random() < 0.3 else (1, 1)
        padding = str(rng.choice(["SAME", "VALID", "EXPLICIT"]))
        explicit = [(int(rng.integers(0, 5)), int(rng.integers(0, 5))) for _ in range(2)]
        h, w = (int(v) for v in rng.integers(12, 40, 2)) if big else (int(v) for v in rng.integers(1, 12, 2))
        batch = int(rng.integers(1, 4))
        c, oc = ((int(rng.choice([4, 8, 16, 32])) for _ in range(2)) if big or rng.random() < 0.5
                 else (int(v) for v in rng.integers(1, 7, 2)))
        oh, top = window(h, kh, sh, dh, padding, explicit[0])
        ow, left = window(w, kw, sw, dw, padding, explicit[1])
        if oh > 0 and ow > 0:
            return dict(batch=batch, h=h, w=w, c=c, oc=oc, kh=kh, kw=kw, strides=(sh, sw), dilations=(dh, dw),
                        padding=padding, explicit=explicit, oh=oh, ow=ow, pads=(top, left))


def reference(g, x, f, dy):
    """(y, dx, df) of the convolution `g` by its definition, in float64."""
    (sh, sw), (dh, dw), (top, left) = g["strides"], g["dilations"], g["pads"]
    x, f, dy = (a.astype(np.float64) for a in (x, f, dy))
    rows = top + g["h"] + g["kh"] * dh + g["oh"] * sh
    cols = left + g["w"] + g["kw"] * dw + g["ow"] * sw
    padded_dx = np.zeros((g["batch"], rows, cols, g["c"]))
    padded_x = np.zeros_like(padded_dx)
    padded_x[:, top:top + g["h"], left:left + g["w"]] = x
    df = np.zeros_like(f)
    y = np.zeros_like(dy)
    for ky in range(g["kh"]):
        for kx in range(g["kw"]):
            ys = slice(ky * dh, ky * dh + (g["oh"] - 1) * sh + 1, sh)
            xs = slice(kx * dw, kx * dw + (g["ow"] - 1) * sw + 1, sw)
            padded_dx[:, ys, xs] += np.einsum("nhwo,io->nhwi", dy, f[ky, kx])
            df[ky, kx] = np.einsum("nhwi,nhwo->io", padded_x[:, ys, xs], dy)
            y += np.einsum("nhwi,io->nhwo", padded_x[:, ys, xs], f[ky, kx])
    return y, padded_dx[:, top:top + g["h"], left:left + g["w"]], df


def attrs(g):
    explicit = [0, 0, *g["explicit"][0], *g["explicit"][1], 0, 0] if g["padding"] == "EXPLICIT" else []
    return dict(strides=[1, *g["strides"], 1], dilations=[1, *g["dilations"], 1], padding=g["padding"],
                explicit_paddings=explicit)


def grouped_reference(g, groups, x, f, dy):
    """`reference` of a grouped convolution (filter [kh, kw, c / groups, oc]): group j's output
    channels read its block of input channels."""
    gc, goc = g["c"] // groups, g["oc"] // groups
    parts = [reference(dict(g, c=gc, oc=goc), x[..., j * gc:(j + 1) * gc], f[..., j * goc:(j + 1) * goc],
                       dy[..., j * goc:(j + 1) * goc]) for j in range(groups)]
    return tuple(np.concatenate(p, axis=-1) for p in zip(*parts))


def check(g, rng, dtype=np.float32, groups=1):
    x = rng.standard_normal((g["batch"], g["h"], g["w"], g["c"])).astype(dtype)
    f = rng.standard_normal((g["kh"], g["kw"], g["c"] // groups, g["oc"])).astype(dtype)
    dy = rng.standard_normal((g["batch"], g["oh"], g["ow"], g["oc"])).astype(dtype)
    want_y, want_dx, want_df = grouped_reference(g, groups, x, f, dy)
    with tf.device(GPU):
        y = tf.raw_ops.Conv2D(input=tf.constant(x), filter=tf.constant(f), **attrs(g)).numpy()
        dx = tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.constant(x.shape, tf.int32), filter=tf.constant(f),
                                            out_backprop=tf.constant(dy), **attrs(g)).numpy()
        df = tf.raw_ops.Conv2DBackpropFilter(input=tf.constant(x), filter_sizes=tf.constant(f.shape, tf.int32),
                                             out_backprop=tf.constant(dy), **attrs(g)).numpy()
    assert y.dtype == dx.dtype == df.dtype == dtype
    # Sums of up to kh * kw * oc (or batch * oh * ow) unit-variance products, rounded in float32 (or
    # float64: 2^-29 of float32's relative error).
    eps = 2e-6 if dtype == np.float32 else 4e-15
    for name, got, want, terms in (("output", y, want_y, g["kh"] * g["kw"] * g["c"]),
                                   ("input", dx, want_dx, g["kh"] * g["kw"] * g["oc"]),
                                   ("filter", df, want_df, g["batch"] * g["oh"] * g["ow"])):
        tol = eps * np.sqrt(terms) * 8
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{name} gradient of {g}")


def depthwise_reference(g, x, f, dy):
    """(y, dx, df) of a depthwise convolution with filter [kh, kw, c, multiplier], in float64."""
    (sh, sw), (dh, dw), (top, left) = g["strides"], g["dilations"], g["pads"]
    x, f, dy = (a.astype(np.float64) for a in (x, f, dy))
    mult = f.shape[3]
    dy = dy.reshape(dy.shape[:3] + (g["c"], mult))
    rows = top + g["h"] + g["kh"] * dh + g["oh"] * sh
    cols = left + g["w"] + g["kw"] * dw + g["ow"] * sw
    padded_dx = np.zeros((g["batch"], rows, cols, g["c"]))
    padded_x = np.zeros_like(padded_dx)
    padded_x[:, top:top + g["h"], left:left + g["w"]] = x
    df, y = np.zeros_like(f), np.zeros_like(dy)
    for ky in range(g["kh"]):
        for kx in range(g["kw"]):
            ys = slice(ky * dh, ky * dh + (g["oh"] - 1) * sh + 1, sh)
            xs = slice(kx * dw, kx * dw + (g["ow"] - 1) * sw + 1, sw)
            padded_dx[:, ys, xs] += np.einsum("nhwcm,cm->nhwc", dy, f[ky, kx])
            df[ky, kx] = np.einsum("nhwc,nhwcm->cm", padded_x[:, ys, xs], dy)
            y += np.einsum("nhwc,cm->nhwcm", padded_x[:, ys, xs], f[ky, kx])
    flat = y.shape[:3] + (g["c"] * mult,)
    return y.reshape(flat), padded_dx[:, top:top + g["h"], left:left + g["w"]], df


def fixed(batch, h, w, c, oc, k, stride, padding, dilation=1, explicit=((0, 0), (0, 0))):
    oh, top = window(h, k, stride, dilation, padding, explicit[0])
    ow, left = window(w, k, stride, dilation, padding, explicit[1])
    return dict(batch=batch, h=h, w=w, c=c, oc=oc, kh=k, kw=k, strides=(stride, stride),
                dilations=(dilation, dilation), padding=padding, explicit=list(explicit), oh=oh, ow=ow,
                pads=(top, left))


# Layer shapes that take the tiled products, the columns path and their chunks: ResNet's stem (3
# channels, 7x7 stride 2), 3x3 at strides 1 and 2, a 1x1 stride-2 shortcut, dilation, stride 3
# with one-sided explicit padding, and channels that are not a multiple of 4; 1x1 at stride 1,
# whose gradients are matmuls (MobileNetV2's 24 -> 144 expansion and odd channels).
LAYERS = {
    "1x1-expand": fixed(2, 20, 20, 24, 144, 1, 1, "VALID"),
    "1x1-odd": fixed(3, 9, 11, 5, 7, 1, 1, "SAME"),
    "stem": fixed(2, 30, 30, 3, 32, 7, 2, "SAME"),
    # conv2d_grad_filter_rows sums 4, 2 or 1 output channel quads per invocation (the stem: 4).
    "rgb-oc8": fixed(2, 14, 13, 3, 8, 3, 1, "SAME"),
    "gray-oc4": fixed(2, 12, 12, 1, 4, 5, 1, "VALID"),
    # The same past 64K vec4s of dy, where the CPU profile reads x and dy from textures.
    "stem-texels": fixed(1, 112, 112, 3, 64, 7, 2, "SAME"),
    "rgb-texels": fixed(4, 64, 64, 3, 32, 3, 1, "SAME"),
    "gray-texels-valid": fixed(4, 70, 66, 1, 16, 5, 1, "VALID"),
    "3x3": fixed(2, 24, 24, 32, 64, 3, 1, "SAME"),
    "3x3-stride2": fixed(2, 24, 24, 32, 64, 3, 2, "SAME"),
    "5x5-valid-stride2": fixed(3, 17, 19, 16, 48, 5, 2, "VALID"),
    "1x1-stride2": fixed(2, 20, 20, 64, 32, 1, 2, "VALID"),
    "dilated": fixed(2, 16, 16, 32, 32, 3, 1, "SAME", dilation=2),
    "stride3-explicit": fixed(2, 15, 15, 12, 40, 3, 3, "EXPLICIT", explicit=((2, 0), (1, 3))),
    "odd-channels": fixed(2, 18, 18, 33, 35, 3, 2, "SAME"),
}

CASES = [(seed, big) for seed in range(40) for big in (False, True)]


@pytest.mark.parametrize("seed,big", CASES, ids=[f"{'big' if b else 'small'}-{s}" for s, b in CASES])
def test_conv2d_and_gradients_match_their_definition(seed, big):
    rng = np.random.default_rng(1000 + seed)
    check(geometry(rng, big), rng)


def grouped(rng, big):
    """A random convolution of 2 or 3 groups (TF's Conv2D with a filter of c / groups input channels)."""
    groups = int(rng.choice([2, 3]))
    g = geometry(rng, big)
    return dict(g, c=groups * int(rng.integers(1, 5)), oc=groups * int(rng.integers(1, 5))), groups


@pytest.mark.parametrize("seed", range(12))
def test_grouped_conv2d_and_gradients_match_their_definition(seed):
    """Grouped convolutions (the direct kernels on the CPU profile, a product per group on the GPU
    profile's implicit GEMM) and their gradients."""
    rng = np.random.default_rng(3000 + seed)
    g, groups = grouped(rng, seed % 2 == 1)
    check(g, rng, groups=groups)


def serves_float64_convolutions():
    from conftest import registered_kernels
    return any(op == "Conv2D" and attrs.get("T") == "float64" for op, attrs in registered_kernels())


FLOAT64_CASES = [(seed, big, grouped_) for seed in range(12) for big in (False, True) for grouped_ in (False, True)]


@pytest.mark.skipif(not serves_float64_convolutions(), reason="float64 convolutions need SHADER_F64 (Vulkan)")
@pytest.mark.parametrize("seed,big,grouped_", FLOAT64_CASES,
                         ids=[f"{'big' if b else 'small'}-{'grouped' if gr else 'dense'}-{s}" for s, b, gr in FLOAT64_CASES])
def test_float64_conv2d_and_gradients_match_their_definition(seed, big, grouped_):
    """float64 Conv2D and both gradients compute in f64 (the implicit GEMM with f64 sums), to about
    float64's rounding of the definition, grouped or not."""
    rng = np.random.default_rng(2000 + seed)
    if grouped_:
        g, groups = grouped(rng, big)
        check(g, rng, np.float64, groups)
    else:
        check(geometry(rng, big), rng, np.float64)


@pytest.mark.parametrize("seed,multiplier", [(s, m) for s in range(20) for m in (1, 2)])
def test_depthwise_and_gradients_match_their_definition(seed, multiplier):
    rng = np.random.default_rng(2000 + seed)
    r = geometry(rng, big=seed % 2 == 1)
    # TF's depthwise kernels take equal strides and square windows here.
    g = fixed(r["batch"], r["h"], r["w"], r["c"], r["c"] * multiplier, r["kh"], r["strides"][0], r["padding"],
              explicit=r["explicit"])
    if g["oh"] <= 0 or g["ow"] <= 0:
        pytest.skip("empty output")
    x = rng.standard_normal((g["batch"], g["h"], g["w"], g["c"])).astype(np.float32)
    f = rng.standard_normal((g["kh"], g["kw"], g["c"], multiplier)).astype(np.float32)
    dy = rng.standard_normal((g["batch"], g["oh"], g["ow"], g["c"] * multiplier)).astype(np.float32)
    want_y, want_dx, want_df = depthwise_reference(g, x, f, dy)
    with tf.device(GPU):
        y = tf.raw_ops.DepthwiseConv2dNative(input=tf.constant(x), filter=tf.constant(f), **attrs(g)).numpy()
        dx = tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
            input_sizes=tf.constant(x.shape, tf.int32), filter=tf.constant(f), out_backprop=tf.constant(dy),
            **attrs(g)).numpy()
        df = tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
            input=tf.constant(x), filter_sizes=tf.constant(f.shape, tf.int32), out_backprop=tf.constant(dy),
            **attrs(g)).numpy()
    for name, got, want, terms in (("output", y, want_y, g["kh"] * g["kw"]), ("input", dx, want_dx, g["kh"] * g["kw"]),
                                   ("filter", df, want_df, g["batch"] * g["oh"] * g["ow"])):
        tol = 2e-6 * np.sqrt(terms) * 8
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"depthwise {name} gradient of {g}")


@pytest.mark.parametrize("name", LAYERS)
def test_layer_shapes(name):
    check(LAYERS[name], np.random.default_rng(7))


CONFIGURATIONS = {
    # Bindings capped at 256 KiB: one image of each layer fits, two do not. The batch splits, the
    # filter gradient's tiled product runs a tile of pixels per chunk, added up, and paths whose
    # temporaries do not fit give way to others.
    "small-bindings": {"TF_WGPU_MAX_BINDING_BYTES": str(256 << 10)},
    # The direct matmul: the filter gradient through im2col rows and a matmul.
    "direct-matmul": {"TF_WGPU_MATMUL": "direct"},
    # The GPU kernel profile (what GPUs run): the implicit GEMMs, and with small bindings the
    # splits of the batch and the chunked routes where one image exceeds a binding.
    "gpu-profile": {"TF_WGPU_KERNELS": "gpu"},
    "gpu-profile-small-bindings": {"TF_WGPU_KERNELS": "gpu", "TF_WGPU_MAX_BINDING_BYTES": str(256 << 10)},
}


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_layer_shapes_under(configuration):
    import os
    import subprocess
    import sys
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **CONFIGURATIONS[configuration])
    run = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "all layers match" in run.stdout


if __name__ == "__main__":
    # As conftest.py does for the suite: an op without a WGPU kernel fails instead of running on the CPU.
    tf.config.set_soft_device_placement(False)
    for name, g in LAYERS.items():
        check(g, np.random.default_rng(7))
    print("all layers match")
