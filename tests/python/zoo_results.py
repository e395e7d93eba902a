"""How a zoo worker (zoo_worker.py) hands its result to test_zoo.py and benches/zoo_steps.py: one
`.npz` file. Arrays (logits, one gradient per variable) stay binary; the rest is a JSON string in
it. JSON for the gradients cost ResNet50 500 MB and 100 s per process to write, more to read.
"""

import json

import numpy as np

ARRAYS = ("logits", "graph_logits")


def write(path, runs):
    """`runs`: {run name: {"logits": array, "graph_logits": array, "grads": [array], other: JSON}}."""
    arrays, meta = {}, {}
    for run, result in runs.items():
        meta[run] = {key: value for key, value in result.items() if key not in ARRAYS + ("grads",)}
        meta[run]["grad_count"] = len(result["grads"])
        for key in ARRAYS:
            arrays[f"{run}.{key}"] = np.asarray(result[key]).ravel()
        for i, grad in enumerate(result["grads"]):
            arrays[f"{run}.grad.{i}"] = np.asarray(grad).ravel()
    with open(path, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **arrays)


def read(path):
    """The `runs` that `write` was given, arrays as float64."""
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        runs = {}
        for run, result in meta.items():
            count = result.pop("grad_count")
            for key in ARRAYS:
                result[key] = np.asarray(data[f"{run}.{key}"], np.float64)
            result["grads"] = [np.asarray(data[f"{run}.grad.{i}"], np.float64) for i in range(count)]
            runs[run] = result
    return runs
