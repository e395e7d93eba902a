"""One model of test_training_tracks_cpu.py, trained with each optimizer in one configuration, in its
own process:

    python training_worker.py MODEL MODE OUT.json [STEPS]

Trains MODEL (`mlp`, `cnn` or `transformer`, small standard Keras models with default arguments)
from the same seeded weights with Adam, RMSprop and SGD with momentum, STEPS (default 500)
`train_on_batch` steps each, under `compile()`'s defaults, and writes every step's loss. MODE `wgpu`
runs under `tf.device("/GPU:0")`. MODE `cpu` hides the GPU; the parent sets `TF_ENABLE_ONEDNN_OPTS`
to measure TF-CPU's own implementation noise (oneDNN's kernels against Eigen's). MODE
`cpu-perturbed[:SEED]` hides it too and moves every initial weight by one float32 ulp (up or down,
at random, drawn from SEED, default 3): how far one rounding difference at the start carries.
MODE `cpu-jitter[:SEED]` moves every weight by one ulp after every step instead (seed default 5):
what another kernel's rounding does step after step (an Eigen run takes the Transformer's Adam
run to a loss 2e-3 away by step 150, and so do these, where a one-time perturbation does not).
"""

import json
import os
import sys

import numpy as np

MODEL, MODE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 500

import tensorflow as tf  # noqa: E402

if MODE.startswith("cpu"):
    tf.config.set_visible_devices([], "GPU")
import keras  # noqa: E402
from keras import layers  # noqa: E402

BATCH = 32
CLASSES = 10


def mlp():
    inputs = keras.Input((64,))
    x = layers.Dense(64, activation="relu")(inputs)
    return keras.Model(inputs, layers.Dense(CLASSES)(x))


def cnn():
    inputs = keras.Input((16, 16, 1))
    x = layers.Conv2D(8, 3, activation="relu")(inputs)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(CLASSES)(x))


def transformer():
    inputs = keras.Input((16,), dtype="int32")
    x = layers.Embedding(50, 32)(inputs)
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
    x = layers.LayerNormalization()(x + attended)
    hidden = layers.Dense(64, activation="relu")(x)
    x = layers.LayerNormalization()(x + layers.Dense(32)(hidden))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, layers.Dense(CLASSES)(x))


def data(model, samples):
    """Learnable data, a fresh batch for every step (so the loss stays well above zero, where
    relative differences mean something): each class its own pattern plus noise; for the
    Transformer, tokens that follow the class's sequence a quarter of the time."""
    rng = np.random.default_rng(7)
    labels = rng.integers(0, CLASSES, samples).astype(np.int32)
    if model == "transformer":
        base = rng.integers(1, 50, (CLASSES, 16))
        noise = rng.integers(1, 50, (samples, 16))
        keep = rng.random((samples, 16)) < 0.25
        return np.where(keep, base[labels], noise).astype(np.int32), labels
    shape = (64,) if model == "mlp" else (16, 16, 1)
    centres = rng.normal(size=(CLASSES,) + shape)
    x = centres[labels] + NOISE[model] * rng.normal(size=(samples,) + shape)
    return x.astype(np.float32), labels


NOISE = {"mlp": 4.0, "cnn": 2.5}


OPTIMIZERS = {
    "Adam": lambda: keras.optimizers.Adam(1e-2),
    "RMSprop": lambda: keras.optimizers.RMSprop(1e-3),
    "SGD-momentum": lambda: keras.optimizers.SGD(1e-2, momentum=0.9),
}


def one_ulp_each(model, rng):
    """Moves every trainable weight by one float32 ulp, up or down at random."""
    for w in model.trainable_variables:
        v = w.numpy()
        toward = np.where(rng.random(v.shape) < 0.5, np.inf, -np.inf).astype(v.dtype)
        w.assign(np.nextafter(v, toward))


def train(optimizer):
    keras.utils.set_random_seed(1)
    model = {"mlp": mlp, "cnn": cnn, "transformer": transformer}[MODEL]()
    model.compile(optimizer=OPTIMIZERS[optimizer](),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    seed = MODE.partition(":")[2]
    if MODE.startswith("cpu-perturbed"):
        one_ulp_each(model, np.random.default_rng(int(seed or 3)))
    jitter = np.random.default_rng(int(seed or 5)) if MODE.startswith("cpu-jitter") else None
    x, y = data(MODEL, STEPS * BATCH)
    losses = []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        losses.append(float(model.train_on_batch(x[batch], y[batch])))
        if jitter is not None:
            one_ulp_each(model, jitter)
    return losses, model.trainable_variables[0].value.device


def main():
    result = {}
    for optimizer in OPTIMIZERS:
        if MODE == "wgpu":
            with tf.device("/GPU:0"):
                losses, device = train(optimizer)
        else:
            losses, device = train(optimizer)
        result[optimizer] = {"losses": losses, "device": device}
    with open(OUT, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
