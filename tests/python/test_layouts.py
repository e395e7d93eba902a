"""Channels-first layouts (issue 16): NCHW (and NCDHW for batch norm) for the convolution, pooling
and batch-norm family, on /GPU:0 with soft placement off, against TF-CPU's channels-last kernels on
the transposed inputs (TF-CPU has no NCHW kernels for most of these ops), transposed back.

Cases cover strides, dilations, SAME/VALID/EXPLICIT padding, odd sizes, batch 1 and empty batches,
and the gradients; a Keras model built with data_format="channels_first" trains like its
channels-last twin on TF-CPU.
"""

import numpy as np
import pytest
import tensorflow as tf

GPU, CPU = "/GPU:0", "/CPU:0"
TOL = 2e-5


def to_last(x):
    x = np.asarray(x)
    return np.moveaxis(x, 1, -1) if x.ndim >= 3 else x


def to_first(x):
    x = np.asarray(x)
    return np.moveaxis(x, -1, 1) if x.ndim >= 3 else x


def list_to_last(values):
    """An NCHW attribute list (strides, ksize) in NHWC order; explicit paddings move as pairs."""
    values = list(values)
    if len(values) == 8:
        pairs = [values[i:i + 2] for i in range(0, 8, 2)]
        return sum([pairs[0], pairs[2], pairs[3], pairs[1]], [])
    return [values[0]] + values[2:] + [values[1]]


