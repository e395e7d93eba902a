"""Profiles a Keras training run on the WGPU device and prints the busiest ops of one step and the
device memory TF used.

    python examples/python/profile_keras.py [LOGDIR]

Keras's TensorBoard callback profiles batches 3 to 4; the profile lands in
LOGDIR/plugins/profile/<run>/<host>.xplane.pb (LOGDIR defaults to ./logs/profile_keras). Open it
with xprof (`pip install xprof`, then `xprof --logdir LOGDIR --port 6006`) or TensorBoard with
`tensorboard-plugin-profile`: the trace viewer shows a process `/device:GPU:0` with one line per
stream, every kernel dispatch, copy and submit on it; the op profile groups the device time by TF op.
"""

import collections
import glob
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

logdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("logs", "profile_keras")
keras = tf.keras

rng = np.random.default_rng(0)
x = rng.standard_normal((256, 32, 32, 3)).astype(np.float32)
y = rng.integers(0, 10, 256)

model = keras.Sequential([
    keras.Input((32, 32, 3)),
    keras.layers.Conv2D(16, 3, activation="relu"),
    keras.layers.MaxPooling2D(),
    keras.layers.Conv2D(32, 3, activation="relu"),
    keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dense(10),
])
# compile()'s defaults, as a CUDA user writes it.
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
tf.config.experimental.reset_memory_stats("GPU:0")
model.fit(x, y, batch_size=32, epochs=1, verbose=0,
          callbacks=[keras.callbacks.TensorBoard(log_dir=logdir, profile_batch=(3, 4))])

memory = tf.config.experimental.get_memory_info("GPU:0")
print(f"device memory: {memory['current'] / 2**20:.1f} MiB in use, peak {memory['peak'] / 2**20:.1f} MiB")

path = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1]
space = xplane_pb2.XSpace()
with open(path, "rb") as f:
    space.ParseFromString(f.read())
plane = next(p for p in space.planes if p.name == "/device:GPU:0")
stat_names = {i: m.name for i, m in plane.stat_metadata.items()}
busy = collections.Counter()
count = collections.Counter()
for line in plane.lines:
    if not line.name.startswith("Stream"):
        continue
    for event in line.events:
        stats = {stat_names[s.metadata_id]: s.str_value for s in event.stats}
        op = stats.get("tf_op", plane.event_metadata[event.metadata_id].name).rsplit(":", 1)[-1]
        busy[op] += event.duration_ps / 1e6
        count[op] += 1
print(f"profile: {path}")
print(f"{'op type':<28} {'events':>7} {'device µs (2 steps)':>20}")
for op, micros in busy.most_common(12):
    print(f"{op:<28} {count[op]:>7} {micros:>20.0f}")
