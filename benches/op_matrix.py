"""The benchmark matrix of issue 18: the layer shapes of the zoo's models (ResNet50, MobileNetV2,
EfficientNetB0 at 224x224, batch 4), a Transformer block, an LSTM, and the issue's MLP and small
CNN, each op forward and backward, timed on /GPU:0 (WGPU) and /CPU:0 in one process and printed
worst WGPU/CPU ratio first; then whole Keras training steps of the MLP and the CNN, and the forward
pass of Keras's ResNet50 at 64x64, batch 4.

    .venv/bin/python benches/op_matrix.py [--quick] [--only SUBSTRING] [--no-steps] [--zoo] [--profile]

`--zoo` adds the zoo models' training steps (benches/zoo_steps.py, a subprocess per model and
device; several minutes). `--profile` also runs each WGPU row under TF's profiler and prints where
its device time went: each kernel (dispatch label), its dispatches and GPU-timestamped time per run
(profiling puts each dispatch in a pass of its own, so these times run above the unprofiled ones). Each figure is the best of the repeats after one warm-up run, ending
with a one-element fetch that waits for the device. Compare rows of one run: the two devices share
the machine's cores, one after the other.
"""

import argparse
import time

import numpy as np
import tensorflow as tf

GPU, CPU = "/GPU:0", "/CPU:0"
RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def wait(result):
    """Fetches one element of the (first) result: the device has then finished the work."""
    t = result[0] if isinstance(result, (list, tuple)) else result
    tf.reshape(t, [-1])[:1].numpy()


def best_time(fn, repeats):
    wait(fn())
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        wait(fn())
        best = min(best, time.perf_counter() - start)
    return best


class Row:
    """One benchmark: `op(*tensors)` on arrays `arrays`, moved to each device first."""

    def __init__(self, model, name, arrays, op):
        self.model, self.name, self.arrays, self.op = model, name, arrays, op

    def time(self, device, repeats):
        with tf.device(device):
            tensors = [tf.identity(a) for a in self.arrays]
            return best_time(lambda: self.op(*tensors), repeats)


def kernel_profile(row, runs=3):
    """(kernel, dispatches, ms) per run of `row` on WGPU, most device time first, from the plugin's
    GPU timestamps in a TF profile."""
    with tf.device(GPU):
        tensors = [tf.identity(a) for a in row.arrays]
        wait(row.op(*tensors))
        return profiled(lambda: wait(row.op(*tensors)), runs)


def profiled(run, runs):
    """(kernel, dispatches, ms) per call of `run` (which waits for the device), most device time
    first, from the plugin's GPU timestamps in a TF profile of `runs` calls."""
    import collections
    import glob
    import tempfile

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    logdir = tempfile.mkdtemp(prefix="op_matrix_profile_")
    tf.profiler.experimental.start(logdir)
    for _ in range(runs):
        run()
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    plane = next(p for p in space.planes if p.name == "/device:GPU:0")
    ms, count = collections.Counter(), collections.Counter()
    for line in plane.lines:
        if line.name == "Submits":
            continue
        for event in line.events:
            name = plane.event_metadata[event.metadata_id].name
            ms[name] += event.duration_ps / 1e9 / runs
            count[name] += 1 / runs
    return [(name, count[name], t) for name, t in ms.most_common()]


def same_out(size, stride):
    return (size + stride - 1) // stride


def conv_rows(model, label, n, h, c, oc, k, stride):
    """Conv2D forward and both backprops, SAME padding, NHWC."""
    strides = [1, stride, stride, 1]
    oh = same_out(h, stride)
    x, f, dy = normal(n, h, h, c), normal(k, k, c, oc), normal(n, oh, oh, oc)
    shape = f"{k}x{k}/{stride} {n}x{h}x{h}x{c}->{oc}"
    return [
        Row(model, f"{label} Conv2D {shape}", [x, f],
            lambda x, f: tf.nn.conv2d(x, f, strides, "SAME")),
        Row(model, f"{label} Conv2DBackpropInput {shape}", [f, dy],
            lambda f, dy: tf.raw_ops.Conv2DBackpropInput(input_sizes=[n, h, h, c], filter=f, out_backprop=dy,
                                                         strides=strides, padding="SAME")),
        Row(model, f"{label} Conv2DBackpropFilter {shape}", [x, dy],
            lambda x, dy: tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[k, k, c, oc], out_backprop=dy,
                                                          strides=strides, padding="SAME")),
    ]


