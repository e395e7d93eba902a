"""One model of the zoo (test_zoo.py, benches/zoo_steps.py) in one configuration, in its own
process:

    python zoo_worker.py MODEL MODE OUT.npz [--time]

MODE `wgpu` runs the model twice, under `tf.device("/GPU:0")` and with no device scope, each time
recording the inference logits and the gradients of one Keras training step: `train_on_batch`
with `compile()`'s defaults (no `jit_compile` argument) and SGD at a learning rate of 2^20, so that
the gradient is the weights' change divided by it (exact scaling; the step's own graph, not a
copy of it). TF's placer logs every node of that step (stdout), which test_zoo.py reads for the
placement audit. MODE `cpu` hides the GPU (TF-CPU, Keras's generic paths); the parent sets
`TF_ENABLE_ONEDNN_OPTS` to measure TF-CPU's own implementation noise. MODE `exact` is TF-CPU in
float64 (the same float32 initial weights and data, cast): the exact gradients, where TF-CPU's two
float32 paths share an error and so understate the noise (test_zoo.py). `--time` then restores the
weights and times three more steps at a learning rate of 0.01 (the benchmark; tests do not time).
Models are built with default arguments and a fixed seed, so every process builds the same weights.
"""

import os
import sys
import time

import numpy as np

import zoo_results

MODEL, MODE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
TIMED = "--time" in sys.argv[4:]
# A power of two: the update lr * g is exact, so (before - after) / lr is the step's gradient to
# within the rounding of the subtraction.
GRADIENT_LR = 2.0**20

import tensorflow as tf  # noqa: E402

# Functions' placement is logged only when the setting precedes the context's start; the step's
# nodes are told apart by the markers around it.
tf.debugging.set_log_device_placement(MODE == "wgpu" and not TIMED)
if MODE in ("cpu", "exact") or MODE.startswith("perturbed"):
    tf.config.set_visible_devices([], "GPU")
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" or os.environ.get("TF_WGPU_ZOO_UNFUSED") == "1":
        # Eigen's fused convolution takes no groups: the oneDNN-off reference runs its convolutions
        # unfused. (Eigen has no grouped convolution at all, so for ConvNeXt the second reference is
        # oneDNN without Grappler's fusions, TF_WGPU_ZOO_UNFUSED.)
        tf.config.optimizer.set_experimental_options({"remapping": False})
import keras  # noqa: E402
from keras import layers  # noqa: E402

IMAGE = (32, 32, 3)
BATCH = 2
# keras.applications models at 32x32 reach 1x1 feature maps, where batch-2 BatchNormalization makes
# the gradients chaotic (TF-CPU's own two paths differed by more than 100%): 64x64, batch 4.
APP_IMAGE = tuple(int(v) for v in os.environ.get("TF_WGPU_ZOO_APP_IMAGE", "64,64,3").split(","))
APP_BATCH = int(os.environ.get("TF_WGPU_ZOO_APP_BATCH", "4"))


def applications(name):
    def build():
        return getattr(keras.applications, name)(input_shape=APP_IMAGE, weights=None, classes=10,
                                                 classifier_activation=None)
    return build


def lstm_masked():
    inputs = keras.Input((12,), dtype="int32")
    x = layers.Embedding(40, 16, mask_zero=True)(inputs)
    x = layers.LSTM(24)(x)
    return keras.Model(inputs, layers.Dense(4)(x))


def gru_stack():
    inputs = keras.Input((10, 8))
    x = layers.GRU(16, return_sequences=True)(inputs)
    x = layers.GRU(12)(x)
    return keras.Model(inputs, layers.Dense(4)(x))


def bidirectional_masked():
    inputs = keras.Input((12,), dtype="int32")
    x = layers.Embedding(40, 16, mask_zero=True)(inputs)
    x = layers.Bidirectional(layers.LSTM(12, return_sequences=True))(x)
    x = layers.Bidirectional(layers.GRU(8))(x)
    return keras.Model(inputs, layers.Dense(4)(x))


