"""The model zoo (issue 14): `keras.applications` models and hand-built standard Keras models, built
with default arguments, run as a CUDA user runs them (no `jit_compile` argument, under
`tf.device("/GPU:0")` and with no device scope), each against TF-CPU:

- inference logits equal TF-CPU's, within 3x TF-CPU's own logits noise;
- one training step's gradients equal TF-CPU's within TF-CPU's own implementation noise: the
  relative gradient difference between `TF_ENABLE_ONEDNN_OPTS=1` and `=0`, per variable; our
  error, median over variables, is at most 3x that noise's median. Where that difference
  understates the noise (both paths round alike), two wider measures decide: TF-CPU's gradient
  change when every initial weight moves by one ulp (a ReLU input within rounding of zero flips,
  and the gradient jumps), then TF-CPU's own error against the float64 gradient; ours must be
  within 3x either;
- a placement audit: every node of the training step that TF placed on the CPU is host-side work.

Each model runs in three processes at once (zoo_worker.py): WGPU, TF-CPU with oneDNN, TF-CPU
without; the wider noise measures take two or one more. The table is written to target/zoo-report.json and printed (`pytest -s`). Step times are
a benchmark's business: `benches/zoo_steps.py`. TF 2.21 runs the
zoo but DenseNet121 and EfficientNetB0 (7 of its 10 minutes on two cores); other versions run
`TF_WGPU_ZOO_MODELS` (a comma list, default the fast third of it), and `TF_WGPU_ZOO=1` runs all of
it anywhere.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf

import zoo_results

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "..", "..", "target", "zoo-report.json")

ALL_MODELS = ["MobileNetV2", "ResNet50", "EfficientNetB0", "DenseNet121", "ConvNeXtTiny", "LSTM-masked",
              "GRU-stack", "Bidirectional-masked", "Embedding-SGD", "U-Net", "Causal-decoder", "ViT-encoder"]
# The whole zoo takes 10 minutes here. CI's TF 2.21 run leaves out the two slowest applications whose
# layers the others cover (DenseNet121: convolutions, batch norms and concatenations, 140 s;
# EfficientNetB0: depthwise convolutions, swish and squeeze-excitation, as MobileNetV2 and
# ConvNeXtTiny, 70 s) to keep CI under an hour. Older TFs run the fast third (70 s), and
# TF_WGPU_ZOO=1 runs all of it anywhere.
CI_MODELS = [m for m in ALL_MODELS if m not in ("DenseNet121", "EfficientNetB0")]
FAST_MODELS = ["LSTM-masked", "Embedding-SGD", "U-Net", "ViT-encoder"]
# Eigen has no grouped convolution: the second TF-CPU reference is oneDNN without Grappler's fusions.
NO_EIGEN = {"ConvNeXtTiny"}
# TF-CPU's two float32 paths can round alike, so that their difference understates the noise:
# - ResNet50 (64x64, batch 4): both are 2.3e-2 from the exact gradient (median relative) but only
#   4.5e-3 from each other; ours, 2.2e-2 from it, read as 5.9x their difference.
# - DenseNet121: one batch-norm input of conv5's 2x2 maps is -2.2e-5 exactly. Ours (more accurate
#   than TF-CPU's at every block) lands on +8e-7, its ReLU opens, and every gradient upstream
#   moves by 1%; TF-CPU's paths both land on -2.9e-5, 1e-5 apart.
# Then one-ulp weights (zoo_worker.py MODE `perturbed`) measure TF-CPU's sensitivity (ResNet50
# 1.5e-2, DenseNet121 1.5e-2), and failing that, the exact gradient (TF-CPU in float64, MODE
# `exact`): our error against it must be at most 3x TF-CPU's own (the worse of its two paths).
GRADIENTS_OVER_BOUND = set()


def selected_models():
    if os.environ.get("TF_WGPU_ZOO") == "1":
        return ALL_MODELS
    listed = os.environ.get("TF_WGPU_ZOO_MODELS")
    if listed:
        return listed.split(",")
    return CI_MODELS if tf.__version__.startswith("2.21.") else FAST_MODELS


# What may run on the CPU in a training step: host-side work. TF keeps int32 tensors (shape math)
# and strings in host memory on GPUs, as on CUDA; NoOp carries no data. CudnnRNN's `host_reserved`
# is an int8 host-memory output, and its gradient a host-side ZerosLike. A function argument on the
# CPU is the step's batch arriving from host memory (Keras's data adapter: the train function's
# `data` arguments), copied in as with CUDA. bool masks derived from int32 tokens (Embedding's
# mask_zero) stay with them.
HOST_DTYPES = {"int32", "bool", "string"}
HOST_SIDE_NODES = {("NoOp", ()), ("ZerosLike", ("int8",))}
STEP_INPUT = re.compile(r"^data(_\d+)?$")


def host_side(node, types):
    if node["op"] == "_Arg":
        return bool(STEP_INPUT.match(node["node"]))
    dtypes = tuple(types.get(node["node"], ()))
    if node["node"] == "(eager)" or node["node"] not in types:
        return False
    return (node["op"], dtypes) in HOST_SIDE_NODES or (dtypes and set(dtypes) <= HOST_DTYPES)


# TF's placer logs each node of a function at INFO level, and the eager runtime each op it runs
# (so the WGPU worker runs with TF_CPP_MIN_LOG_LEVEL=0); the worker marks the training step's lines.
PLACER_LINE = re.compile(r"placer\.cc:\d+\] (?P<node>\S+): \((?P<op>[A-Za-z0-9_]+)\): (?P<device>/job:\S+)$")
EAGER_LINE = re.compile(r"execute\.cc:\d+\] Executing op (?P<op>[A-Za-z0-9_]+) in device (?P<device>/job:\S+)$")


def audit_lines(stderr):
    """The nodes and eager ops the worker's training step placed: (name, op type, device)."""
    text = stderr.split("ZOO-AUDIT-BEGIN")
    lines = "".join(part.split("ZOO-AUDIT-END")[0] for part in text[1:]).splitlines()
    placed = []
    for line in lines:
        m = PLACER_LINE.search(line) or EAGER_LINE.search(line)
        if m:
            found = m.groupdict()
            placed.append({"node": found.get("node", "(eager)"), "op": found["op"], "device": found["device"]})
    return placed