def depthwise_rows(model, label, n, h, c, k, stride):
    strides = [1, stride, stride, 1]
    oh = same_out(h, stride)
    x, f, dy = normal(n, h, h, c), normal(k, k, c, 1), normal(n, oh, oh, c)
    shape = f"{k}x{k}/{stride} {n}x{h}x{h}x{c}"
    return [
        Row(model, f"{label} DepthwiseConv2dNative {shape}", [x, f],
            lambda x, f: tf.nn.depthwise_conv2d(x, f, strides, "SAME")),
        Row(model, f"{label} DepthwiseBackpropInput {shape}", [f, dy],
            lambda f, dy: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
                input_sizes=[n, h, h, c], filter=f, out_backprop=dy, strides=strides, padding="SAME")),
        Row(model, f"{label} DepthwiseBackpropFilter {shape}", [x, dy],
            lambda x, dy: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
                input=x, filter_sizes=[k, k, c, 1], out_backprop=dy, strides=strides, padding="SAME")),
    ]


def batch_norm_rows(model, label, shape):
    c = shape[-1]
    x, dy, scale, offset = normal(*shape), normal(*shape), normal(c), normal(c)
    mean, var = np.zeros(c, np.float32), np.ones(c, np.float32)
    text = "x".join(map(str, shape))
    return [
        Row(model, f"{label} FusedBatchNormV3 training {text}", [x, scale, offset],
            lambda x, s, o: tf.raw_ops.FusedBatchNormV3(x=x, scale=s, offset=o, mean=[], variance=[],
                                                        is_training=True)[0]),
        Row(model, f"{label} FusedBatchNormGradV3 {text}", [dy, x, scale, mean, var],
            lambda dy, x, s, m, v: tf.raw_ops.FusedBatchNormGradV3(
                y_backprop=dy, x=x, scale=s, reserve_space_1=m, reserve_space_2=v, reserve_space_3=m,
                is_training=True)[0]),
    ]


def pool_rows(model, label, shape, k, stride):
    n, h, _, c = shape
    x = normal(*shape)
    ksize, strides = [1, k, k, 1], [1, stride, stride, 1]
    y = tf.nn.max_pool2d(x, ksize, strides, "SAME").numpy()
    dy = normal(*y.shape)
    text = f"{k}x{k}/{stride} " + "x".join(map(str, shape))
    return [
        Row(model, f"{label} MaxPool {text}", [x], lambda x: tf.nn.max_pool2d(x, ksize, strides, "SAME")),
        Row(model, f"{label} MaxPoolGrad {text}", [x, y, dy],
            lambda x, y, dy: tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy, ksize=ksize,
                                                    strides=strides, padding="SAME")),
    ]


def matmul_rows(model, label, m, k, n, batch=None):
    lead = [batch] if batch else []
    a, b, dc = normal(*lead, m, k), normal(*lead, k, n), normal(*lead, m, n)
    text = (f"{batch}x" if batch else "") + f"{m}x{k}x{n}"
    op = "BatchMatMul" if batch else "MatMul"
    return [
        Row(model, f"{label} {op} {text}", [a, b], lambda a, b: tf.matmul(a, b)),
        Row(model, f"{label} {op} grad A {text}", [dc, b], lambda dc, b: tf.matmul(dc, b, transpose_b=True)),
        Row(model, f"{label} {op} grad B {text}", [a, dc], lambda a, dc: tf.matmul(a, dc, transpose_a=True)),
    ]


def softmax_rows(model, label, shape):
    x = normal(*shape)
    text = "x".join(map(str, shape))
    return [Row(model, f"{label} Softmax {text}", [x], tf.nn.softmax)]


def reduction_rows():
    x = normal(4, 56, 56, 256)
    return [
        Row("reductions", "Sum all 4x56x56x256", [x], lambda x: tf.reduce_sum(x)),
        Row("reductions", "Sum last axis 4x56x56x256", [x], lambda x: tf.reduce_sum(x, -1)),
        Row("reductions", "Mean over H,W 4x56x56x256", [x], lambda x: tf.reduce_mean(x, [1, 2])),
        Row("reductions", "Max last axis 4x56x56x256", [x], lambda x: tf.reduce_max(x, -1)),
    ]


def layer_row(model, name, make_layer, input_shape, call=lambda layer, x: layer(x)):
    """A Keras layer's forward and backward pass (gradients of the sum of its output)."""
    x = normal(*input_shape)
    layers = {}

    def run(x):
        device = x.device
        if device not in layers:
            layers[device] = make_layer()
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = call(layers[device], x)
            loss = tf.reduce_sum(y)
        return tape.gradient(loss, [x] + layers[device].trainable_variables)

    return Row(model, name, [x], run)


