"""Training tracks TF-CPU (issue 15): an MLP, a small CNN and a small Transformer, each trained for 150
steps (TF_WGPU_TRAINING_STEPS=500 for the long run) with Adam, RMSprop and SGD with momentum
(training_worker.py), step by step against TF-CPU.

Each step's loss must stay within 1e-4 (relative) of TF-CPU's. Training amplifies rounding
differences, and where a model is chaotic TF-CPU disagrees with itself too, so the bound widens to
10x TF-CPU's own noise. The noise is the largest of four runs against the TF-CPU reference:
TF-CPU with oneDNN off (other kernels, other rounding), TF-CPU from initial weights moved by one
ulp, and TF-CPU with every weight moved by one ulp after every step (two draws: what other
kernels' rounding does step after step). The jitter runs came in when CI's machine put our
Transformer's Adam and RMSprop runs 2e-3 and 7e-4 away from its TF-CPU by step 150 (first past 1e-4
at steps 76 and 77) while oneDNN-off and one-time perturbations stayed near 2e-7; on this
machine TF-CPU with oneDNN off, our direct matmul kernel and the jitter runs all take that same
path at those steps. All errors are running maxima over the steps so far. In a chaotic run the step
where a rounding difference takes off is itself random (CI once saw ours take off before all of
TF-CPU's own runs, then end below their noise), so the bound at a step is 10x the noise a tenth of
the run later; a systematic drift, like the old Adam one, shows from the first steps and on the
MLP, where nothing is chaotic. The table (`pytest -s`) shows, per run, our largest error, the noise
at that step, and the first step where our error passes 1e-4 and where the noise does.

Runs on TF 2.21 (a heavy suite); TF_WGPU_TRAINING_STEPS changes the step count.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = int(os.environ.get("TF_WGPU_TRAINING_STEPS", "150"))
BOUND = 1e-4
NOISE_FACTOR = 10
MODELS = ["mlp", "cnn", "transformer"]
# Steps by which our error may lead TF-CPU's noise (see above).
LEAD = STEPS // 10
CONFIGS = {"wgpu": ("wgpu", "1"), "cpu": ("cpu", "1"), "cpu-eigen": ("cpu", "0"), "cpu-perturbed": ("cpu-perturbed", "1"),
           "cpu-jitter": ("cpu-jitter", "1"), "cpu-jitter-2": ("cpu-jitter:9", "1")}
NOISE_RUNS = ["cpu-eigen", "cpu-perturbed", "cpu-jitter", "cpu-jitter-2"]
# The chaotic model gets four more jitter draws (seeds 13, 17, 21, 25). Two draws sample its
# bifurcations too thinly: on a 2-core Sapphire Rapids Xeon (AVX-512, AMX), stop 54's build and this
# one both took the Transformer's Adam run off at step 76 (2.4e-3 by step 150) while seeds 5 and 9
# stayed under 1e-4 until step 128; of the six seeds 5..25, seed 21's TF-CPU took off at step 76
# too (2.1e-3), seed 17's RMSprop at step 14.
EXTRA_JITTER = {"transformer": [13, 17, 21, 25]}


def configs(model):
    """The runs for `model`: CONFIGS and its extra jitter draws."""
    extra = {f"cpu-jitter-seed{seed}": (f"cpu-jitter:{seed}", "1") for seed in EXTRA_JITTER.get(model, [])}
    return {**CONFIGS, **extra}


def noise_runs(results):
    """The runs of `results` whose spread around TF-CPU is its noise."""
    return NOISE_RUNS + [name for name in results if name.startswith("cpu-jitter-seed")]

pytestmark = pytest.mark.skipif(
    not (tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"),
    reason="heavy suite: TF 2.21 only (TF_WGPU_HEAVY=1 runs it anywhere)")


def run_workers(model):
    with tempfile.TemporaryDirectory() as tmp:
        procs = {}
        for name, (mode, onednn) in configs(model).items():
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS=onednn)
            out = os.path.join(tmp, f"{name}.json")
            procs[name] = (subprocess.Popen([sys.executable, os.path.join(HERE, "training_worker.py"), model, mode,
                                             out, str(STEPS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=env), out)
        results = {}
        for name, (proc, out) in procs.items():
            stdout, stderr = proc.communicate(timeout=1800)
            assert proc.returncode == 0, f"{model} {name} failed:\n{stdout[-2000:]}\n{stderr[-6000:]}"
            with open(out) as f:
                results[name] = json.load(f)
    return results


def running_relative(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.maximum.accumulate(np.abs(got - want) / np.abs(want))


def first_over(curve, limit):
    over = np.nonzero(curve > limit)[0]
    return int(over[0]) if len(over) else None


def compare(results, optimizer):
    ref = results["cpu"][optimizer]["losses"]
    error = running_relative(results["wgpu"][optimizer]["losses"], ref)
    noise = np.max([running_relative(results[run][optimizer]["losses"], ref) for run in noise_runs(results)], axis=0)
    ahead = np.concatenate([noise[LEAD:], np.full(min(LEAD, len(noise)), noise[-1])])
    bound = np.maximum(BOUND, NOISE_FACTOR * ahead)
    worst = int(np.argmax(error / bound))
    return {
        "error": float(error[-1]),
        "noise": float(noise[-1]),
        "worst_step": worst,
        "worst_ratio": float(error[worst] / bound[worst]),
        "error_at_worst": float(error[worst]),
        "noise_at_worst": float(noise[worst]),
        "first_error_over": first_over(error, BOUND),
        "first_noise_over": first_over(noise, BOUND),
        "device": results["wgpu"][optimizer]["device"],
    }


@pytest.fixture(scope="module")
def table():
    rows = []
    yield rows
    print("\n| model | optimizer | max error | TF-CPU noise | worst error/bound (step) | first step over 1e-4: ours, "
          "noise |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['optimizer']} | {r['error']:.1e} | {r['noise']:.1e} | {r['worst_ratio']:.2f} "
              f"({r['worst_step']}) | {r['first_error_over']}, {r['first_noise_over']} |")


@pytest.mark.parametrize("model", MODELS)
def test_training_tracks_tf_cpu(model, table):
    results = run_workers(model)
    failures = []
    for optimizer in results["wgpu"]:
        row = {"model": model, "optimizer": optimizer, **compare(results, optimizer)}
        table.append(row)
        assert row["device"].endswith("GPU:0"), row
        if row["worst_ratio"] > 1:
            failures.append(row)
    assert not failures, "\n".join(
        f"{r['optimizer']}: error {r['error_at_worst']:.2e} at step {r['worst_step']} where the noise was "
        f"{r['noise_at_worst']:.2e} (ratio {r['worst_ratio']:.2f}); first over 1e-4: ours {r['first_error_over']}, "
        f"noise {r['first_noise_over']}" for r in failures)


def test_the_comparison_catches_a_drift():
    """A run that drifts by 1e-3 relative while TF-CPU agrees with itself fails the comparison."""
    ref = list(np.linspace(2.0, 1.0, 50))
    results = {"cpu": {"Adam": {"losses": ref}}, **{run: {"Adam": {"losses": ref}} for run in NOISE_RUNS},
               "wgpu": {"Adam": {"losses": list(np.array(ref) * (1 + 1e-3)), "device": "GPU:0"}}}
    assert compare(results, "Adam")["worst_ratio"] > 1