def run(op, device, **args):
    with tf.device(device):
        # Arrays as constants of their own dtype (raw ops with a default T would cast them).
        args = {k: tf.constant(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
        out = getattr(tf.raw_ops, op)(**args)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def run_reference(op, device, **args):
    """`run`, but a forward convolution of an empty batch runs on one zero image, its result cut to
    batch 0: TF-CPU's oneDNN convolutions (on by default on CPUs with AVX-512 VNNI or newer) answer
    an empty batch with the input's channel count."""
    batch = args.get("input")
    if op in ("Conv2D", "DepthwiseConv2dNative") and batch is not None and batch.shape[0] == 0:
        one = dict(args, input=np.zeros((1, *batch.shape[1:]), batch.dtype))
        return [out[:0] for out in run(op, device, **one)]
    return run(op, device, **args)


def check(op, first_args, last_args, image_outputs, outputs=None, reference=CPU):
    """Runs `op` on the GPU with channels-first arguments and on `reference` with channels-last
    ones, and compares the outputs (those in `image_outputs` transposed back)."""
    got = run(op, GPU, **first_args)
    want = run_reference(op, reference, **last_args)
    for i in (outputs if outputs is not None else range(len(want))):
        w = to_first(want[i]) if i in image_outputs else want[i]
        assert got[i].shape == w.shape, (op, i, got[i].shape, w.shape)
        np.testing.assert_allclose(got[i], w, rtol=TOL, atol=TOL, err_msg=f"{op} output {i}")
    return got


def data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


CONV_CONFIGS = [
    # (batch, channels, h, w), (kh, kw), strides (H, W), dilations (H, W), padding, explicit (H, W pairs)
    ((2, 3, 7, 5), (3, 3), (1, 1), (1, 1), "SAME", None),
    ((1, 4, 9, 6), (3, 2), (2, 3), (1, 1), "VALID", None),
    ((2, 3, 8, 7), (3, 3), (1, 1), (2, 1), "SAME", None),
    ((2, 2, 6, 5), (2, 3), (2, 1), (1, 1), "EXPLICIT", ((1, 2), (0, 1))),
    ((0, 3, 5, 5), (3, 3), (1, 1), (1, 1), "SAME", None),
    ((3, 1, 5, 4), (1, 1), (1, 1), (1, 1), "VALID", None),
]


def conv_attrs(strides, dilations, padding, explicit):
    attrs = dict(strides=[1, 1, *strides], dilations=[1, 1, *dilations], padding=padding,
                 explicit_paddings=[0, 0, 0, 0, *explicit[0], *explicit[1]] if explicit else [])
    last = dict(attrs, strides=list_to_last(attrs["strides"]), dilations=list_to_last(attrs["dilations"]),
                explicit_paddings=list_to_last(attrs["explicit_paddings"]) if explicit else [])
    return dict(attrs, data_format="NCHW"), dict(last, data_format="NHWC")


@pytest.mark.parametrize("config", CONV_CONFIGS, ids=str)
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_convolution_and_gradients_in_nchw(config, depthwise, rng, strict_placement):
    shape, (kh, kw), strides, dilations, padding, explicit = config
    n, c, h, w = shape
    x = data(rng, *shape)
    f = data(rng, kh, kw, c, 2 if depthwise else 4)
    first, last = conv_attrs(strides, dilations, padding, explicit)
    op = "DepthwiseConv2dNative" if depthwise else "Conv2D"
    if depthwise and strides[0] != strides[1]:
        # TF's depthwise kernels (TF-GPU's too) refuse unequal strides, in either layout.
        with pytest.raises(tf.errors.InvalidArgumentError, match="equal length strides"):
            run(op, GPU, input=x, filter=f, **first)
        return
    if depthwise and dilations != (1, 1):
        # TF-CPU's depthwise kernel refuses dilations; tf.nn.depthwise_conv2d dilates through
        # SpaceToBatchND instead.
        with tf.device(CPU):
            y_last = tf.nn.depthwise_conv2d(to_last(x), f, [1, *strides, 1], padding, dilations=dilations).numpy()
        got = run(op, GPU, input=x, filter=f, **first)[0]
        np.testing.assert_allclose(got, to_first(y_last), rtol=TOL, atol=TOL)
    else:
        y_last = run_reference(op, CPU, input=to_last(x), filter=f, **last)[0]
        check(op, dict(input=x, filter=f, **first), dict(input=to_last(x), filter=f, **last), [0])
    dy = data(rng, *y_last.shape)
    # TF-CPU has no dilated backprops: those compare with our NHWC kernels, and the adjoint
    # identities below tie the gradients to TF-CPU's forward convolution.
    reference = GPU if dilations != (1, 1) else CPU
    dx, = check(op + "BackpropInput",
          dict(input_sizes=np.array(shape, np.int32), filter=f, out_backprop=to_first(dy), **first),
          dict(input_sizes=np.array(to_last(np.zeros(shape)).shape, np.int32), filter=f, out_backprop=dy, **last),
          [0], reference=reference)
    filter_grad = dict(input=x, filter_sizes=np.array(f.shape, np.int32), out_backprop=to_first(dy), **first)
    if n == 0:
        # An empty batch's filter gradient is zero (TF-CPU's depthwise kernel returns uninitialised
        # memory).
        df = run(op + "BackpropFilter", GPU, **filter_grad)[0]
        np.testing.assert_array_equal(df, np.zeros_like(f))
    else:
        df, = check(op + "BackpropFilter", filter_grad,
                    dict(input=to_last(x), filter_sizes=np.array(f.shape, np.int32), out_backprop=dy, **last), [],
                    reference=reference)
    # <conv(x, f), dy> = <x, dx> = <f, df>: both gradients are the convolution's adjoints.
    inner = np.vdot(y_last.astype(np.float64), dy)
    scale = np.abs(y_last).sum() * np.abs(dy).max(initial=0) + 1e-6
    assert abs(np.vdot(x.astype(np.float64), dx) - inner) <= 1e-5 * scale
    assert abs(np.vdot(f.astype(np.float64), df) - inner) <= 1e-5 * scale


POOL_CONFIGS = [
    ((2, 3, 7, 5), (3, 3), (2, 2), "SAME"),
    ((1, 4, 6, 9), (2, 3), (1, 2), "VALID"),
    ((2, 2, 5, 5), (1, 1), (1, 1), "VALID"),
    ((0, 3, 4, 4), (2, 2), (2, 2), "SAME"),
]


@pytest.mark.parametrize("config", POOL_CONFIGS, ids=str)
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pooling_and_gradients_in_nchw(config, kind, rng, strict_placement):
    shape, ksize, strides, padding = config
    x = data(rng, *shape)
    first = dict(ksize=[1, 1, *ksize], strides=[1, 1, *strides], padding=padding, data_format="NCHW")
    last = dict(ksize=list_to_last(first["ksize"]), strides=list_to_last(first["strides"]), padding=padding,
                data_format="NHWC")
    op = kind + "Pool"
    arg = "input" if kind == "Max" else "value"
    y_last = run(op, CPU, **{arg: to_last(x)}, **last)[0]
    check(op, {arg: x, **first}, {arg: to_last(x), **last}, [0])
    dy = data(rng, *y_last.shape)
    if kind == "Max":
        check("MaxPoolGrad", dict(orig_input=x, orig_output=to_first(y_last), grad=to_first(dy), **first),
              dict(orig_input=to_last(x), orig_output=y_last, grad=dy, **last), [0])
    else:
        check("AvgPoolGrad", dict(orig_input_shape=np.array(shape, np.int32), grad=to_first(dy), **first),
              dict(orig_input_shape=np.array(to_last(x).shape, np.int32), grad=dy, **last), [0])


@pytest.mark.parametrize("config", POOL_CONFIGS, ids=str)
def test_max_pool_v2_and_gradient_in_nchw(config, rng, strict_placement):
    """MaxPoolV2 and MaxPoolGradV2 (ksize and strides as tensors) in NCHW against TF-CPU's NHWC
    MaxPool and MaxPoolGrad (TF-CPU's V2 kernels refuse NCHW)."""
    shape, ksize, strides, padding = config
    x = data(rng, *shape)
    lists = dict(ksize=[1, 1, *ksize], strides=[1, 1, *strides])
    first = dict(padding=padding, data_format="NCHW", **{k: np.array(v, np.int32) for k, v in lists.items()})
    last = dict(padding=padding, data_format="NHWC", **{k: list_to_last(v) for k, v in lists.items()})
    y = run("MaxPoolV2", GPU, input=x, **first)[0]
    y_last = run("MaxPool", CPU, input=to_last(x), **last)[0]
    np.testing.assert_array_equal(y, to_first(y_last))
    dy = data(rng, *y_last.shape)
    dx = run("MaxPoolGradV2", GPU, orig_input=x, orig_output=y, grad=to_first(dy), **first)[0]
    dx_last = run("MaxPoolGrad", CPU, orig_input=to_last(x), orig_output=y_last, grad=dy, **last)[0]
    np.testing.assert_allclose(dx, to_first(dx_last), rtol=TOL, atol=TOL)


VOLUME_CONFIGS = [
    # (batch, channels, d, h, w), (kd, kh, kw), strides, dilations, padding
    ((2, 3, 5, 6, 7), (2, 3, 2), (1, 2, 1), (1, 1, 1), "SAME"),
    ((1, 2, 7, 6, 5), (3, 2, 2), (2, 1, 2), (1, 1, 1), "VALID"),
    ((1, 2, 7, 7, 6), (2, 2, 2), (1, 1, 1), (2, 1, 2), "SAME"),
    ((0, 2, 4, 4, 4), (2, 2, 2), (1, 1, 1), (1, 1, 1), "SAME"),
]


@pytest.mark.parametrize("config", VOLUME_CONFIGS, ids=str)
def test_conv3d_and_gradients_in_ncdhw(config, rng, strict_placement):
    """Conv3D and its gradients in NCDHW against the NDHWC op on the transposed tensors (TF-CPU's
    where it has the kernel: it refuses dilated 3-D gradients, which the adjoint identities tie to
    the forward convolution instead)."""
    shape, window, strides, dilations, padding = config
    x = data(rng, *shape)
    f = data(rng, *window, shape[1], 4)
    lists = dict(strides=[1, 1, *strides], dilations=[1, 1, *dilations])
    first = dict(padding=padding, data_format="NCDHW", **lists)
    last = dict(padding=padding, data_format="NDHWC", **{k: list_to_last(v) for k, v in lists.items()})
    dilated = dilations != (1, 1, 1)
    reference = GPU if dilated else CPU
    y_last = run("Conv3D", GPU, input=to_last(x), filter=f, **last)[0]
    if not dilated:
        check("Conv3D", dict(input=x, filter=f, **first), dict(input=to_last(x), filter=f, **last), [0])
    y = run("Conv3D", GPU, input=x, filter=f, **first)[0]
    np.testing.assert_allclose(y, to_first(y_last), rtol=TOL, atol=TOL)
    dy = data(rng, *y_last.shape)
    dx, = check("Conv3DBackpropInputV2",
                dict(input_sizes=np.array(shape, np.int32), filter=f, out_backprop=to_first(dy), **first),
                dict(input_sizes=np.array(to_last(np.zeros(shape)).shape, np.int32), filter=f, out_backprop=dy, **last),
                [0], reference=reference)
    df, = check("Conv3DBackpropFilterV2",
                dict(input=x, filter_sizes=np.array(f.shape, np.int32), out_backprop=to_first(dy), **first),
                dict(input=to_last(x), filter_sizes=np.array(f.shape, np.int32), out_backprop=dy, **last), [],
                reference=reference)
    # <conv(x, f), dy> = <x, dx> = <f, df>.
    inner = np.vdot(y_last.astype(np.float64), dy)
    scale = np.abs(y_last).sum() * np.abs(dy).max(initial=0) + 1e-6
    assert abs(np.vdot(x.astype(np.float64), dx) - inner) <= 1e-5 * scale
    assert abs(np.vdot(f.astype(np.float64), df) - inner) <= 1e-5 * scale


@pytest.mark.parametrize("config", [c for c in VOLUME_CONFIGS if c[3] == (1, 1, 1)], ids=str)
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pool3d_and_gradients_in_ncdhw(config, kind, rng, strict_placement):
    shape, window, strides, _, padding = config
    x = data(rng, *shape)
    lists = dict(ksize=[1, 1, *window], strides=[1, 1, *strides])
    first = dict(padding=padding, data_format="NCDHW", **lists)
    last = dict(padding=padding, data_format="NDHWC", **{k: list_to_last(v) for k, v in lists.items()})
    op = kind + "Pool3D"
    y_last = run(op, CPU, input=to_last(x), **last)[0]
    check(op, dict(input=x, **first), dict(input=to_last(x), **last), [0])
    dy = data(rng, *y_last.shape)
    if kind == "Max":
        check("MaxPool3DGrad", dict(orig_input=x, orig_output=to_first(y_last), grad=to_first(dy), **first),
              dict(orig_input=to_last(x), orig_output=y_last, grad=dy, **last), [0])
        if x.size:  # (TF-CPU refuses empty tensors here)
            ddx = data(rng, *shape)
            check("MaxPool3DGradGrad", dict(orig_input=x, orig_output=to_first(y_last), grad=ddx, **first),
                  dict(orig_input=to_last(x), orig_output=y_last, grad=to_last(ddx), **last), [0])
    else:
        check("AvgPool3DGrad", dict(orig_input_shape=np.array(shape, np.int32), grad=to_first(dy), **first),
              dict(orig_input_shape=np.array(to_last(x).shape, np.int32), grad=dy, **last), [0])


@pytest.mark.parametrize("op", ["SpaceToDepth", "DepthToSpace"])
@pytest.mark.parametrize("block", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_space_depth_in_nchw(op, block, dtype, rng, strict_placement):
    """TF-GPU's NCHW SpaceToDepth/DepthToSpace (TF-CPU serves NHWC only): channels ordered (row in
    block, column in block, channel) in both layouts."""
    shape = (2, 3, 2 * block, 3 * block) if op == "SpaceToDepth" else (2, 2 * block * block, 3, 2)
    x = (data(rng, *shape) * 50).astype(dtype)
    check(op, dict(input=x, block_size=block, data_format="NCHW"),
          dict(input=to_last(x), block_size=block, data_format="NHWC"), [0])


@pytest.mark.parametrize("op", ["SpaceToDepth", "DepthToSpace"])
def test_space_depth_refuses_what_tf_refuses(op, strict_placement):
    x = np.zeros((1, 4, 6, 8), np.float32)
    # TF's op definition refuses a block of 1 before the kernel does.
    for kwargs, message in [(dict(block_size=1), "Block size should be > 1|at least minimum 2"),
                            (dict(block_size=5), "divisible by"),
                            (dict(block_size=2, data_format="NCHW_VECT_C"), "qint8 should be used with data_format NCHW_VECT_C")]:
        with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match=message):
            run(op, GPU, input=x, **{"data_format": "NHWC", **kwargs})
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="rank should be:? 4"):
        run(op, GPU, input=np.zeros((4, 6, 8), np.float32), block_size=2)


def test_max_pool_explicit_padding_in_nchw(rng, strict_placement):
    x = data(rng, 2, 3, 6, 5)
    first = dict(ksize=[1, 1, 3, 3], strides=[1, 1, 2, 1], padding="EXPLICIT",
                 explicit_paddings=[0, 0, 0, 0, 1, 2, 2, 1], data_format="NCHW")
    last = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 1, 1], padding="EXPLICIT",
                explicit_paddings=[0, 0, 1, 2, 2, 1, 0, 0], data_format="NHWC")
    check("MaxPool", dict(input=x, **first), dict(input=to_last(x), **last), [0])


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 3, 3, 2), (0, 3, 4, 4)], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("generation", ["V3", "V2", ""], ids=["V3", "V2", "V1"])
def test_fused_batch_norm_and_gradient_channels_first(shape, training, generation, rng, strict_placement):
    c = shape[1]
    fmt_first, fmt_last = ("NCDHW", "NDHWC") if len(shape) == 5 else ("NCHW", "NHWC")
    x = data(rng, *shape)
    scale, offset = data(rng, c) + 2, data(rng, c)
    mean, var = data(rng, c), np.abs(data(rng, c)) + 0.5
    common = dict(scale=scale, offset=offset, mean=mean, variance=var, epsilon=1e-3, is_training=training)
    # Outputs 0-2 and 3-4 (saved statistics); the reserve space is opaque.
    if generation != "V3" and len(shape) == 5:
        # FusedBatchNorm and V2 define 4-D layouts only.
        with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
            run("FusedBatchNorm" + generation, GPU, x=x, data_format=fmt_first, **common)
        return
    check("FusedBatchNorm" + generation, dict(x=x, data_format=fmt_first, **common),
          dict(x=to_last(x), data_format=fmt_last, **common), [0], outputs=[0, 1, 2] if shape[0] else [0])
    dy = data(rng, *to_last(x).shape)
    with tf.device(CPU):
        saved = tf.raw_ops.FusedBatchNormV3(x=to_last(x), data_format=fmt_last, **common)
    # In inference the gradient takes the population statistics, as TF's own gradient passes them:
    # TF-CPU's inference reserve spaces are uninitialized memory (values up to 1e28 seen), which
    # made this case flaky.
    reserve = (saved[3].numpy(), saved[4].numpy()) if training else (mean, var)
    grad = dict(scale=scale, reserve_space_1=reserve[0], reserve_space_2=reserve[1],
                reserve_space_3=saved[5].numpy(), epsilon=1e-3, is_training=training)
    if generation != "V3":
        del grad["reserve_space_3"]
    check("FusedBatchNormGrad" + generation, dict(y_backprop=to_first(dy), x=x, data_format=fmt_first, **grad),
          dict(y_backprop=dy, x=to_last(x), data_format=fmt_last, **grad), [0], outputs=[0, 1, 2])


