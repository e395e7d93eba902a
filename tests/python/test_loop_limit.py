"""Pool windows in passes (issue 16), on small shapes: loop_limit_worker.py runs every pool kernel
that splits its windows under TF_WGPU_LOOP_LIMIT=64, in its own process, against TF-CPU.

llvmpipe ends an invocation's loops past 65,535 iterations; the pools, MaxPoolWithArgmax and the
pool gradients then run in passes of window rows (or of the rows of the windows covering an
element), and rows wider than the limit in passes of their taps. Under the real limit those paths
need windows of 65,536 taps (test_ops.py::test_pools_past_the_loop_limit); the lowered limit
reaches all of them in seconds, with ties across passes and every padding, stride and layout
case, and on a GPU (no limit of its own) too. The plugin logs each split (TF_WGPU_LOG debug), so the
test also fails if the limit was not lowered.
"""

import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 64


@pytest.fixture(scope="module")
def worker():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_WGPU_LOOP_LIMIT=str(LIMIT),
               TF_WGPU_LOG="warn,tensorflow_wgpu::kernels=debug")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "loop_limit_worker.py")], capture_output=True,
                          text=True, env=env, timeout=900)
    records = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            records[record["case"]] = record
    assert records, f"the worker printed nothing (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    return records, proc.stderr


def case_names():
    source = open(os.path.join(HERE, "loop_limit_worker.py")).read()
    block = source[source.index("CASES = {"):source.index("\n}\n", source.index("CASES = {"))]
    return re.findall(r'^    "([^"]+)": ', block, re.M)


@pytest.mark.parametrize("case", case_names())
def test_pools_in_passes_match_tf_cpu(worker, case):
    records, stderr = worker
    assert case in records, f"no result for {case}:\n{stderr[-3000:]}"
    assert records[case]["ok"], records[case]["detail"]


# Every entry that runs in passes, in passes of rows and in passes of one row's taps.
ENTRIES = {
    "conv": ["max_pool", "avg_pool", "max_pool_c4", "avg_pool_c4", "max_pool_argmax", "max_pool_grad_argmax",
             "max_pool_grad_routed", "max_pool_grad_grad", "avg_pool_grad"],
    "volume": ["max_pool", "avg_pool", "max_pool_grad", "max_pool_grad_grad", "avg_pool_grad"],
}


@pytest.mark.parametrize("split", ["rows", "taps"])
@pytest.mark.parametrize("family", sorted(ENTRIES))
def test_every_pass_path_ran(worker, family, split):
    _, stderr = worker
    seen = set(re.findall(rf"{family} (\w+): \d+ passes of {split}", stderr))
    missing = sorted(set(ENTRIES[family]) - seen)
    assert not missing, f"{family} entries that never ran in passes of {split}: {missing}"