def rows():
    import keras
    out = []
    # ResNet50 at 224x224, batch 4 (v1.5: stride 2 on the 3x3 of a stage's first block).
    out += conv_rows("ResNet50", "stem", 4, 224, 3, 64, 7, 2)
    out += conv_rows("ResNet50", "stage2", 4, 56, 64, 64, 3, 1)
    out += conv_rows("ResNet50", "stage2 1x1", 4, 56, 64, 256, 1, 1)
    out += conv_rows("ResNet50", "stage3 down", 4, 56, 128, 128, 3, 2)
    out += conv_rows("ResNet50", "stage3 shortcut", 4, 56, 256, 512, 1, 2)
    out += conv_rows("ResNet50", "stage5", 4, 7, 512, 512, 3, 1)
    out += batch_norm_rows("ResNet50", "stage2", [4, 56, 56, 256])
    out += pool_rows("ResNet50", "stem", [4, 112, 112, 64], 3, 2)
    out += matmul_rows("ResNet50", "head", 4, 2048, 1000)
    # MobileNetV2 at 224x224, batch 4.
    out += depthwise_rows("MobileNetV2", "block1", 4, 112, 32, 3, 1)
    out += depthwise_rows("MobileNetV2", "block2", 4, 112, 96, 3, 2)
    out += conv_rows("MobileNetV2", "expand", 4, 56, 24, 144, 1, 1)
    # EfficientNetB0 at 224x224, batch 4.
    out += depthwise_rows("EfficientNetB0", "stage4", 4, 28, 240, 5, 1)
    out += conv_rows("EfficientNetB0", "project", 4, 28, 240, 40, 1, 1)
    # A Transformer block: batch 8, 128 tokens, width 256, 4 heads.
    out += matmul_rows("Transformer", "QK^T", 128, 64, 128, batch=32)
    out += softmax_rows("Transformer", "scores", [32, 128, 128])
    out += matmul_rows("Transformer", "FFN", 1024, 256, 1024)
    out.append(layer_row("Transformer", "MultiHeadAttention fwd+bwd 8x128x256",
                         lambda: keras.layers.MultiHeadAttention(4, 64), [8, 128, 256],
                         call=lambda layer, x: layer(x, x)))
    out.append(layer_row("Transformer", "LayerNormalization fwd+bwd 8x128x256",
                         keras.layers.LayerNormalization, [8, 128, 256]))
    # An LSTM: batch 32, 50 steps, 64 features, 128 units.
    out.append(layer_row("LSTM", "LSTM fwd+bwd 32x50x64->128", lambda: keras.layers.LSTM(128), [32, 50, 64]))
    out.append(layer_row("LSTM", "GRU fwd+bwd 32x50x64->128", lambda: keras.layers.GRU(128), [32, 50, 64]))
    # The MLP (batch 128, 256-512-512-10) and small CNN (batch 32 of 32x32x3).
    out += matmul_rows("MLP", "layer 2", 128, 512, 512)
    out += conv_rows("CNN", "conv1", 32, 32, 3, 32, 3, 1)
    out += conv_rows("CNN", "conv2", 32, 16, 32, 64, 3, 1)
    out += batch_norm_rows("CNN", "conv2", [32, 16, 16, 64])
    out += pool_rows("CNN", "pool", [32, 32, 32, 32], 2, 2)
    out += reduction_rows()
    out += matmul_rows("matmul", "square", 1024, 1024, 1024)
    return out


def small_models():
    import keras
    from keras import layers

    def mlp():
        return keras.Sequential([keras.Input((256,)), layers.Dense(512, activation="relu"),
                                 layers.Dense(512, activation="relu"), layers.Dense(10)]), (128, 256)

    def cnn():
        return keras.Sequential([
            keras.Input((32, 32, 3)), layers.Conv2D(32, 3, padding="same"), layers.BatchNormalization(),
            layers.ReLU(), layers.MaxPooling2D(), layers.Conv2D(64, 3, padding="same"),
            layers.BatchNormalization(), layers.ReLU(), layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10),
        ]), (32, 32, 32, 3)

    return {"MLP 256-512-512-10, batch 128": mlp, "CNN 2x conv3x3+BN+pool, batch 32 of 32x32x3": cnn}


def step_seconds(build, device, repeats, profile=False):
    """The best time of one `train_on_batch` step; with `profile`, also the step's device time by
    kernel (see `profiled`)."""
    import keras
    keras.utils.set_random_seed(0)
    with tf.device(device):
        model, shape = build()
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x, y = normal(*shape), RNG.integers(0, 10, shape[0])
        model.train_on_batch(x, y)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            best = min(best, time.perf_counter() - start)
        if profile:
            return best, profiled(lambda: model.train_on_batch(x, y), 3)
    return best


