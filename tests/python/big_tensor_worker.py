"""Runs every op family on tensors larger than one storage binding, on /GPU:0 (soft placement off)
and on TF-CPU, and prints one JSON line per case: {"case", "ok", "detail"}.

    python big_tensor_worker.py ELEMENTS [CASE...]

The big tensors hold about ELEMENTS float32 values: the parent picks 1.5x the binding limit it gives
the plugin (TF_WGPU_MAX_BINDING_BYTES for the fast run, lavapipe's real 128 MiB for the heavy one).
"""

import functools
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf.config.set_soft_device_placement(False)
ELEMENTS = int(sys.argv[1])
ONLY = set(sys.argv[2:])
rng = np.random.default_rng(11)


def normal(*shape):
    return tf.constant(rng.standard_normal(shape).astype(np.float32))


def side(n):
    """An image side such that [8, side, side, 8] holds about n elements (a batch of 8: each image's
    outputs fit a binding)."""
    return max(4, int((n / 64) ** 0.5))


E = ELEMENTS
S = side(E)
ROW = 256
ROWS = E // ROW
x2 = normal(ROWS, ROW)
x3 = normal(4, ROWS // 4, ROW)
time_lengths = tf.constant(np.random.default_rng(12).integers(0, 5, ROWS // 4), tf.int64)
img = normal(8, S, S, 8)
img_nchw = tf.transpose(img, [0, 3, 1, 2])
filt = normal(3, 3, 8, 4)
dw = normal(3, 3, 8, 2)
table = normal(ROWS, ROW)
ids = tf.constant(rng.integers(0, ROWS, 300), tf.int32)
labels = tf.constant(rng.integers(0, ROW, ROWS), tf.int32)
bias = normal(ROW)
weights = normal(ROW, 8)
batch_weights = normal(4, ROW, 8)


# Scatters into tables larger than a binding (windows of rows), from updates and indices larger
# than one (ranges of tuples), and of rows larger than one (ranges of columns). The tables of other
# dtypes are made on first use (the real-size run runs few of these cases).
unique_ids = tf.constant(rng.permutation(ROWS)[: max(1, ROWS // 2)], tf.int32)
updates = normal(300, ROW)
unique_updates = normal(ROWS // 2, ROW)
all_rows = tf.constant(rng.integers(0, 8, ROWS), tf.int32)
sorted_rows = tf.constant(np.sort(all_rows.numpy()))
element_ids = tf.constant(np.stack([ids.numpy(), ids.numpy() % ROW], 1))
ids4 = tf.constant(rng.integers(0, 4 * ROWS, 300), tf.int32)
unique_ids4 = tf.constant(rng.permutation(4 * ROWS)[:300], tf.int32)
ids2 = tf.constant(rng.integers(0, 2 * ROWS, 300), tf.int64)
flat = tf.reshape(x2, [1, -1])
bins = tf.constant(rng.integers(0, ROW, (ROWS, 64)), tf.int32)


@functools.cache
def big_bools():
    """[4 * ROWS, ROW] bools (4x the big tensors' elements, 1.5x the binding in bytes), mostly true."""
    return tf.concat([x2, x2 * 0.5, x2 * 0.7, x2 * 0.9], 0) > -3.0


@functools.cache
def one_image():
    """One NHWC image of 8 channels past the binding (its batch cannot split)."""
    side_ = int((E / 8) ** 0.5)
    return normal(1, side_, side_, 8)


@functools.cache
def planes():
    """Two planes, each 0.8x the elements of the big tensors (about 1.2x the binding)."""
    side_ = int((0.8 * E) ** 0.5)
    return normal(2, side_, side_)


@functools.cache
def table_of(dtype):
    """`table` in `dtype` (int8: four times the rows, float16: twice, so as to pass the limit)."""
    if dtype == tf.int8:
        return tf.constant(np.random.default_rng(12).integers(-128, 128, (4 * ROWS, ROW), np.int8))
    if dtype == tf.float16:
        return tf.cast(tf.concat([table, table[::-1] * 0.5], 0), tf.float16)
    return tf.cast(table * 1000, dtype) if dtype.is_integer else tf.cast(table, dtype)


def half_row():
    """One float16 row past the binding limit, of an odd number of elements."""
    return tf.reshape(table_of(tf.float16), [1, -1])[:, 1:]


def variable_update(method, values, index):
    v = tf.Variable(table)
    getattr(v, method)(tf.IndexedSlices(values, index))
    return v.read_value()


def embedding_sgd_step():
    import keras
    from keras import layers

    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((6,), dtype="int32"), layers.Embedding(ROWS, ROW),
                              layers.GlobalAveragePooling1D(), layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch = tf.reshape(ids[:48], [8, 6])
    for _ in range(2):
        model.train_on_batch(batch, tf.constant([0, 1, 1, 0, 1, 0, 0, 1]))
    return model.layers[0].embeddings.value


# Ops split along their leading dimension (batch, rows, matrices) when the whole is past the
# binding, and scans and products split within one unit.
cols = tf.constant(rng.integers(0, ROW, 300), tf.int32)
row_cols = tf.constant(rng.integers(0, ROW, (ROWS, 300)), tf.int32)
lengths = tf.constant(rng.integers(0, ROW + 1, ROWS), tf.int64)
matrices = tf.reshape(x2, [ROWS // 8, 8, ROW])
D = max(3, round((ELEMENTS / 32) ** (1 / 3)))
vol = normal(8, D, D, D, 4)
filt3 = normal(3, 3, 3, 4, 2)
diagonals = normal(max(2, 2 * ELEMENTS // 4096), 64)
# A square matrix of about ELEMENTS elements, one matrix past a binding.
SIDE = int(ELEMENTS ** 0.5)
vector = tf.reshape(x2, [-1])
square = tf.reshape(vector[:SIDE * SIDE], [SIDE, SIDE])


def vol_dy():
    with tf.device("/CPU:0"):
        return normal(*tf.nn.conv3d(vol, filt3, [1] * 5, "SAME").shape)


def top_k_rows():
    values, indices = tf.math.top_k(x2, 5)
    return tf.concat([values, tf.cast(indices, tf.float32)], 1)


def top_k_long_row(k, rounded):
    """TopKV2 of one row longer than a sort fits a binding (pieces, then the top of their tops);
    rounded, many values tie and the indices must come lowest first, as TF-CPU's."""
    row = tf.reshape(x2, [-1])
    row = tf.round(row * 2.0) if rounded else row
    values, indices = tf.math.top_k(row, k)
    return tf.stack([values, tf.cast(indices, tf.float32)])


def signed_zeros(x):
    """x with its small values replaced by -0.0 (negative ones) and +0.0 (the others)."""
    zeros = tf.where(x < 0, tf.constant(-0.0, x.dtype), tf.constant(0.0, x.dtype))
    return tf.where(tf.abs(x) < 0.05, zeros, x)


def argmax_pool(include_batch):
    return tf.nn.max_pool_with_argmax(img, 2, 2, "VALID", include_batch_in_index=include_batch)[1]


def argmax_pool_grad(include_batch):
    argmax = argmax_pool(include_batch)
    return tf.raw_ops.MaxPoolGradWithArgmax(input=img, grad=PDY, argmax=argmax, ksize=[1, 2, 2, 1],
                                            strides=[1, 2, 2, 1], padding="VALID",
                                            include_batch_in_index=include_batch)


@functools.cache
def gradient_of_shape(*shape):
    """A fixed gradient (the same on both devices) for an output of `shape`."""
    with tf.device("/CPU:0"):
        return normal(*shape)


@functools.cache
def special_floats():
    """x2's values rounded to halves, flat, with signed zeros, subnormals and NaNs among them."""
    row = np.round(x2.numpy().reshape(-1) * 2) / 2
    row[::7] = -0.0
    row[3::11] = np.float32(1e-40)
    row[5::13] = np.nan
    return tf.constant(row.astype(np.float32))


def tall(t):
    """The 8 images of `t` stacked into one tall image past the binding (its batch cannot split)."""
    return tf.reshape(t, [1, -1, t.shape[2], t.shape[3]])


def pool_grad_one_image(max_pool, ksize, strides, padding):
    """MaxPoolGrad or AvgPoolGrad of one image past the binding (bands of its rows)."""
    x = tall(img)
    pooled = tf.nn.max_pool2d(x, ksize, strides, padding)
    dy = gradient_of_shape(*pooled.shape)
    k, s = [1, *ksize, 1], [1, *strides, 1]
    if max_pool:
        return tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=pooled, grad=dy, ksize=k, strides=s, padding=padding)
    return tf.raw_ops.AvgPoolGrad(orig_input_shape=x.shape, grad=dy, ksize=k, strides=s, padding=padding)


def max_pool_grad_grad_one_image():
    x = tall(img)
    pooled = tf.nn.max_pool2d(x, 3, 2, "SAME")
    return tf.raw_ops.MaxPoolGradGrad(orig_input=x, orig_output=pooled, grad=x * 0.5 + 1, ksize=[1, 3, 3, 1],
                                      strides=[1, 2, 2, 1], padding="SAME")


def resize_grad_one_image(method, size, image=None, **flags):
    """The gradient of a resize of one image past the binding into `size` (bands of its rows)."""
    x = tall(img) if image is None else image
    dy = gradient_of_shape(1, *size, 8)
    if method == "bilinear":
        return tf.raw_ops.ResizeBilinearGrad(grads=dy, original_image=x, **flags)
    if method == "bicubic":
        return tf.raw_ops.ResizeBicubicGrad(grads=dy, original_image=x, **flags)
    return tf.raw_ops.ResizeNearestNeighborGrad(grads=dy, size=x.shape[1:3], **flags)


def wide(t, rows):
    """The 8 images of `t` laid side by side as one image of `rows` rows, each row (with the rows a
    3-row window reads) past the binding: bands of rows cannot serve it, tiles of columns do."""
    return tf.reshape(t, [1, rows, -1, t.shape[3]])


def conv_grad_wide(op, rows, filter_, strides, padding, **kw):
    """A convolution gradient (`op`: Conv2DBackpropInput/Filter, DepthwiseConv2dNativeBackprop*) of
    the wide image of `rows` rows (tiles of columns)."""
    x = wide(img, rows)
    forward = tf.nn.depthwise_conv2d if op.startswith("Depthwise") else tf.nn.conv2d
    with tf.device("/CPU:0"):  # only the gradient runs on the device under test
        dy = gradient_of_shape(*forward(x, filter_, strides, padding, **kw).shape)
    args = dict(strides=strides, padding=padding, out_backprop=dy, **kw)
    if op.endswith("Filter"):
        return getattr(tf.raw_ops, op)(input=x, filter_sizes=filter_.shape, **args)
    return getattr(tf.raw_ops, op)(input_sizes=x.shape, filter=filter_, **args)


def pooled_on_cpu(x, ksize, strides, padding):
    """A max pool computed on TF-CPU, the forward input of a gradient under test."""
    with tf.device("/CPU:0"):
        return tf.nn.max_pool2d(x, ksize, strides, padding)


def pool_grad_wide(max_pool, rows, ksize, strides, padding):
    """MaxPoolGrad or AvgPoolGrad of the wide image of `rows` rows (tiles of columns)."""
    x = wide(img, rows)
    pooled = pooled_on_cpu(x, ksize, strides, padding)
    dy = gradient_of_shape(*pooled.shape)
    k, s = [1, *ksize, 1], [1, *strides, 1]
    if max_pool:
        return tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=pooled, grad=dy, ksize=k, strides=s, padding=padding)
    return tf.raw_ops.AvgPoolGrad(orig_input_shape=x.shape, grad=dy, ksize=k, strides=s, padding=padding)


def deep(t):
    """The 8 volumes of `t` stacked into one deep volume past the binding (its batch cannot split)."""
    return tf.reshape(t, [1, -1, *t.shape[2:]])


def shallow(t):
    """The 8 volumes of `t` as one volume of 4 planes, each (with the planes a 3-plane window reads)
    past the binding: bands of planes cannot serve it, tiles of rows do."""
    return tf.reshape(t, [1, 4, 2 * t.shape[1], -1, t.shape[4]])


def many_channels(*spatial):
    """x2's values as one image (or volume) of a few pixels and millions of channels: one window's
    input passes the binding; each channel runs as an image of its own."""
    return tf.reshape(x2, [1, *spatial, -1])


def pool_grad_many_channels(max_pool, spatial, ksize, strides, padding):
    """MaxPoolGrad, AvgPoolGrad or their 3-D ops over an image of millions of channels."""
    x = many_channels(*spatial)
    three_d = len(spatial) == 3
    with tf.device("/CPU:0"):
        pooled = (tf.nn.max_pool3d if three_d else tf.nn.max_pool2d)(x, ksize, strides, padding)
    dy = gradient_of_shape(*pooled.shape)
    k, s = [1, *ksize, 1], [1, *strides, 1]
    ops = (tf.raw_ops.MaxPool3DGrad, tf.raw_ops.AvgPool3DGrad) if three_d else (tf.raw_ops.MaxPoolGrad,
                                                                                 tf.raw_ops.AvgPoolGrad)
    if max_pool:
        return ops[0](orig_input=x, orig_output=pooled, grad=dy, ksize=k, strides=s, padding=padding)
    return ops[1](orig_input_shape=x.shape, grad=dy, ksize=k, strides=s, padding=padding)


@functools.cache
def many_channel_filter(taps, out):
    """A filter of `taps` window taps over the channels of `many_channels` into `out` channels."""
    return normal(*taps, E // (4 if len(taps) == 2 else 8), out)


def conv_grad_many_channels(op, taps, out, **kw):
    """A 2-D or 3-D convolution's input or filter gradient over an image of millions of channels
    (blocks of its channels)."""
    spatial = (2,) * len(taps)
    return conv_grad(op, many_channels(*spatial), many_channel_filter(taps, out), **kw)


def conv_grad(op, x, f, **kw):
    """`op` (a convolution's input or filter gradient, stride 1, SAME) of image `x` and filter `f`,
    for a fixed dy."""
    depthwise = op.startswith("Depthwise")
    taps = len(f.shape) - 2
    with tf.device("/CPU:0"):
        if depthwise:
            y = tf.nn.depthwise_conv2d(x, f, [1] * 4, "SAME")
        else:
            y = (tf.nn.conv3d if taps == 3 else tf.nn.conv2d)(x, f, [1] * (taps + 2), "SAME")
    dy = gradient_of_shape(*y.shape)
    strides = [1] * (taps + 2)
    if op.endswith("Filter") or op.endswith("FilterV2"):
        return getattr(tf.raw_ops, op)(input=x, filter_sizes=f.shape, out_backprop=dy, strides=strides,
                                       padding="SAME", **kw)
    return getattr(tf.raw_ops, op)(input_sizes=x.shape, filter=f, out_backprop=dy, strides=strides, padding="SAME",
                                   **kw)


@functools.cache
def few_channels(spatial, channels):
    """An image (or volume) of 2 pixels a side and a few channels."""
    return normal(1, *(2,) * spatial, channels)


@functools.cache
def many_filters(taps, channels, per_channel=False):
    """A filter of `taps` window taps from `channels` channels into so many output channels (or
    depthwise multipliers) that it passes the binding (each channel's part of it too, with
    `per_channel`): it runs in blocks of its output channels."""
    return normal(*taps, channels, E // (int(np.prod(taps)) * (1 if per_channel else channels)))


def conv_many_filters(op, taps, channels, per_channel=False, **kw):
    """`op` (a 2-D, 3-D or depthwise convolution or its gradient) of `few_channels` through
    `many_filters`."""
    x, f = few_channels(len(taps), channels), many_filters(taps, channels, per_channel)
    if op == "DepthwiseConv2dNative":
        return tf.nn.depthwise_conv2d(x, f, [1] * 4, "SAME")
    if op in ("Conv2D", "Conv3D"):
        return (tf.nn.conv3d if len(taps) == 3 else tf.nn.conv2d)(x, f, [1] * (len(taps) + 2), "SAME")
    return conv_grad(op, x, f, **kw)


def grouped_conv_many_filters(per_group=False):
    """A grouped Conv2D (2 groups of 1 channel) into millions of output channels; `per_group`
    computes it as each group's ungrouped convolution, concatenated."""
    x, f = few_channels(2, 2), many_filters((1, 1), 1)
    if not per_group:
        return tf.nn.conv2d(x, f, 1, "SAME")
    half = f.shape[-1] // 2
    return tf.concat([tf.nn.conv2d(x[..., g:g + 1], f[..., g * half:(g + 1) * half], 1, "SAME") for g in (0, 1)], -1)


@tf.function
def conv_bias_relu(x, f, b):
    """Conv2D, BiasAdd and Relu in a graph: Grappler's remapper fuses them into _FusedConv2D."""
    return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b))


def grouped_conv_many_channels(op, per_group=False):
    """A grouped Conv2D (2 groups) over an image of millions of channels, or its input or filter
    gradient; `per_group` computes it as each group's ungrouped op, concatenated (TF-CPU's
    reference: it has no grouped backprops)."""
    x, f = many_channels(2, 2), many_channel_filter((2, 2), 4)[:, :, :E // 8]
    dy = gradient_of_shape(1, 2, 2, 4)
    s = [1, 1, 1, 1]
    def run(x, f, dy):
        if op == "Conv2D":
            return tf.nn.conv2d(x, f, 1, "SAME")
        if op == "Conv2DBackpropInput":
            return tf.raw_ops.Conv2DBackpropInput(input_sizes=x.shape, filter=f, out_backprop=dy, strides=s,
                                                  padding="SAME")
        return tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=f.shape, out_backprop=dy, strides=s,
                                               padding="SAME")
    if not per_group:
        return run(x, f, dy)
    half = E // 8
    groups = [run(x[..., g * half:(g + 1) * half], f[..., 2 * g:2 * g + 2], dy[..., 2 * g:2 * g + 2]) for g in (0, 1)]
    return tf.concat(groups, -1 if op != "Conv2DBackpropFilter" else 3)


def long_bools():
    """Two rows of about 3x ELEMENTS bools each (mostly true), each row past the binding."""
    flat = tf.reshape(x2 > -2.5, [-1])
    return tf.reshape(tf.tile(flat, [6]), [2, -1])


def wide_matrix():
    """[2, 2 * ELEMENTS // 2]: x2's values twice, as a matrix whose one row passes the binding."""
    flat = tf.reshape(x2, [-1])
    return tf.reshape(tf.concat([flat, -flat], 0), [2, -1])


@functools.cache
def small_matrix():
    return normal(3, 2)


def argmax_on_cpu(x):
    """MaxPoolWithArgmax's indices (2 x 2 windows, SAME) computed on TF-CPU."""
    with tf.device("/CPU:0"):
        return tf.nn.max_pool_with_argmax(x, 2, 1, "SAME")[1]


def thin(_=None):
    """x2's values as one volume of 3 planes of 2 rows and one channel, each row (with the 6 rows a
    3 x 3 window reads) past the binding: tiles of rows cannot serve it, nor blocks of channels;
    tiles of columns do."""
    return tf.reshape(x2, [1, 3, 2, -1, 1])


filt3_single = normal(3, 3, 3, 1, 2)


def conv3d_grad_one_volume(for_filter, strides, padding, volume=deep, filter_=None):
    """A Conv3D gradient of one volume past the binding (bands of planes, or tiles)."""
    x = volume(vol)
    f = filt3 if filter_ is None else filter_
    s = [1, *strides, 1]
    dy = gradient_of_shape(*tf.nn.conv3d(x, f, s, padding).shape)
    if for_filter:
        return tf.raw_ops.Conv3DBackpropFilterV2(input=x, filter_sizes=f.shape, out_backprop=dy, strides=s,
                                                 padding=padding)
    return tf.raw_ops.Conv3DBackpropInputV2(input_sizes=x.shape, filter=f, out_backprop=dy, strides=s,
                                            padding=padding)


def pool3d_grad_one_volume(max_pool, ksize, strides, padding, volume=deep):
    x = volume(vol)
    k, s = [1, *ksize, 1], [1, *strides, 1]
    pooled = tf.nn.max_pool3d(x, k, s, padding)
    dy = gradient_of_shape(*pooled.shape)
    if max_pool:
        return tf.raw_ops.MaxPool3DGrad(orig_input=x, orig_output=pooled, grad=dy, ksize=k, strides=s, padding=padding)
    return tf.raw_ops.AvgPool3DGrad(orig_input_shape=x.shape, grad=dy, ksize=k, strides=s, padding=padding)


def conv_dy():
    with tf.device("/CPU:0"):
        return normal(*tf.nn.conv2d(img, filt, 1, "SAME").shape)


def pool_dy():
    with tf.device("/CPU:0"):
        return normal(*tf.nn.max_pool2d(img, 2, 2, "VALID").shape)


DY = conv_dy()
VOL_DY = vol_dy()
PDY = pool_dy()
POOLED = tf.nn.max_pool2d(img, 2, 2, "VALID")


BN_DY = img * 0.5 + tf.sin(img)
BN_MEAN = tf.constant(np.mean(img.numpy().astype(np.float64), (0, 1, 2)).astype(np.float32))
BN_VAR = tf.constant(np.var(img.numpy().astype(np.float64), (0, 1, 2)).astype(np.float32))


def batch_norm_grad():
    return tf.raw_ops.FusedBatchNormGradV3(y_backprop=BN_DY, x=img, scale=tf.ones([8]) * 2, reserve_space_1=BN_MEAN,
                                          reserve_space_2=BN_VAR, reserve_space_3=tf.zeros([0]), epsilon=1e-3)


def batch_norm_grad_exact():
    """FusedBatchNormGradV3 (training) in float64: TF-CPU's float32 sums over millions of rows
    drift by 1e-3 (the plugin's compensated ones do not)."""
    x, dy = img.numpy().astype(np.float64).reshape(-1, 8), BN_DY.numpy().astype(np.float64).reshape(-1, 8)
    inv = 1 / np.sqrt(BN_VAR.numpy().astype(np.float64) + 1e-3)
    x_hat = (x - BN_MEAN.numpy()) * inv
    offset_grad, scale_grad = dy.sum(0), (dy * x_hat).sum(0)
    dx = 2 * inv * (dy - offset_grad / len(x) - x_hat * scale_grad / len(x))
    return dx.reshape(img.shape), offset_grad, scale_grad


def train_step():
    import keras
    from keras import layers

    keras.utils.set_random_seed(5)
    inputs = keras.Input((S, S, 8))
    h = layers.Conv2D(4, 3, activation="relu")(inputs)
    h = layers.BatchNormalization()(h)
    h = layers.GlobalAveragePooling2D()(h)
    model = keras.Model(inputs, layers.Dense(3)(h))
    model.compile(optimizer=keras.optimizers.SGD(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return tf.constant([model.train_on_batch(img, tf.constant([0, 2, 1, 1, 0, 2, 2, 1])) for _ in range(2)])


CASES = {
    # Elementwise.
    "add_bias": lambda: x2 + bias,
    "exp": lambda: tf.exp(x2 / 4),
    "cast_half": lambda: tf.cast(x2, tf.float16),
    "cast_bool": lambda: tf.cast(x2 > 0, tf.float32),
    "compare": lambda: tf.greater(x2, bias),
    "select": lambda: tf.where(x2 > 0, x2, bias),
    "is_nan": lambda: tf.math.is_nan(x2 / (x2 - x2)),
    # Index maps and copies.
    "fill": lambda: tf.fill([ROWS, ROW], 2.5),
    "broadcast_to": lambda: tf.broadcast_to(bias, [ROWS, ROW]),
    "tile": lambda: tf.tile(x2[:3], [ROWS // 3, 2]),
    "tile_big_input": lambda: tf.tile(x2, [2, 1]),
    "roll_rows": lambda: tf.roll(x2, 5, 0),
    "roll_every_axis": lambda: tf.roll(x3, [3, -2, 7], [0, 1, 2]),
    # Where: an input in parts, and an output (every element nonzero) in windows.
    "where_every_element": lambda: tf.where(x3),
    "where_few": lambda: tf.where(tf.nn.relu(x2 - 2.5)),
    "pad": lambda: tf.pad(x2, [[2, 1], [0, 3]]),
    "mirror_pad": lambda: tf.pad(x2, [[2, 1], [0, 3]], mode="REFLECT"),
    "reverse": lambda: tf.reverse(x3, [0, 2]),
    "reverse_rows": lambda: tf.reverse(x2, [0]),
    "slice": lambda: x3[1:, 3:-2, ::2],
    "transpose_batch_leading": lambda: tf.transpose(img, [0, 3, 1, 2]),
    "transpose_tall": lambda: tf.transpose(x2[:, :8]),
    # Transposes whose index-map parts would number thousands: the input's outermost dimension in
    # windows through a temporary; planes each past the binding (windows within a window).
    "transpose_wide": lambda: tf.transpose(tf.reshape(x2, [8, -1])),
    "transpose_planes_reversed": lambda: tf.transpose(planes()),
    "transpose_planes_rotated": lambda: tf.transpose(planes(), [1, 2, 0]),
    "depthwise_dilated_one_image": lambda: tf.nn.depthwise_conv2d(one_image(), dw, [1, 1, 1, 1], "SAME",
                                                                  dilations=[2, 2]),
    "transpose_wide_float16": lambda: tf.transpose(tf.cast(tf.reshape(tf.concat([x2, x2], 0), [8, -1]), tf.float16)),
    "concat": lambda: tf.concat([x2, x2[:5]], 0),
    "concat_inner": lambda: tf.concat([x2, x2[:, :3]], 1),
    "split": lambda: tf.split(x2, [1, ROW - 1], axis=1)[1],
    "gather_table": lambda: tf.gather(table, ids),
    "gather_nd_table": lambda: tf.gather_nd(table, ids[:, None]),
    "gather_nd_big_output": lambda: tf.gather_nd(x2[:8], all_rows[:, None]),
    "gather_nd_half": lambda: tf.gather_nd(table_of(tf.float16), ids2[:, None]),
    "gather_nd_int8": lambda: tf.gather_nd(table_of(tf.int8), ids4[:, None]),
    "gather_nd_row_past_binding": lambda: tf.gather_nd(flat, [[0], [0]]),
    "gather_nd_int8_odd_rows": lambda: tf.gather_nd(table_of(tf.int8)[:, :255], ids4[:, None]),
    "gather_nd_half_odd_row_past_binding": lambda: tf.gather_nd(half_row(), [[0], [0]]),
    # Scatters.
    "scatter_update_table": lambda: tf.tensor_scatter_nd_update(table, unique_ids[:, None], unique_updates),
    "scatter_add_table": lambda: tf.tensor_scatter_nd_add(table, ids[:, None], updates),
    "scatter_max_elements": lambda: tf.tensor_scatter_nd_max(table, element_ids, updates[:, 0]),
    "scatter_nd_big_output": lambda: tf.scatter_nd(ids[:, None], updates, [ROWS, ROW]),
    "scatter_add_big_updates": lambda: tf.tensor_scatter_nd_add(x2[:8], all_rows[:, None], x2),
    "scatter_add_float64": lambda: tf.tensor_scatter_nd_add(table_of(tf.float64), ids[:, None],
                                                               tf.cast(updates, tf.float64)),
    "scatter_update_float64": lambda: tf.tensor_scatter_nd_update(table_of(tf.float64), unique_ids[:, None],
                                                                  tf.cast(unique_updates, tf.float64)),
    "scatter_sub_int64": lambda: tf.tensor_scatter_nd_sub(table_of(tf.int64), ids[:, None],
                                                            tf.cast(updates * 100, tf.int64)),
    "scatter_update_int8": lambda: tf.tensor_scatter_nd_update(table_of(tf.int8), unique_ids4[:, None],
                                                                table_of(tf.int8)[:300]),
    "scatter_add_half": lambda: tf.tensor_scatter_nd_add(table_of(tf.float16), ids2[:, None],
                                                            tf.cast(updates, tf.float16)),
    "scatter_update_int8_odd_rows": lambda: tf.tensor_scatter_nd_update(
        table_of(tf.int8)[:, :255], unique_ids4[:, None], table_of(tf.int8)[:300, 1:]),
    "scatter_add_half_odd_row_past_binding": lambda: tf.tensor_scatter_nd_add(
        half_row(), [[0], [0]], tf.concat([half_row(), half_row()], 0)),
    "scatter_add_row_past_binding": lambda: tf.tensor_scatter_nd_add(flat, [[0], [0]], tf.concat([flat, flat], 0)),
    "variable_scatter_add": lambda: variable_update("scatter_add", updates, ids),
    "variable_scatter_update": lambda: variable_update("scatter_update", unique_updates, unique_ids),
    "unsorted_segment_sum_big_output": lambda: tf.math.unsorted_segment_sum(updates, ids, ROWS),
    "unsorted_segment_max_big_data": lambda: tf.math.unsorted_segment_max(x2, all_rows, 8),
    "segment_sum_big_data": lambda: tf.math.segment_sum(x2, sorted_rows),
    "dense_bincount_big_output": lambda: tf.math.bincount(bins, minlength=ROW, maxlength=ROW, axis=-1),
    "embedding_sgd_step": embedding_sgd_step,
    # Reductions.
    "sum_all": lambda: tf.reduce_sum(x3),
    "sum_leading": lambda: tf.reduce_sum(x3, 0),
    "sum_inner": lambda: tf.reduce_sum(x3, 2),
    "mean_middle": lambda: tf.reduce_mean(x3, [0, 2]),
    "max": lambda: tf.reduce_max(x3, 1),
    "min_all": lambda: tf.reduce_min(x3),
    "l2_loss": lambda: tf.nn.l2_loss(x3),
    "bias_add_grad": lambda: tf.raw_ops.BiasAddGrad(out_backprop=img),
    "bias_add_grad_nchw": lambda: tf.raw_ops.BiasAddGrad(out_backprop=img_nchw, data_format="NCHW"),
    "argmax": lambda: tf.argmax(x3, 2),
    # Bool reductions past the binding: windows that clear (All) or set (Any) their output in place.
    "all_flat": lambda: tf.reduce_all(tf.reshape(big_bools(), [-1])),
    "any_leading": lambda: tf.reduce_any(tf.logical_not(big_bools()), 0),
    "all_inner": lambda: tf.reduce_all(big_bools(), 1),
    # One row past the binding (windows of slices along it), a leading axis past it, a middle one.
    "argmax_flat": lambda: tf.argmax(tf.reshape(x2, [-1])),
    "argmin_leading": lambda: tf.argmin(x2, 0, output_type=tf.int32),
    "argmax_middle": lambda: tf.argmax(tf.reshape(x2, [1, ROWS, ROW]), 1),
    "argmax_rows_of_planes": lambda: tf.argmax(tf.reshape(tf.concat([x2, x2 * 0.5], 0), [2, 2, -1]), -1),
    "argmin_flat_float64": lambda: tf.argmin(tf.cast(tf.reshape(x2, [-1]), tf.float64)),
    # Rows: matmul, softmax, cross-entropy.
    "matmul": lambda: tf.matmul(x2, weights),
    "batch_matmul": lambda: tf.matmul(x3, batch_weights),
    "softmax": lambda: tf.nn.softmax(x2),
    # One row past the binding: the row ops as launches over the whole tensor.
    "softmax_one_row": lambda: tf.nn.softmax(flat),
    "log_softmax_one_row": lambda: tf.nn.log_softmax(flat),
    "xent_sparse_one_row": lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.constant([E // 3], tf.int32), flat),
    "xent_sparse_two_rows": lambda: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
        features=tf.reshape(tf.reshape(tf.concat([x2, x2 * 0.5], 0), [-1])[:2 * 16385], [2, 16385]),
        labels=tf.constant([5, 16000], tf.int32))[1],
    "xent_dense_one_row": lambda: tf.raw_ops.SoftmaxCrossEntropyWithLogits(
        features=flat, labels=tf.nn.softmax(flat * 0.5))[1],
    "log_softmax": lambda: tf.nn.log_softmax(x3),
    "xent_sparse": lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x2),
    "xent_dense": lambda: tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=x2, labels=tf.nn.softmax(x2 * 0.5))[1],
    # Convolutions, pools, batch norm.
    "conv2d": lambda: tf.nn.conv2d(img, filt, 1, "SAME"),
    "conv2d_nchw": lambda: tf.nn.conv2d(img_nchw, filt, 1, "SAME", data_format="NCHW"),
    "depthwise": lambda: tf.nn.depthwise_conv2d(img, dw, [1, 1, 1, 1], "SAME"),
    "conv_backprop_input": lambda: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=img.shape, filter=filt, out_backprop=DY, strides=[1, 1, 1, 1], padding="SAME"),
    "conv_backprop_filter": lambda: tf.raw_ops.Conv2DBackpropFilter(
        input=img, filter_sizes=filt.shape, out_backprop=DY, strides=[1, 1, 1, 1], padding="SAME"),
    "max_pool": lambda: tf.nn.max_pool2d(img, 3, 2, "SAME"),
    "avg_pool": lambda: tf.nn.avg_pool2d(img, 2, 2, "VALID"),
    "max_pool_grad": lambda: tf.raw_ops.MaxPoolGrad(orig_input=img, orig_output=POOLED, grad=PDY, ksize=[1, 2, 2, 1],
                                                    strides=[1, 2, 2, 1], padding="VALID"),
    "avg_pool_grad": lambda: tf.raw_ops.AvgPoolGrad(orig_input_shape=img.shape, grad=PDY, ksize=[1, 2, 2, 1],
                                                    strides=[1, 2, 2, 1], padding="VALID"),
    "batch_norm_training": lambda: tf.compat.v1.nn.fused_batch_norm(img, tf.ones([8]), tf.zeros([8]))[0],
    "batch_norm_inference": lambda: tf.compat.v1.nn.fused_batch_norm(
        img, tf.ones([8]), tf.zeros([8]), tf.zeros([8]) + 0.1, tf.ones([8]) * 2, is_training=False)[0],
    "batch_norm_grad": lambda: batch_norm_grad()[0],
    "batch_norm_grad_sums": lambda: tf.stack(batch_norm_grad()[1:3]),
    # Counter-based random numbers: the same values as in one launch.
    "random_uniform": lambda: tf.random.stateless_uniform([ROWS, ROW], seed=[3, 4]),
    "random_normal": lambda: tf.random.stateless_normal([ROWS, ROW], seed=[3, 4]),
    "random_truncated_normal": lambda: tf.random.stateless_truncated_normal([ROWS, ROW], seed=[3, 4]),
    # Split along the leading dimension.
    "one_hot": lambda: tf.one_hot(labels, ROW),
    # The depth axis first: no split along the indices; the select route runs in windows.
    "one_hot_axis0": lambda: tf.one_hot(labels, ROW, axis=0),
    "one_hot_axis0_int64": lambda: tf.one_hot(labels, ROW, axis=0, dtype=tf.int64, on_value=7, off_value=-2),
    "gather_axis1": lambda: tf.gather(x2, cols, axis=1),
    "gather_batch_dims": lambda: tf.gather(x2, row_cols, axis=1, batch_dims=1),
    "top_k_rows": top_k_rows,
    "top_k_long_row": lambda: top_k_long_row(5, False),
    "top_k_long_row_ties": lambda: top_k_long_row(300, True),
    # k past a piece of the row: tf.sort and tf.argsort are TopKV2 with k = n (ranked on the host).
    "top_k_long_row_half_k": lambda: top_k_long_row(ELEMENTS // 2, True),
    "sort_long_row": lambda: tf.sort(tf.reshape(x2, [-1]), direction="DESCENDING"),
    "sort_long_row_ascending": lambda: tf.sort(tf.reshape(x2, [-1])),
    "argsort_long_row_ties": lambda: tf.argsort(tf.round(tf.reshape(x2, [-1]) * 2.0), stable=True),
    "sort_int64_long_row": lambda: tf.sort(tf.cast(tf.reshape(x2, [-1]) * 1e6, tf.int64), direction="DESCENDING"),
    # Signed zeros tie (their indices in order); TF-CPU's order of NaNs is arbitrary, so none here.
    "argsort_float64_long_row_signed_zeros": lambda: tf.argsort(signed_zeros(tf.cast(tf.reshape(x2, [-1]), tf.float64)),
                                                                direction="DESCENDING", stable=True),
    "cumsum_rows": lambda: tf.cumsum(x2, axis=1),
    "matrix_diag_part": lambda: tf.linalg.diag_part(matrices),
    "matrix_set_diag": lambda: tf.linalg.set_diag(matrices, matrices[:, :, 0] * 10),
    "matrix_diag": lambda: tf.linalg.diag(diagonals),
    # One matrix past a binding: windows of its rows.
    "matrix_diag_one_matrix": lambda: tf.linalg.diag(vector[:SIDE]),
    "matrix_diag_v3_one_matrix": lambda: tf.linalg.diag(
        tf.reshape(vector[:3 * SIDE], [3, SIDE]), k=(-1, 1), num_rows=SIDE, num_cols=SIDE + 3,
        padding_value=0.5, align="RIGHT_LEFT"),
    "diag_one_matrix": lambda: tf.linalg.tensor_diag(vector[:SIDE]),
    "matrix_set_diag_one_matrix": lambda: tf.linalg.set_diag(
        square, tf.reshape(vector[:4 * SIDE], [4, SIDE]), k=(-2, 1), align="LEFT_RIGHT"),
    "matrix_diag_part_one_matrix": lambda: tf.linalg.diag_part(square, k=(-3, 2), padding_value=-1.0),
    "diag_part_one_matrix": lambda: tf.linalg.tensor_diag_part(square),
    "reverse_sequence": lambda: tf.reverse_sequence(x2, lengths, seq_axis=1, batch_axis=0),
    # Along dimension 0 (time-major): dimensions 0 and 1 swapped around it.
    "reverse_sequence_time_major": lambda: tf.reverse_sequence(
        x3, time_lengths, seq_axis=0, batch_axis=1),
    "reverse_sequence_time_major_batch2": lambda: tf.reverse_sequence(
        x3, tf.constant(np.arange(ROW) % 5, tf.int32), seq_axis=0, batch_axis=2),
    # ... where one swapped row is itself past the binding: one sequence (the batch on dimension 1)
    # reversed by a windowed index map, or (the batch deeper) a time-major reversal of one rank less.
    "reverse_sequence_time_major_long_rows": lambda: tf.reverse_sequence(
        tf.reshape(tf.concat([x2, x2 * 0.5], 0), [-1, 2]), tf.constant([E // 3, E - 5], tf.int64), seq_axis=0,
        batch_axis=1),
    "reverse_sequence_time_major_long_rows_batch2": lambda: tf.reverse_sequence(
        tf.reshape(tf.concat([x2, x2 * 0.5], 0), [-1, 2, 2]), tf.constant([7, E // 2 - 1]), seq_axis=0,
        batch_axis=2),
    "conv3d": lambda: tf.nn.conv3d(vol, filt3, [1] * 5, "SAME"),
    "conv3d_backprop_input": lambda: tf.raw_ops.Conv3DBackpropInputV2(
        input_sizes=vol.shape, filter=filt3, out_backprop=VOL_DY, strides=[1] * 5, padding="SAME"),
    "conv3d_backprop_filter": lambda: tf.raw_ops.Conv3DBackpropFilterV2(
        input=vol, filter_sizes=filt3.shape, out_backprop=VOL_DY, strides=[1] * 5, padding="SAME"),
    "max_pool3d": lambda: tf.nn.max_pool3d(vol, 2, 2, "VALID"),
    "avg_pool3d_grad": lambda: tf.raw_ops.AvgPool3DGrad(
        orig_input_shape=vol.shape, grad=vol * 0.5, ksize=[1, 3, 3, 3, 1], strides=[1] * 5, padding="SAME"),
    "max_pool_argmax": lambda: argmax_pool(False),
    "max_pool_argmax_batch_index": lambda: argmax_pool(True),
    "max_pool_grad_argmax": lambda: argmax_pool_grad(False),
    "max_pool_grad_argmax_batch_index": lambda: argmax_pool_grad(True),
    # ArgMax/ArgMin down a few rows each longer than a binding holds candidates for: column blocks.
    "argmax_leading_two_rows": lambda: tf.argmax(tf.reshape(x2, [2, -1]), axis=0),
    "argmin_leading_three_rows_int32": lambda: tf.argmin(
        tf.reshape(tf.reshape(x2, [-1])[:3 * (E // 3)], [3, -1]), axis=0, output_type=tf.int32),
    # Integer ArgMax/ArgMin: slabs, blocks of columns, windows of one long column.
    "argmax_int64_rows": lambda: tf.argmax(tf.cast(x2 * 50, tf.int64), axis=1),
    "argmin_int16_middle": lambda: tf.argmin(
        tf.cast(tf.concat([x3] * 2, 0) * 30, tf.int16), axis=1, output_type=tf.int32),
    # (Many ties at 250: the first occurrence across windows.)
    "argmax_uint8_flat": lambda: tf.argmax(
        tf.cast(tf.minimum(tf.abs(tf.reshape(tf.concat([x2] * 4, 0), [-1])) * 60, 250), tf.uint8)),
    "argmin_int64_flat": lambda: tf.argmin(tf.reshape(tf.cast(x2 * 1000, tf.int64), [-1])),
    "argmax_uint32_column_pairs": lambda: tf.argmax(tf.reshape(tf.cast(tf.abs(x2) * 1000, tf.uint32), [-1, 2]), axis=0),
    # uint8 in, int64 out: the results pass the binding before the input does.
    "argmax_uint8_narrow_rows": lambda: tf.argmax(
        tf.cast(tf.minimum(tf.abs(tf.reshape(tf.concat([x2, -x2], 0)[:, :255], [-1, 3])) * 60, 250), tf.uint8), 1),
    "argmin_uint8_three_long_rows": lambda: tf.argmin(tf.cast(tf.minimum(
        tf.abs(tf.reshape(tf.reshape(tf.concat([x2, -x2], 0), [-1])[:6 * (E // 3)], [3, -1])) * 60, 250), tf.uint8), 0),
    "argmax_leading_two_rows_int64": lambda: tf.argmax(tf.cast(tf.reshape(x2 * 50, [2, -1]), tf.int64), axis=0),
    "argmax_leading_two_rows_float64": lambda: tf.argmax(tf.cast(tf.reshape(x2, [2, -1]), tf.float64), axis=0),
    # Eleven rows of int8 (and of int16 indices): ranges of five rows, whose packed results start
    # mid-word.
    "top_k_int8_odd_ranges": lambda: tf.cast(tf.math.top_k(tf.cast(tf.reshape(
        tf.reshape(big_bools(), [-1])[:11 * (4 * E // 11)], [11, -1]), tf.int8) * tf.cast(tf.reshape(
        tf.reshape(x2 * 50, [-1]), [1, -1])[:, :4 * E // 11], tf.int8), 3).values, tf.float32),
    "top_k_int16_indices_odd_ranges": lambda: tf.cast(tf.raw_ops.TopKV2(
        input=tf.reshape(tf.reshape(x2, [-1])[:11 * (E // 11)], [11, -1]), k=3, index_type=tf.int16)[1], tf.float32),
    # Unique, UniqueWithCounts and ListDiff past the binding: hashed on the host (TF-CPU's equality:
    # zeros and subnormals one value, every NaN its own).
    "unique_int32": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.unique(
        tf.reshape(tf.cast(x2 * 300, tf.int32), [-1]))], 0),
    "unique_with_counts_float": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.unique_with_counts(
        special_floats(), out_idx=tf.int64)], 0),
    "list_diff_int64": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.raw_ops.ListDiff(
        x=tf.reshape(tf.cast(x2 * 300, tf.int64), [-1]), y=tf.reshape(tf.cast(x2[:ROWS // 2] * 200, tf.int64), [-1]),
        out_idx=tf.int32)], 0),
    "unique_half_nans": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.unique(
        tf.cast(special_floats(), tf.bfloat16))], 0),
    "list_diff_half_nans": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.raw_ops.ListDiff(
        x=tf.cast(special_floats(), tf.float16), y=tf.constant([0.0, np.nan, 1.5], tf.float16), out_idx=tf.int32)], 0),
    "list_diff_float": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.raw_ops.ListDiff(
        x=special_floats(), y=tf.constant([0.0, np.nan, 1.5, -2.0]), out_idx=tf.int64)], 0),
    "in_top_k_rows": lambda: tf.math.in_top_k(labels, x2, 3),
    # Eleven rows: the batch splits into ranges of five, whose bool results start mid-word.
    "in_top_k_odd_ranges": lambda: tf.math.in_top_k(
        tf.constant(np.arange(11) * 7), tf.reshape(tf.reshape(x2, [-1])[:11 * (E // 11)], [11, -1]), 50),
    # One row past the binding: its windows count in chunks, then one pass adds them up.
    "in_top_k_one_row": lambda: tf.stack([tf.math.in_top_k(tf.constant([t]), flat, k) for t, k in [
        (7, 1), (int(np.argmax(flat.numpy())), 1), (int(np.argsort(flat.numpy()[0])[-40]), 40),
        (int(np.argsort(flat.numpy()[0])[-40]), 39), (ELEMENTS - 1, ELEMENTS), (ELEMENTS, 3), (-1, 3)]]),
    "in_top_k_one_row_int64_nan": lambda: tf.stack([tf.math.in_top_k(tf.constant([t], tf.int64), row, 5) for t, row in [
        (3, flat), (3, tf.tensor_scatter_nd_update(flat, [[0, 9]], [np.nan])),
        (9, tf.tensor_scatter_nd_update(flat, [[0, 9]], [np.inf]))]]),
    "max_pool_grad_grad": lambda: tf.raw_ops.MaxPoolGradGrad(orig_input=img, orig_output=POOLED, grad=img * 0.5,
                                                            ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
    "mirror_pad_grad": lambda: tf.raw_ops.MirrorPadGrad(input=img, paddings=[[0, 0], [1, 1], [2, 1], [0, 0]],
                                                        mode="REFLECT"),
    # Mirror padding of both dimensions of a tensor past the binding with more than 4096 rows:
    # the rows before, within and after the input's each read its rows in one order.
    "mirror_pad_many_rows_reflect": lambda: tf.pad(tf.reshape(x2, [-1, 4]), [[3, 2], [1, 2]], "REFLECT"),
    "mirror_pad_many_rows_symmetric": lambda: tf.pad(tf.reshape(x2, [-1, 2, 2]), [[4, 1], [0, 1], [2, 2]],
                                                     "SYMMETRIC"),
    "bucketize": lambda: tf.raw_ops.Bucketize(input=x2, boundaries=[-1.0, 0.0, 0.5, 2.0]),
    # Integer reductions: parts combined in the element type; Mean's 64-bit sums; outputs whose
    # 64-bit partial results pass the binding.
    "int64_sum_leading": lambda: tf.reduce_sum(tf.cast(x2 * 100, tf.int64), axis=0),
    "int64_max_all": lambda: tf.reduce_max(tf.cast(x2 * 100, tf.int64)),
    "uint8_mean_leading": lambda: tf.reduce_mean(
        tf.cast(tf.minimum(tf.abs(tf.concat([x3] * 4, 0)) * 60, 255), tf.uint8), axis=0),
    "int16_prod_middle": lambda: tf.reduce_prod(tf.cast(tf.concat([x3] * 2, 0) * 2, tf.int16), axis=1),
    "uint32_min_inner": lambda: tf.reduce_min(tf.cast(tf.abs(x3) * 1000, tf.uint32), axis=2),
    # One image past the binding: bands of output rows over the input rows they read.
    "resize_bilinear_one_image": lambda: tf.image.resize(tf.reshape(img, [1, 8 * S, S, 8]), [5 * S, 3 * S // 2]),
    "resize_nearest_one_image_half": lambda: tf.image.resize(
        tf.cast(tf.reshape(tf.concat([img, img], 0), [1, 16 * S, S, 8]), tf.float16), [3 * S, 2 * S],
        method="nearest"),
    "resize_bilinear_one_image_down": lambda: tf.compat.v1.image.resize_bilinear(
        tf.reshape(img, [1, 8 * S, S, 8]), [7, S // 2], align_corners=True),
    "conv2d_one_image": lambda: tf.nn.conv2d(tf.reshape(img, [1, 8 * S, S, 8]), filt, 2, "SAME"),
    "conv2d_one_image_explicit": lambda: tf.nn.conv2d(tf.reshape(img, [1, 8 * S, S, 8]), filt, 1,
                                                      [[0, 0], [2, 0], [1, 1], [0, 0]], dilations=2),
    "depthwise_one_image": lambda: tf.nn.depthwise_conv2d(tf.reshape(img, [1, 8 * S, S, 8]), dw, [1, 1, 1, 1], "SAME"),
    "conv_backprop_input_one_image": lambda: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=[1, 8 * S, S, 8], filter=filt, out_backprop=tf.reshape(DY, [1, 8 * S, S, 4]), strides=[1, 1, 1, 1],
        padding="SAME"),
    "conv_backprop_filter_one_image": lambda: tf.raw_ops.Conv2DBackpropFilter(
        input=tf.reshape(img, [1, 8 * S, S, 8]), filter_sizes=filt.shape, out_backprop=tf.reshape(DY, [1, 8 * S, S, 4]),
        strides=[1, 1, 1, 1], padding="SAME"),
    "conv_backprop_input_one_image_strided": lambda: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=[1, 8 * S, S, 8], filter=filt, out_backprop=tf.reshape(DY, [1, 8 * S, S, 4])[:, ::2, ::2],
        strides=[1, 2, 2, 1], padding="SAME"),
    "depthwise_backprop_filter_one_image": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
        input=tf.reshape(img, [1, 8 * S, S, 8]), filter_sizes=dw.shape,
        out_backprop=tf.concat([tf.reshape(DY, [1, 8 * S, S, 4])] * 4, 3), strides=[1, 1, 1, 1], padding="SAME"),
    "max_pool_one_image": lambda: tf.nn.max_pool2d(tf.reshape(img, [1, 8 * S, S, 8]), 3, 2, "SAME"),
    "avg_pool_one_image": lambda: tf.nn.avg_pool2d(tf.reshape(img, [1, 8 * S, S, 8]), [5, 2], [1, 2], "VALID"),
    # One image past the binding in the pools' gradients, argmax pools and resizes (bands of rows).
    "max_pool_grad_one_image": lambda: pool_grad_one_image(True, [3, 3], [2, 2], "SAME"),
    "max_pool_grad_one_image_windows": lambda: pool_grad_one_image(True, [2, 3], [2, 3], "VALID"),
    "avg_pool_grad_one_image": lambda: pool_grad_one_image(False, [3, 3], [2, 2], "SAME"),
    "avg_pool_grad_one_image_tall": lambda: pool_grad_one_image(False, [5, 2], [1, 2], "SAME"),
    "avg_pool_grad_one_image_gaps": lambda: pool_grad_one_image(False, [2, 2], [3, 3], "VALID"),
    "max_pool_grad_grad_one_image": max_pool_grad_grad_one_image,
    "max_pool_argmax_one_image": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.nn.max_pool_with_argmax(
        tall(img), 3, 2, "SAME")], 3),
    "max_pool_argmax_two_images_batch_index": lambda: tf.nn.max_pool_with_argmax(
        tf.reshape(tf.concat([img, img * 0.5], 0), [2, -1, S, 8]), 3, 2, "SAME", include_batch_in_index=True)[1],
    "max_pool_grad_two_images": lambda: tf.raw_ops.MaxPoolGrad(
        orig_input=tf.reshape(tf.concat([img, img], 0), [2, -1, S, 8]),
        orig_output=tf.nn.max_pool2d(tf.reshape(tf.concat([img, img], 0), [2, -1, S, 8]), 3, 2, "SAME"),
        grad=gradient_of_shape(2, 8 * S // 2, (S + 1) // 2, 8), ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1],
        padding="SAME"),
    "resize_bilinear_grad_one_image": lambda: resize_grad_one_image("bilinear", [5 * S, 3 * S // 2]),
    "resize_bilinear_grad_one_image_down": lambda: resize_grad_one_image(
        "bilinear", [7, S // 2], align_corners=True),
    "resize_nearest_grad_one_image": lambda: resize_grad_one_image("nearest", [3 * S, 2 * S],
                                                                   half_pixel_centers=True),
    "resize_bicubic_one_image": lambda: tf.image.resize(tall(img), [5 * S, 3 * S // 2], method="bicubic"),
    "resize_bicubic_grad_one_image": lambda: resize_grad_one_image("bicubic", [5 * S, 3 * S // 2],
                                                                   half_pixel_centers=True),
    "scale_and_translate_one_image": lambda: tf.raw_ops.ScaleAndTranslate(
        images=tall(img), size=[5 * S, 3 * S // 2], scale=[5 / 8, 1.5], translation=[0.5, -1.0],
        kernel_type="lanczos3"),
    "scale_and_translate_grad_one_image": lambda: tf.raw_ops.ScaleAndTranslateGrad(
        grads=gradient_of_shape(1, 5 * S, 3 * S // 2, 8), original_image=tall(img), scale=[5 / 8, 1.5],
        translation=[0.5, -1.0], kernel_type="keyscubic", antialias=False),
    # One image whose rows pass the binding (a Conv1D over a long signal): tiles of columns.
    "conv1d_long_signal": lambda: tf.nn.conv1d(tf.reshape(img, [1, -1, 8]), filt[1], 2, "SAME", dilations=1),
    "conv1d_long_signal_dilated": lambda: tf.nn.conv1d(tf.reshape(img, [1, -1, 8]), filt[1], 1, "VALID", dilations=3),
    "conv2d_wide_image": lambda: tf.nn.conv2d(wide(img, 2), filt, 1, "SAME"),
    "conv2d_wide_image_explicit": lambda: tf.nn.conv2d(wide(img, 4), filt, 2, [[0, 0], [1, 2], [2, 1], [0, 0]]),
    "depthwise_wide_image": lambda: tf.nn.depthwise_conv2d(wide(img, 4), dw, [1, 1, 1, 1], "SAME"),
    "conv_backprop_input_wide": lambda: conv_grad_wide("Conv2DBackpropInput", 2, filt, [1, 1, 1, 1], "SAME"),
    "conv_backprop_input_wide_strided": lambda: conv_grad_wide("Conv2DBackpropInput", 1, filt, [1, 1, 3, 1], "SAME"),
    "conv_backprop_filter_wide": lambda: conv_grad_wide("Conv2DBackpropFilter", 2, filt, [1, 1, 2, 1], "SAME"),
    "depthwise_backprop_input_wide": lambda: conv_grad_wide(
        "DepthwiseConv2dNativeBackpropInput", 4, dw, [1, 1, 1, 1], "SAME"),
    "depthwise_backprop_filter_wide": lambda: conv_grad_wide(
        "DepthwiseConv2dNativeBackpropFilter", 4, dw, [1, 1, 1, 1], "SAME"),
    "max_pool_wide_image": lambda: tf.nn.max_pool2d(wide(img, 2), 3, 2, "SAME"),
    "avg_pool_wide_image": lambda: tf.nn.avg_pool2d(wide(img, 2), [2, 5], [1, 2], "VALID"),
    "max_pool1d_long_signal": lambda: tf.nn.max_pool1d(tf.reshape(img, [1, -1, 8]), 3, 2, "SAME"),
    "max_pool_grad_wide": lambda: pool_grad_wide(True, 2, [3, 3], [2, 2], "SAME"),
    "max_pool_grad_wide_windows": lambda: pool_grad_wide(True, 2, [2, 3], [2, 3], "VALID"),
    "avg_pool_grad_wide": lambda: pool_grad_wide(False, 4, [3, 3], [2, 2], "SAME"),
    "avg_pool_grad_wide_gaps": lambda: pool_grad_wide(False, 2, [2, 2], [3, 3], "VALID"),
    "resize_bilinear_wide": lambda: tf.image.resize(wide(img, 2), [3, 2000]),
    "resize_bilinear_wide_align_corners": lambda: tf.compat.v1.image.resize_bilinear(
        wide(img, 2), [5, 700], align_corners=True),
    "resize_nearest_wide_half": lambda: tf.image.resize(
        tf.cast(wide(tf.concat([img, img], 0), 1), tf.float16), [2, 3001], method="nearest"),
    "resize_bicubic_wide": lambda: tf.image.resize(wide(img, 2), [3, 1500], method="bicubic"),
    "resize_bilinear_grad_wide": lambda: resize_grad_one_image("bilinear", [3, 2000], wide(img, 2)),
    "resize_bicubic_grad_wide": lambda: resize_grad_one_image("bicubic", [5, 1000], wide(img, 2),
                                                              half_pixel_centers=True),
    "resize_nearest_grad_wide": lambda: resize_grad_one_image("nearest", [3, 1700], wide(img, 2)),
    "scale_and_translate_wide": lambda: tf.raw_ops.ScaleAndTranslate(
        images=wide(img, 2), size=[3, 1500], scale=[1.5, 1500 / 1444], translation=[0.5, -1.0],
        kernel_type="lanczos3"),
    "max_pool_grad_grad_wide": lambda: tf.raw_ops.MaxPoolGradGrad(
        orig_input=wide(img, 2), orig_output=pooled_on_cpu(wide(img, 2), 3, 2, "SAME"), grad=wide(img, 2) * 0.5 + 1,
        ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
    "max_pool_argmax_wide": lambda: tf.concat([tf.cast(v, tf.float32) for v in tf.nn.max_pool_with_argmax(
        wide(img, 2), 3, 2, "SAME")], 3),
    "max_pool_argmax_wide_valid": lambda: tf.nn.max_pool_with_argmax(wide(img, 4), [3, 2], [1, 3], "VALID")[1],
    # One volume past the binding in the 3-D convolutions and pools (bands of planes).
    "conv3d_one_volume": lambda: tf.nn.conv3d(deep(vol), filt3, [1, 2, 1, 2, 1], "SAME"),
    "conv3d_one_volume_dilated": lambda: tf.nn.conv3d(deep(vol), filt3, [1] * 5, "VALID", dilations=[1, 3, 2, 1, 1]),
    "conv3d_backprop_input_one_volume": lambda: conv3d_grad_one_volume(False, [2, 1, 2], "SAME"),
    "conv3d_backprop_input_one_volume_valid": lambda: conv3d_grad_one_volume(False, [3, 2, 1], "VALID"),
    "conv3d_backprop_filter_one_volume": lambda: conv3d_grad_one_volume(True, [2, 2, 1], "SAME"),
    "max_pool3d_one_volume": lambda: tf.nn.max_pool3d(deep(vol), 3, 2, "SAME"),
    "avg_pool3d_one_volume": lambda: tf.nn.avg_pool3d(deep(vol), [3, 2, 2], [1, 2, 2], "SAME"),
    "max_pool3d_grad_one_volume": lambda: pool3d_grad_one_volume(True, [3, 3, 3], [2, 2, 2], "SAME"),
    "avg_pool3d_grad_one_volume": lambda: pool3d_grad_one_volume(False, [3, 2, 2], [2, 1, 2], "SAME"),
    "avg_pool3d_grad_one_volume_valid": lambda: pool3d_grad_one_volume(False, [2, 2, 2], [3, 2, 2], "VALID"),
    "max_pool3d_grad_grad_one_volume": lambda: tf.raw_ops.MaxPool3DGradGrad(
        orig_input=deep(vol), orig_output=tf.nn.max_pool3d(deep(vol), 3, 2, "SAME"), grad=deep(vol) * 0.5 + 1,
        ksize=[1, 3, 3, 3, 1], strides=[1, 2, 2, 2, 1], padding="SAME"),
    # One volume whose planes pass the binding in the 3-D convolutions and pools (tiles of rows).
    "conv3d_shallow_volume": lambda: tf.nn.conv3d(shallow(vol), filt3, [1, 1, 2, 1, 1], "SAME"),
    "conv3d_shallow_volume_dilated": lambda: tf.nn.conv3d(shallow(vol), filt3, [1] * 5, "VALID",
                                                          dilations=[1, 1, 3, 2, 1]),
    "conv3d_backprop_input_shallow_volume": lambda: conv3d_grad_one_volume(False, [1, 2, 2], "SAME", shallow),
    "conv3d_backprop_input_shallow_volume_valid": lambda: conv3d_grad_one_volume(False, [2, 3, 1], "VALID", shallow),
    "conv3d_backprop_filter_shallow_volume": lambda: conv3d_grad_one_volume(True, [1, 2, 1], "SAME", shallow),
    "max_pool3d_shallow_volume": lambda: tf.nn.max_pool3d(shallow(vol), 3, [1, 2, 1], "SAME"),
    "avg_pool3d_shallow_volume": lambda: tf.nn.avg_pool3d(shallow(vol), [3, 3, 2], [1, 2, 2], "SAME"),
    "max_pool3d_grad_shallow_volume": lambda: pool3d_grad_one_volume(True, [3, 3, 3], [1, 2, 2], "SAME", shallow),
    "avg_pool3d_grad_shallow_volume": lambda: pool3d_grad_one_volume(False, [3, 3, 2], [2, 2, 2], "SAME", shallow),
    # Strides past the window: rows no window covers.
    "avg_pool3d_grad_shallow_volume_gaps": lambda: pool3d_grad_one_volume(False, [2, 2, 2], [2, 3, 2], "VALID",
                                                                          shallow),
    "max_pool3d_grad_grad_shallow_volume": lambda: tf.raw_ops.MaxPool3DGradGrad(
        orig_input=shallow(vol), orig_output=tf.nn.max_pool3d(shallow(vol), 3, [1, 2, 1], "SAME"),
        grad=shallow(vol) * 0.5 + 1,
        ksize=[1, 3, 3, 3, 1], strides=[1, 1, 2, 1, 1], padding="SAME"),
    # One volume whose rows pass the binding (tiles of columns, each cut into rows).
    "conv3d_thin_volume": lambda: tf.nn.conv3d(thin(), filt3_single, [1, 1, 1, 2, 1], "SAME"),
    "conv3d_backprop_input_thin_volume": lambda: conv3d_grad_one_volume(False, [1, 1, 2], "SAME", thin, filt3_single),
    "conv3d_backprop_filter_thin_volume": lambda: conv3d_grad_one_volume(True, [1, 2, 2], "SAME", thin, filt3_single),
    "max_pool3d_thin_volume": lambda: tf.nn.max_pool3d(thin(), 3, [1, 1, 2], "SAME"),
    "max_pool3d_grad_thin_volume": lambda: pool3d_grad_one_volume(True, [3, 3, 3], [1, 1, 2], "SAME", thin),
    "avg_pool3d_grad_thin_volume": lambda: pool3d_grad_one_volume(False, [3, 3, 2], [2, 1, 3], "SAME", thin),
    "max_pool3d_grad_grad_thin_volume": lambda: tf.raw_ops.MaxPool3DGradGrad(
        orig_input=thin(), orig_output=tf.nn.max_pool3d(thin(), 3, [1, 1, 2], "SAME"), grad=thin() * 0.5 + 1,
        ksize=[1, 3, 3, 3, 1], strides=[1, 1, 1, 2, 1], padding="SAME"),
    # Pools and resizes of an image of millions of channels: each channel an image.
    "max_pool_many_channels": lambda: tf.nn.max_pool2d(many_channels(2, 2), 2, 1, "SAME"),
    "avg_pool_many_channels": lambda: tf.nn.avg_pool2d(many_channels(2, 2), 2, 1, "SAME"),
    "max_pool_nchw_many_channels": lambda: tf.nn.max_pool2d(tf.transpose(many_channels(2, 2), [0, 3, 1, 2]), 2, 1,
                                                            "SAME", data_format="NCHW"),
    "max_pool_grad_many_channels": lambda: pool_grad_many_channels(True, (2, 2), [2, 2], [1, 1], "SAME"),
    "avg_pool_grad_many_channels": lambda: pool_grad_many_channels(False, (2, 2), [2, 2], [1, 1], "SAME"),
    "max_pool_grad_grad_many_channels": lambda: tf.raw_ops.MaxPoolGradGrad(
        orig_input=many_channels(2, 2), orig_output=tf.nn.max_pool2d(many_channels(2, 2), 2, 1, "SAME"),
        grad=many_channels(2, 2) * 0.5 + 1, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"),
    "max_pool_argmax_many_channels": lambda: tf.concat([tf.cast(t, tf.float32) for t in tf.nn.max_pool_with_argmax(
        many_channels(2, 2), 2, 1, "SAME")], 0),
    "max_pool_argmax_batch_many_channels": lambda: tf.concat([tf.cast(t, tf.float32) for t in
                                                              tf.nn.max_pool_with_argmax(
        tf.concat([many_channels(2, 2), -many_channels(2, 2)], 0), 2, 1, "SAME", include_batch_in_index=True)], 0),
    "max_pool_grad_argmax_many_channels": lambda: tf.raw_ops.MaxPoolGradWithArgmax(
        input=many_channels(2, 2), grad=many_channels(2, 2) * 0.5, argmax=argmax_on_cpu(many_channels(2, 2)),
        ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"),
    "max_pool3d_many_channels": lambda: tf.nn.max_pool3d(many_channels(2, 2, 2), 2, 1, "SAME"),
    "avg_pool3d_grad_many_channels": lambda: pool_grad_many_channels(False, (2, 2, 2), [2, 2, 2], [1, 1, 1], "SAME"),
    "resize_bilinear_many_channels": lambda: tf.image.resize(many_channels(2, 2), [3, 3]),
    "resize_nearest_many_channels": lambda: tf.image.resize(many_channels(2, 2), [3, 3], "nearest"),
    "resize_bicubic_many_channels": lambda: tf.image.resize(many_channels(2, 2), [3, 3], "bicubic"),
    "resize_bilinear_grad_many_channels": lambda: tf.raw_ops.ResizeBilinearGrad(
        grads=gradient_of_shape(1, 3, 3, E // 4), original_image=many_channels(2, 2), half_pixel_centers=True),
    "resize_nearest_grad_many_channels": lambda: tf.raw_ops.ResizeNearestNeighborGrad(
        grads=gradient_of_shape(1, 3, 3, E // 4), size=[2, 2], half_pixel_centers=True),
    # One element whose sources pass the binding (the gradient of an upscale from one pixel; an
    # antialiased downscale to one): its sources in windows of rows, summed.
    "resize_bilinear_grad_from_one_pixel": lambda: tf.raw_ops.ResizeBilinearGrad(
        grads=gradient_of_shape(1, 1, E, 1), original_image=tf.zeros([1, 1, 1, 1]), half_pixel_centers=True),
    "resize_bilinear_grad_from_one_pixel_tall": lambda: tf.raw_ops.ResizeBilinearGrad(
        grads=gradient_of_shape(1, E, 1, 2), original_image=tf.zeros([1, 1, 1, 2])),
    "resize_nearest_grad_from_one_pixel": lambda: tf.raw_ops.ResizeNearestNeighborGrad(
        grads=gradient_of_shape(1, 1, E, 1), size=[1, 1]),
    "resize_bicubic_grad_from_two_pixels": lambda: tf.raw_ops.ResizeBicubicGrad(
        grads=gradient_of_shape(1, 1, E, 1), original_image=tf.zeros([1, 1, 2, 1]), half_pixel_centers=True),
    "scale_and_translate_to_one_pixel": lambda: tf.image.resize(
        tf.reshape(x2[:E // 256], [1, 1, -1, 1]), [1, 1], "bilinear", antialias=True),
    "scale_and_translate_lanczos5_to_two_pixels": lambda: tf.image.resize(
        tf.reshape(x2[:E // 256], [1, -1, 1, 1]), [2, 1], "lanczos5", antialias=True),
    # Convolutions of an image of millions of channels: blocks of its input channels.
    "conv2d_many_channels": lambda: tf.nn.conv2d(many_channels(2, 2), many_channel_filter((2, 2), 2), 1, "SAME"),
    "conv2d_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2D"),
    "conv_backprop_input_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2DBackpropInput"),
    "conv_backprop_filter_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2DBackpropFilter"),
    # [height, width] sizes of a 1-channel image under millions of filters: refused (blocks of
    # input channels cannot serve it), never read as a grouped convolution.
    "conv_backprop_input_short_sizes_many_filters": lambda: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=[2, 4], filter=tf.reshape(x2[:, :64], [1, 1, 1, -1]),
        out_backprop=tf.reshape(wide_matrix(), [1, 2, 4, -1]), strides=[1, 1, 1, 1], padding="SAME"),
    "conv2d_many_filters": lambda: conv_many_filters("Conv2D", (1, 1), 1),
    "conv2d_many_filters_two_channels": lambda: conv_many_filters("Conv2D", (2, 2), 2),
    "conv_backprop_input_many_filters": lambda: conv_many_filters("Conv2DBackpropInput", (2, 2), 1),
    "conv_backprop_input_many_filters_two_channels": lambda: conv_many_filters("Conv2DBackpropInput", (1, 1), 2),
    "conv_backprop_filter_many_filters": lambda: conv_many_filters("Conv2DBackpropFilter", (2, 2), 1),
    "conv_backprop_filter_many_filters_1x1": lambda: conv_many_filters("Conv2DBackpropFilter", (1, 1), 1),
    "depthwise_many_multipliers": lambda: conv_many_filters("DepthwiseConv2dNative", (1, 1), 1),
    "depthwise_many_multipliers_two_channels": lambda: conv_many_filters("DepthwiseConv2dNative", (1, 1), 2, True),
    "depthwise_backprop_filter_many_multipliers_two_channels": lambda: conv_many_filters(
        "DepthwiseConv2dNativeBackpropFilter", (1, 1), 2, True),
    "depthwise_backprop_input_many_multipliers_two_channels": lambda: conv_many_filters(
        "DepthwiseConv2dNativeBackpropInput", (1, 1), 2, True),
    "depthwise_backprop_input_many_multipliers": lambda: conv_many_filters(
        "DepthwiseConv2dNativeBackpropInput", (1, 1), 1),
    "depthwise_backprop_filter_many_multipliers": lambda: conv_many_filters(
        "DepthwiseConv2dNativeBackpropFilter", (1, 1), 1),
    "conv3d_many_filters": lambda: conv_many_filters("Conv3D", (1, 1, 1), 1),
    "conv3d_backprop_input_many_filters": lambda: conv_many_filters("Conv3DBackpropInputV2", (2, 2, 2), 1),
    "conv3d_backprop_filter_many_filters": lambda: conv_many_filters("Conv3DBackpropFilterV2", (1, 1, 1), 1),
    "fused_conv2d_many_filters": lambda: conv_bias_relu(few_channels(2, 1), many_filters((2, 2), 1),
                                                        tf.reshape(x2, [-1])[:E // 4]),
    "conv2d_grouped_many_filters": lambda: grouped_conv_many_filters(),
    "fused_conv2d_many_channels": lambda: conv_bias_relu(many_channels(2, 2), many_channel_filter((2, 2), 2),
                                                         tf.constant([0.5, -0.5])),
    "conv_backprop_input_many_channels": lambda: conv_grad_many_channels("Conv2DBackpropInput", (2, 2), 2),
    "conv_backprop_filter_many_channels": lambda: conv_grad_many_channels("Conv2DBackpropFilter", (2, 2), 2),
    "depthwise_many_channels": lambda: tf.nn.depthwise_conv2d(many_channels(2, 2), many_channel_filter((2, 2), 1),
                                                              [1] * 4, "SAME"),
    "depthwise_backprop_input_many_channels": lambda: conv_grad_many_channels(
        "DepthwiseConv2dNativeBackpropInput", (2, 2), 1),
    "depthwise_backprop_filter_many_channels": lambda: conv_grad_many_channels(
        "DepthwiseConv2dNativeBackpropFilter", (2, 2), 1),
    "conv3d_many_channels": lambda: tf.nn.conv3d(many_channels(2, 2, 2), many_channel_filter((2, 2, 2), 2), [1] * 5,
                                                 "SAME"),
    "conv3d_backprop_input_many_channels": lambda: conv_grad_many_channels("Conv3DBackpropInputV2", (2, 2, 2), 2),
    "conv3d_backprop_filter_many_channels": lambda: conv_grad_many_channels("Conv3DBackpropFilterV2", (2, 2, 2), 2),
    # One step, row or output row past the binding: ranges of columns.
    "cumsum_step_past_binding": lambda: tf.cumsum(wide_matrix(), axis=0),
    "cumsum_step_past_binding_exclusive_reverse": lambda: tf.cumsum(wide_matrix(), axis=0, exclusive=True,
                                                                    reverse=True),
    "cumprod_step_past_binding": lambda: tf.math.cumprod(wide_matrix() * 0.1 + 1, axis=0),
    "all_rows_past_binding": lambda: tf.reduce_all(long_bools(), axis=1),
    "any_columns_rows_past_binding": lambda: tf.reduce_any(~long_bools(), axis=0),
    "matmul_row_past_binding": lambda: tf.matmul(small_matrix(), wide_matrix()),
    "matmul_row_past_binding_transposed": lambda: tf.matmul(small_matrix(), tf.transpose(wide_matrix()),
                                                             transpose_b=True),
    # Scans down a dimension past the binding: windows with carries.
    "cumsum_axis0_exclusive": lambda: tf.cumsum(x2, axis=0, exclusive=True),
    "cumprod_axis0_reverse": lambda: tf.math.cumprod(1 + x2 / 1000, axis=0, reverse=True),
    "logsumexp_axis0": lambda: tf.math.cumulative_logsumexp(x2, axis=0),
    "cumsum_int64_axis0": lambda: tf.cumsum(tf.cast(x2 * 100, tf.int64), axis=0, reverse=True, exclusive=True),
    "cumsum_one_row": lambda: tf.cumsum(flat, axis=1),
    "range": lambda: tf.range(0.5, ELEMENTS * 1.5, 1.5),
    # Products whose operands pass the binding: groups of matrices, blocks of rows and contractions.
    "matmul_big_b": lambda: tf.matmul(x2[:4], tf.transpose(x2)),
    "matmul_big_b_transposed": lambda: tf.matmul(x2[:4], x2, transpose_b=True),
    "matmul_big_a_transposed": lambda: tf.matmul(x2, x2[:, :8], transpose_a=True),
    "batch_matmul_shared_big_b": lambda: tf.matmul(tf.reshape(x2[:6], [3, 2, ROW]), tf.transpose(x2)),
    "einsum_big_keys": lambda: tf.einsum("bqd,bkd->bqk", x2[None, :8], x2[None]),
    # A Dense layer whose kernel is past the binding (an output projection), in a tf.function.
    "dense_big_kernel": lambda: tf.function(lambda x, w, b: tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b)))(
        x2[:4], tf.transpose(x2), x2[:, 0]),
    # A Keras training step (Conv2D, BatchNormalization, pooling, Dense, SGD) on a big batch.
    "keras_train_step": train_step,
}



def dilated_filter3(rates):
    """filt3 with rates - 1 zeros between its taps: the undilated filter of a dilated Conv3D."""
    f = filt3.numpy()
    out = np.zeros([(k - 1) * r + 1 for k, r in zip(f.shape[:3], rates)] + list(f.shape[3:]), np.float32)
    out[::rates[0], ::rates[1], ::rates[2]] = f
    return tf.constant(out)


# TF-CPU has no dilated Conv3D: its reference is the convolution by the filter dilated with zeros.
# Nor has it an NCHW Conv2D: its reference is the NHWC convolution, transposed. Batch-norm gradients
# compare with the exact result.
CPU_TWIN = {"conv3d_one_volume_dilated": lambda: tf.nn.conv3d(deep(vol), dilated_filter3([3, 2, 1]), [1] * 5, "VALID"),
            "conv2d_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2D", True),
            "conv2d_grouped_many_filters": lambda: grouped_conv_many_filters(True),
            "conv_backprop_input_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2DBackpropInput",
                                                                                            True),
            "conv_backprop_filter_grouped_many_channels": lambda: grouped_conv_many_channels("Conv2DBackpropFilter",
                                                                                             True),
            "max_pool_nchw_many_channels": lambda: tf.transpose(tf.nn.max_pool2d(many_channels(2, 2), 2, 1, "SAME"),
                                                                [0, 3, 1, 2]),
            "conv3d_shallow_volume_dilated": lambda: tf.nn.conv3d(shallow(vol), dilated_filter3([1, 3, 2]), [1] * 5,
                                                                  "VALID"),
            "conv2d_nchw": lambda: tf.transpose(tf.nn.conv2d(img, filt, 1, "SAME"), [0, 3, 1, 2]),
            "batch_norm_grad": lambda: tf.constant(batch_norm_grad_exact()[0]),
            "batch_norm_grad_sums": lambda: tf.constant(np.stack(batch_norm_grad_exact()[2:0:-1]))}

# Float tolerance: TF-CPU sums in float32 in another order; scale by the result's magnitude.
TOLERANCE = {"sum_all": 1e-4, "l2_loss": 1e-4, "keras_train_step": 1e-4, "batch_norm_training": 1e-3,
             "batch_norm_grad": 1e-4, "batch_norm_grad_sums": 1e-4,
             # float16 sums of repeated indices round in another order.
             "scatter_add_half": 1e-3,
             # Long running sums and products, in another order than TF-CPU's.
             "cumsum_axis0_exclusive": 1e-4, "cumprod_axis0_reverse": 1e-4, "logsumexp_axis0": 1e-4,
             "cumsum_one_row": 1e-4, "cumsum_rows": 1e-4, "conv3d_backprop_filter": 1e-4,
             "matmul_big_b": 1e-4, "matmul_big_b_transposed": 1e-4, "matmul_big_a_transposed": 1e-4,
             "batch_matmul_shared_big_b": 1e-4, "einsum_big_keys": 1e-4, "dense_big_kernel": 1e-4,
             "conv2d_one_image": 1e-4, "conv2d_one_image_explicit": 1e-4, "depthwise_one_image": 1e-4,
             "depthwise_dilated_one_image": 1e-4,
             "conv_backprop_input_one_image": 1e-4, "conv_backprop_filter_one_image": 1e-4,
             "conv_backprop_input_one_image_strided": 1e-4, "depthwise_backprop_filter_one_image": 1e-4,
             "conv1d_long_signal": 1e-4, "conv1d_long_signal_dilated": 1e-4, "conv2d_wide_image": 1e-4,
             "conv2d_wide_image_explicit": 1e-4, "depthwise_wide_image": 1e-4, "conv_backprop_input_wide": 1e-4,
             "conv_backprop_input_wide_strided": 1e-4, "conv_backprop_filter_wide": 1e-4,
             "depthwise_backprop_input_wide": 1e-4, "depthwise_backprop_filter_wide": 1e-4,
             "conv3d_one_volume": 1e-4, "conv3d_one_volume_dilated": 1e-4, "conv3d_backprop_input_one_volume": 1e-4,
             "conv3d_backprop_input_one_volume_valid": 1e-4, "conv3d_backprop_filter_one_volume": 1e-4,
             "conv2d_many_channels": 1e-4, "conv_backprop_filter_many_channels": 1e-4,
             "depthwise_backprop_filter_many_channels": 1e-4, "conv3d_many_channels": 1e-4,
             "conv3d_backprop_filter_many_channels": 1e-4, "conv_backprop_input_many_channels": 1e-4,
             "depthwise_backprop_input_many_channels": 1e-4, "conv3d_backprop_input_many_channels": 1e-4,
             "depthwise_many_channels": 1e-4, "fused_conv2d_many_channels": 1e-4,
             "conv2d_grouped_many_channels": 1e-4, "conv_backprop_input_grouped_many_channels": 1e-4,
             "conv_backprop_filter_grouped_many_channels": 1e-4,
             "conv_backprop_input_short_sizes_many_filters": 1e-4, "conv_backprop_input_many_filters": 1e-4,
             "conv_backprop_input_many_filters_two_channels": 1e-4, "depthwise_backprop_input_many_multipliers": 1e-4,
             "depthwise_backprop_input_many_multipliers_two_channels": 1e-4,
             "conv3d_backprop_input_many_filters": 1e-4, "matmul_row_past_binding": 1e-4,
             "matmul_row_past_binding_transposed": 1e-4,
             "conv3d_thin_volume": 1e-4, "conv3d_backprop_input_thin_volume": 1e-4,
             "conv3d_backprop_filter_thin_volume": 1e-4,
             "conv3d_shallow_volume": 1e-4, "conv3d_shallow_volume_dilated": 1e-4,
             "conv3d_backprop_input_shallow_volume": 1e-4,
             "conv3d_backprop_input_shallow_volume_valid": 1e-4, "conv3d_backprop_filter_shallow_volume": 1e-4}


def compare(got, want, tol):
    if got.dtype == bool or np.issubdtype(got.dtype, np.integer):
        return bool(np.array_equal(got, want)), "exact"
    got, want = got.astype(np.float64), want.astype(np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(want)))) if want.size else 1.0
    err = float(np.nanmax(np.abs(got - want))) / scale if want.size else 0.0
    same_nan = bool(np.array_equal(np.isnan(got), np.isnan(want)))
    return same_nan and err <= tol, f"max error {err:.2e} of scale {scale:.2e}"


for name, case in CASES.items():
    if ONLY and name not in ONLY:
        continue
    record = {"case": name}
    try:
        with tf.device("/GPU:0"):
            got = case().numpy()
        with tf.device("/CPU:0"):
            want = CPU_TWIN.get(name, case)().numpy()
        record["ok"], record["detail"] = compare(got, want, TOLERANCE.get(name, 2e-5))
        record["shape"] = list(got.shape)
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        record["ok"], record["detail"] = False, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    print(json.dumps(record), flush=True)