def test_keras_channels_first_model_trains_like_channels_last_on_cpu(rng):
    """A small CNN built with data_format="channels_first" (default arguments otherwise) trains on
    /GPU:0 like the same model in channels_last on TF-CPU."""
    import keras
    from keras import layers

    def build(fmt):
        keras.utils.set_random_seed(3)
        axis = 1 if fmt == "channels_first" else -1
        shape = (2, 12, 10) if fmt == "channels_first" else (12, 10, 2)
        inputs = keras.Input(shape)
        x = layers.Conv2D(6, 3, data_format=fmt, activation="relu")(inputs)
        x = layers.BatchNormalization(axis=axis)(x)
        x = layers.MaxPooling2D(data_format=fmt)(x)
        x = layers.DepthwiseConv2D(3, padding="same", data_format=fmt)(x)
        x = layers.AveragePooling2D(2, data_format=fmt)(x)
        x = layers.GlobalAveragePooling2D(data_format=fmt)(x)
        model = keras.Model(inputs, layers.Dense(3)(x))
        model.compile(optimizer=keras.optimizers.SGD(0.05),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    x = data(rng, 16, 2, 12, 10)
    y = rng.integers(0, 3, 16).astype(np.int32)
    with tf.device(GPU):
        first = build("channels_first")
        got = [float(first.train_on_batch(x, y)) for _ in range(5)]
        predicted = first.predict_on_batch(x)
    with tf.device(CPU):
        last = build("channels_last")
        want = [float(last.train_on_batch(to_last(x), y)) for _ in range(5)]
        expected = last.predict_on_batch(to_last(x))
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(predicted, expected, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("op", ["Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "FusedBatchNormV3"])
def test_float16_in_nchw(op, rng, strict_placement):
    """The float16 kernels (float32 math, one rounding) serve NCHW too; TF-CPU's float16 kernels
    round between steps, so the bound is float16's, relative to the output's scale (sums cancel)."""
    x = data(rng, 2, 3, 7, 6).astype(np.float16)
    if op in ("Conv2D", "DepthwiseConv2dNative"):
        f = data(rng, 3, 3, 3, 2).astype(np.float16)
        args = dict(filter=f, strides=[1, 1, 2, 1], padding="SAME", dilations=[1, 1, 1, 1])
        first, last = dict(input=x, data_format="NCHW", **args), dict(input=to_last(x), data_format="NHWC", **args)
        last["strides"] = [1, 2, 1, 1]
        if op == "DepthwiseConv2dNative":
            first["strides"], last["strides"] = [1, 1, 1, 1], [1, 1, 1, 1]
    elif op.endswith("Pool"):
        arg = "input" if op == "MaxPool" else "value"
        first = {arg: x, "ksize": [1, 1, 2, 3], "strides": [1, 1, 2, 2], "padding": "SAME", "data_format": "NCHW"}
        last = {arg: to_last(x), "ksize": [1, 2, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME",
                "data_format": "NHWC"}
    else:
        stats = dict(scale=np.ones(3, np.float32), offset=np.zeros(3, np.float32), mean=np.zeros(3, np.float32),
                     variance=np.ones(3, np.float32), is_training=True)
        first, last = dict(x=x, data_format="NCHW", **stats), dict(x=to_last(x), data_format="NHWC", **stats)
    got = run(op, GPU, **first)[0]
    want = run(op, CPU, **last)[0]
    assert got.dtype == np.float16
    want = to_first(want).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=1e-3 * np.abs(want).max())