def text_classifier():
    inputs = keras.Input((16,), dtype="int32")
    x = layers.Embedding(60, 16)(inputs)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dense(16, activation="relu")(x)
    return keras.Model(inputs, layers.Dense(4)(x))


def unet():
    inputs = keras.Input(IMAGE)
    c1 = layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    p1 = layers.MaxPooling2D()(c1)
    c2 = layers.Conv2D(16, 3, padding="same", activation="relu")(p1)
    p2 = layers.MaxPooling2D()(c2)
    b = layers.Conv2D(32, 3, padding="same", activation="relu")(p2)
    u2 = layers.Conv2DTranspose(16, 2, strides=2, padding="same")(b)
    c3 = layers.Conv2D(16, 3, padding="same", activation="relu")(layers.Concatenate()([u2, c2]))
    u1 = layers.UpSampling2D()(c3)
    c4 = layers.Conv2D(8, 3, padding="same", activation="relu")(layers.Concatenate()([u1, c1]))
    return keras.Model(inputs, layers.Conv2D(3, 1)(c4))


class PositionEmbedding(layers.Layer):
    def __init__(self, length, dim, **kwargs):
        super().__init__(**kwargs)
        self.table = layers.Embedding(length, dim)

    def call(self, x):
        return x + self.table(tf.range(tf.shape(x)[1]))


def transformer_block(x, heads, dim, causal):
    attended = layers.MultiHeadAttention(heads, dim // heads)(x, x, use_causal_mask=causal)
    x = layers.LayerNormalization()(x + attended)
    hidden = layers.Dense(dim * 2, activation="gelu")(x)
    return layers.LayerNormalization()(x + layers.Dense(dim)(hidden))


def causal_decoder():
    inputs = keras.Input((16,), dtype="int32")
    x = PositionEmbedding(16, 32)(layers.Embedding(50, 32)(inputs))
    for _ in range(2):
        x = transformer_block(x, 4, 32, causal=True)
    return keras.Model(inputs, layers.Dense(50)(x))


def vit_encoder():
    inputs = keras.Input(IMAGE)
    patches = layers.Conv2D(32, 8, strides=8)(inputs)
    x = PositionEmbedding(16, 32)(layers.Reshape((16, 32))(patches))
    for _ in range(2):
        x = transformer_block(x, 4, 32, causal=False)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, layers.Dense(10)(x))


APPLICATIONS = ["MobileNetV2", "ResNet50", "EfficientNetB0", "DenseNet121", "ConvNeXtTiny"]
MODELS = {
    "MobileNetV2": applications("MobileNetV2"),
    "ResNet50": applications("ResNet50"),
    "EfficientNetB0": applications("EfficientNetB0"),
    "DenseNet121": applications("DenseNet121"),
    "ConvNeXtTiny": applications("ConvNeXtTiny"),
    "LSTM-masked": lstm_masked,
    "GRU-stack": gru_stack,
    "Bidirectional-masked": bidirectional_masked,
    "Embedding-SGD": text_classifier,
    "U-Net": unet,
    "Causal-decoder": causal_decoder,
    "ViT-encoder": vit_encoder,
}