def resnet50_forward_seconds(device, repeats):
    """The best time of one forward pass (inference, a compiled `tf.function` as Keras's `predict`
    runs it) of Keras's ResNet50 (weights=None) at 64x64, batch 4: issue 18's forward goal."""
    import keras
    keras.utils.set_random_seed(0)
    with tf.device(device):
        model = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3))
        x = tf.identity(normal(4, 64, 64, 3))
        forward = tf.function(lambda x: model(x, training=False))
        return best_time(lambda: forward(x), repeats)


def table(results):
    lines = ["| model | op | WGPU ms | TF-CPU ms | WGPU/CPU |", "|---|---|---|---|---|"]
    for model, name, wgpu, cpu in sorted(results, key=lambda r: -r[2] / r[3]):
        lines.append(f"| {model} | {name} | {wgpu * 1e3:.2f} | {cpu * 1e3:.2f} | {wgpu / cpu:.1f}x |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one timed run per row instead of three")
    parser.add_argument("--only", default="", help="rows whose model or op contains this")
    parser.add_argument("--no-steps", action="store_true", help="skip the Keras training steps")
    parser.add_argument("--zoo", action="store_true", help="add the zoo models' training steps")
    parser.add_argument("--profile", action="store_true", help="print each row's device time by kernel")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    results = []
    for row in rows():
        if args.only and args.only not in f"{row.model} {row.name}":
            continue
        try:
            wgpu, cpu = row.time(GPU, repeats), row.time(CPU, repeats)
        except Exception as e:  # reported, never timed on the CPU in the GPU's place
            print(f"{row.model}: {row.name}: not run: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        results.append((row.model, row.name, wgpu, cpu))
        print(f"{row.model:14s} {row.name:58s} {wgpu * 1e3:9.2f} ms {cpu * 1e3:9.2f} ms {wgpu / cpu:7.1f}x",
              flush=True)
        if args.profile:
            for kernel, dispatches, ms in kernel_profile(row)[:6]:
                print(f"{'':16s}{ms:8.2f} ms  {dispatches:6.1f} x  {kernel}", flush=True)
    steps = []
    if not args.no_steps:
        for name, build in small_models().items():
            if args.only and args.only not in name:
                continue
            wgpu, cpu = step_seconds(build, GPU, repeats + 2), step_seconds(build, CPU, repeats + 2)
            steps.append(("training step", name, wgpu, cpu))
            print(f"training step  {name:58s} {wgpu * 1e3:9.2f} ms {cpu * 1e3:9.2f} ms {wgpu / cpu:7.1f}x", flush=True)
            if args.profile:
                _, kernels = step_seconds(build, GPU, 1, profile=True)
                for kernel, dispatches, ms in kernels[:12]:
                    print(f"{'':16s}{ms:8.2f} ms  {dispatches:6.1f} x  {kernel}", flush=True)
    if not args.no_steps and (not args.only or args.only in "ResNet50 forward 64x64, batch 4"):
        wgpu, cpu = resnet50_forward_seconds(GPU, repeats + 2), resnet50_forward_seconds(CPU, repeats + 2)
        steps.append(("forward pass", "ResNet50 64x64, batch 4", wgpu, cpu))
        print(f"forward pass   {'ResNet50 64x64, batch 4':58s} {wgpu * 1e3:9.2f} ms {cpu * 1e3:9.2f} ms {wgpu / cpu:7.1f}x",
              flush=True)
    if args.zoo:
        import os
        import sys
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import zoo_steps
        from test_zoo import ALL_MODELS
        for model in ALL_MODELS:
            wgpu, cpu = zoo_steps.step_seconds(model, "wgpu"), zoo_steps.step_seconds(model, "cpu")
            steps.append(("zoo training step", model, wgpu, cpu))
            print(f"zoo step       {model:58s} {wgpu * 1e3:9.2f} ms {cpu * 1e3:9.2f} ms {wgpu / cpu:7.1f}x", flush=True)
    print("\nOps, worst WGPU/CPU first:\n")
    print(table(results))
    if steps:
        print("\nTraining steps:\n")
        print(table(steps))
    over = [r for r in results if r[2] / r[3] > 8]
    print(f"\n{len(over)} of {len(results)} op rows over 8x TF-CPU")


if __name__ == "__main__":
    main()