def start_worker(model, mode, onednn, out):
    level = "0" if mode == "wgpu" else "1"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=level, TF_ENABLE_ONEDNN_OPTS=onednn)
    if mode == "cpu" and onednn == "0" and model in NO_EIGEN:
        env.update(TF_ENABLE_ONEDNN_OPTS="1", TF_WGPU_ZOO_UNFUSED="1")
    return subprocess.Popen([sys.executable, os.path.join(HERE, "zoo_worker.py"), model, mode, out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_side_by_side(model, configs):
    """Workers for `configs` ((mode, oneDNN) pairs) at once: each one's results and stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"{i}.npz") for i in range(len(configs))]
        workers = [start_worker(model, mode, onednn, out) for (mode, onednn), out in zip(configs, outs)]
        finished = []
        for worker, out, config in zip(workers, outs, configs):
            stdout, stderr = worker.communicate(timeout=1800)
            # The WGPU worker's stderr is mostly the placer's log: show the traceback.
            error = stderr[stderr.rfind("Traceback"):] if "Traceback" in stderr else stderr[-8000:]
            assert worker.returncode == 0 and os.path.exists(out), (
                f"{model} {config} failed (exit {worker.returncode}):\n{stdout[-2000:]}\n{error[-8000:]}")
            finished.append((zoo_results.read(out), stderr))
    return finished


def run_workers(model):
    """The WGPU run with its placer log, and the TF-CPU runs with oneDNN on and off, side by side."""
    finished = run_side_by_side(model, [("wgpu", "1"), ("cpu", "1"), ("cpu", "0")])
    return [result for result, _ in finished], audit_lines(finished[0][1])


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def gradient_errors(got, ref):
    return [relative(g, r) for g, r in zip(got["grads"], ref["grads"])]


def cpu_runs(model, modes):
    """TF-CPU workers' results (MODE `cpu`, `exact` or `perturbed:SEED`, oneDNN on), side by side."""
    return [result["cpu"] for result, _ in run_side_by_side(model, [(mode, "1") for mode in modes])]


def exact_gradients(model):
    """The training step's gradients computed by TF-CPU in float64 (zoo_worker.py MODE `exact`)."""
    return cpu_runs(model, ["exact"])[0]


def perturbed_noise(model, cpu):
    """TF-CPU's sensitivity to float32 rounding: the gradient difference when every initial weight
    moves by one ulp (two draws, the worse one). Where a ReLU input or a max is within rounding of a
    tie, any float32 implementation may take the other side, and the gradient jumps (DenseNet121:
    one element of a 16-element batch-norm population at -2.2e-5 flips, and every gradient
    upstream moves by 1%); the oneDNN-on/off difference misses that when both paths round alike."""
    runs = cpu_runs(model, ["perturbed:1", "perturbed:2"])
    return max(float(np.median(gradient_errors(run, cpu))) for run in runs)


# TF-CPU's two paths can agree exactly (no convolution or matmul that oneDNN changes); the noise
# is then floored at a few float32 roundings.
NOISE_FLOOR = 1e-6


@pytest.fixture(scope="module")
def report():
    rows = {}
    yield rows
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    with open(REPORT, "w") as f:
        json.dump(rows, f, indent=1)
    print("\nmodel | logits err (rel) | CPU noise | grad err (median) | CPU noise (median) | ratio | "
          "CPU-placed node types (of nodes)")
    for name, row in rows.items():
        print(f"{name} | {row['logits_error']:.2e} | {row['logits_noise']:.2e} | {row['grad_error']:.2e} | "
              f"{row['grad_noise']:.2e} | {row['grad_ratio']:.2f} | {','.join(row['cpu_ops']) or '-'} "
              f"({row['cpu_nodes']} of {row['placed_nodes']})")
        if "perturbed_ratio" in row:
            print(f"  {name} against TF-CPU with one-ulp weights: noise {row['perturbed_noise']:.2e}, "
                  f"ratio {row['perturbed_ratio']:.2f}")
        if "exact_ratio" in row:
            print(f"  {name} against the float64 gradient: ours {row['exact_grad_error']:.2e}, TF-CPU "
                  f"{row['exact_cpu_error']:.2e}, ratio {row['exact_ratio']:.2f}")


def marked(models, known, reason, strict):
    return [pytest.param(m, marks=pytest.mark.xfail(reason=reason, strict=strict)) if m in known else m
            for m in models]


@pytest.mark.parametrize("model", marked(selected_models(), GRADIENTS_OVER_BOUND,
                                         "gradients over 3x TF-CPU's noise (see GRADIENTS_OVER_BOUND)", False))
def test_zoo_model_matches_tf_cpu(model, report):
    (wgpu, cpu, plain), placed = run_workers(model)
    cpu, plain = cpu["cpu"], plain["cpu"]
    types = {**wgpu["scoped"]["node_types"], **wgpu["unscoped"]["node_types"]}
    cpu_nodes = [p for p in placed if p["device"].endswith("CPU:0")]
    cpu_ops = sorted({f"{p['op']}({','.join(types.get(p['node'], ['?']))})" for p in cpu_nodes})
    off_device = sorted({f"{p['node']} ({p['op']})" for p in cpu_nodes if not host_side(p, types)})
    logits_noise = relative(plain["logits"], cpu["logits"])
    grad_noise = float(np.median(gradient_errors(plain, cpu)))
    rows = {}
    for run in ("scoped", "unscoped"):
        got = wgpu[run]
        assert got["device"].endswith("GPU:0"), f"{run}: variables on {got['device']}"
        # A second model in one process gets `_1` suffixes on its layers' names.
        assert [re.sub(r"_\d+(?=/|$)", "", n) for n in got["names"]] == [re.sub(r"_\d+(?=/|$)", "", n) for n in cpu["names"]]
        rows[run] = {
            "logits": relative(got["logits"], cpu["logits"]),
            "graph_logits": relative(got["graph_logits"], cpu["graph_logits"]),
            "grads": float(np.median(gradient_errors(got, cpu))),
        }
    worst = max(rows.values(), key=lambda r: r["grads"])
    report[model] = {
        "logits_error": max(r["logits"] for r in rows.values()),
        "graph_logits_error": max(r["graph_logits"] for r in rows.values()),
        "logits_noise": logits_noise,
        "grad_error": worst["grads"],
        "grad_noise": grad_noise,
        "grad_ratio": worst["grads"] / max(grad_noise, NOISE_FLOOR),
        "cpu_ops": cpu_ops,
        "cpu_nodes": len(cpu_nodes),
        "placed_nodes": len(placed),
    }
    row = report[model]
    if row["grad_ratio"] > 3 and not cpu["stochastic"]:
        noise = perturbed_noise(model, cpu)
        row.update(perturbed_noise=noise, perturbed_ratio=worst["grads"] / max(noise, NOISE_FLOOR))
    if row["grad_ratio"] > 3 and row.get("perturbed_ratio", np.inf) > 3 and not cpu["stochastic"]:
        exact = exact_gradients(model)
        # The reference must be this model: float64 weights, and inference logits (no dropout
        # there) that TF-CPU's float32 run reproduces.
        assert exact["dtype"] == "float64" and relative(cpu["logits"], exact["logits"]) < 1e-4, (
            exact["dtype"], relative(cpu["logits"], exact["logits"]))
        ours = max(float(np.median(gradient_errors(wgpu[run], exact))) for run in ("scoped", "unscoped"))
        theirs = max(float(np.median(gradient_errors(ref, exact))) for ref in (cpu, plain))
        row.update(exact_grad_error=ours, exact_cpu_error=theirs, exact_ratio=ours / max(theirs, NOISE_FLOOR))
    assert placed, "the placement audit saw no node of the training step"
    # Against the wider noise: within 3x TF-CPU's sensitivity to one-ulp weights, or within 3x
    # TF-CPU's own error against the exact gradient; either must itself be small enough (10%) for
    # the comparison to tell anything.
    perturbed_ok = row.get("perturbed_ratio", np.inf) <= 3 and row.get("perturbed_noise", np.inf) <= 0.1
    exact_ok = row.get("exact_ratio", np.inf) <= 3 and row.get("exact_cpu_error", np.inf) <= 0.1
    assert row["grad_ratio"] <= 3 or perturbed_ok or exact_ok, row
    assert not off_device, f"training-step work on the CPU: {off_device}"


@pytest.mark.parametrize("model", selected_models())
def test_zoo_inference_matches_tf_cpu(model, report):
    """Inference logits, eager and through `predict_on_batch`, against TF-CPU's, from the run above."""
    if model not in report:
        pytest.skip("the model's main zoo test did not record a result")
    row = report[model]
    bound = max(3 * row["logits_noise"], 1e-5)
    assert row["logits_error"] <= bound and row["graph_logits_error"] <= bound, row


def test_wider_references_on_a_smooth_model():
    """The wider references, on a small deterministic model (the GRU stack). MODE `exact`: float64
    variables, TF-CPU's float32 logits reproduced, TF-CPU's float32 gradients close to it. MODE
    `perturbed`: weights moved, gradients within rounding where nothing is near a tie."""
    model = "GRU-stack"
    exact, cpu, perturbed = cpu_runs(model, ["exact", "cpu", "perturbed:1"])
    assert exact["dtype"] == "float64" and cpu["dtype"] == "float32"
    # MODE `perturbed` moves the weights (its logits differ) by no more than rounding.
    assert 0 < relative(perturbed["logits"], cpu["logits"]) < 1e-5
    assert 0 < float(np.median(gradient_errors(perturbed, cpu))) < 1e-4
    assert not exact["stochastic"] and not cpu["stochastic"]
    assert relative(cpu["logits"], exact["logits"]) < 1e-5
    assert float(np.median(gradient_errors(cpu, exact))) < 1e-4
