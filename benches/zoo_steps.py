"""Training-step time of the zoo's models (tests/python/zoo_worker.py), WGPU against TF-CPU: each
model's Keras `train_on_batch` step (SGD; the zoo's inputs: keras.applications at 64x64, batch 4,
the others batch 2), the median of three after the first, in a WGPU process (under
`tf.device("/GPU:0")`, placement logging off) and a TF-CPU process run one after the other (never
side by side, so that they do not share the two cores).

    .venv/bin/python benches/zoo_steps.py [MODEL ...]
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "tests", "python", "zoo_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import zoo_results  # noqa: E402
from test_zoo import ALL_MODELS, NO_EIGEN  # noqa: E402


def step_seconds(model, mode):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.npz")
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        if mode == "cpu" and model in NO_EIGEN:
            # TF-CPU runs grouped convolutions only through oneDNN (off by default on some CPUs).
            env["TF_ENABLE_ONEDNN_OPTS"] = "1"
        subprocess.run([sys.executable, WORKER, model, mode, out, "--time"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = zoo_results.read(out)
    return result["scoped" if mode == "wgpu" else "cpu"]["step_seconds"]


def main():
    models = sys.argv[1:] or ALL_MODELS
    rows = []
    for model in models:
        wgpu, cpu = step_seconds(model, "wgpu"), step_seconds(model, "cpu")
        rows.append((model, wgpu, cpu))
        print(f"{model:22s} WGPU {wgpu * 1e3:9.1f} ms   TF-CPU {cpu * 1e3:9.1f} ms   WGPU/CPU {wgpu / cpu:6.2f}",
              flush=True)
    worst = max(rows, key=lambda r: r[1] / r[2])
    print(f"summary: {len(rows)} models, worst {worst[0]} at {worst[1] / worst[2]:.2f}x TF-CPU's step time")


if __name__ == "__main__":
    main()