def data(model):
    """Inputs and sparse labels for the model's input and output shapes (fixed, the same in every
    process)."""
    rng = np.random.default_rng(7)
    spec = model.inputs[0]
    batch = APP_BATCH if MODEL in APPLICATIONS else BATCH
    shape = (batch,) + tuple(spec.shape[1:])
    if spec.dtype == "int32":
        x = rng.integers(1, 40, shape).astype(np.int32)
        if MODEL.endswith("masked"):
            # Right-padded sequences of different lengths: the mask becomes sequence lengths.
            lengths = np.array([shape[1], shape[1] // 2])
            x = x * (np.arange(shape[1])[None, :] < lengths[:, None])
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    out = model.outputs[0].shape
    labels = rng.integers(0, out[-1], shape[:1] + tuple(out[1:-1]))
    return x, labels


def function_node_types():
    """The dtypes each node of every function in this process names in its type attributes, by
    node name (the placement audit tells int32 shape math, which TF keeps on the host, from data)."""
    from tensorflow.python.eager import context
    from tensorflow.python.framework import dtypes

    types = {}
    for name in context.context().list_function_names():
        try:
            definition = context.context().get_function_def(name)
        except tf.errors.NotFoundError:
            continue  # released between the listing and the lookup
        for node in definition.node_def:
            found = types.setdefault(node.name, set())
            for value in node.attr.values():
                if value.HasField("type"):
                    found.add(dtypes.as_dtype(value.type).name)
                elif value.HasField("list"):
                    found.update(dtypes.as_dtype(t).name for t in value.list.type)
    return {name: sorted(found) for name, found in types.items()}


def seeded_model():
    """The model with its seeded initial weights, and its data; in float64 for MODE `exact`."""
    keras.utils.set_random_seed(0)
    model = MODELS[MODEL]()
    x, y = data(model)
    if MODE == "exact":
        weights = model.get_weights()
        keras.config.set_dtype_policy("float64")
        keras.utils.set_random_seed(0)
        model = MODELS[MODEL]()
        model.set_weights([w.astype(np.float64) if w.dtype == np.float32 else w for w in weights])
        x = x.astype(np.float64) if x.dtype == np.float32 else x
    elif MODE.startswith("perturbed"):
        # Every initial weight moved by one float32 ulp, up or down at random.
        rng = np.random.default_rng(int(MODE.partition(":")[2] or 3))
        for w in model.trainable_variables:
            v = w.numpy()
            w.assign(np.nextafter(v, np.where(rng.random(v.shape) < 0.5, np.inf, -np.inf).astype(v.dtype)))
    return model, x, y


def stochastic(layer):
    """Whether `layer` or a layer inside it draws random numbers in training (dropout, noise):
    draws that differ between float32 and float64, so that MODE `exact` is no reference then."""
    random = tuple(getattr(layers, name) for name in ("Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout")
                   if hasattr(layers, name))
    return isinstance(layer, random) or any(stochastic(inner) for inner in getattr(layer, "layers", []))


def run():
    model, x, y = seeded_model()
    logits = model(x, training=False)
    # Also in a graph, as predict runs it (test_zoo.py compares both).
    graph_logits = model.predict_on_batch(x)
    optimizer = keras.optimizers.SGD(GRADIENT_LR)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [np.array(v.numpy(), np.float64) for v in model.trainable_variables]
    print("ZOO-AUDIT-BEGIN", file=sys.stderr, flush=True)
    model.train_on_batch(x, y)
    print("ZOO-AUDIT-END", file=sys.stderr, flush=True)
    grads = [(b - np.array(v.numpy(), np.float64)) / GRADIENT_LR for b, v in zip(before, model.trainable_variables)]
    node_types = function_node_types() if MODE == "wgpu" else {}
    result = {
        "logits": np.asarray(logits),
        "graph_logits": np.asarray(graph_logits),
        "grads": grads,
        "names": [v.path for v in model.trainable_variables],
        "device": model.trainable_variables[0].value.device,
        "dtype": str(model.trainable_variables[0].dtype),
        "stochastic": stochastic(model),
        "node_types": node_types,
    }
    if TIMED:
        for v, b in zip(model.trainable_variables, before):
            v.assign(b.astype(v.dtype))
        optimizer.learning_rate.assign(0.01)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            times.append(time.perf_counter() - start)
        result["step_seconds"] = float(np.median(times))
    return result


if MODE == "wgpu":
    with tf.device("/GPU:0"):
        scoped = run()
    unscoped = run()
    result = {"scoped": scoped, "unscoped": unscoped}
else:
    result = {"cpu": run()}
sys.stdout.flush()
zoo_results.write(OUT, result)
