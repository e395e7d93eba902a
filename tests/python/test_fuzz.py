"""Adversarial fuzzing of every registered (op, dtype) (issue 20, item 2): see fuzz_kernels.py.

A fixed seed runs 5,000 cases (about a minute on two cores); TF_WGPU_FUZZ_CASES=N runs N. Cases
run in worker processes with soft placement off, so a crash or a hang is pinned to its case and the
run goes on. The test fails on any crash, hang, caught Rust panic, silent difference from TF-CPU
(or from TF-GPU's documented answer) outside the known divergences that fuzz_kernels.py names and
lists, or `Unimplemented` where TF-CPU runs the op (the registration audit of issue 16: a registered
kernel must serve its op's whole domain; only the adapter's resource limits may refuse); it prints the totals, which are also written to target/fuzz-report.json when target/ exists.

Heavy: runs on the newest TensorFlow of the CI matrix only (2.21), or anywhere with TF_WGPU_FUZZ=1.
"""

import json
import os
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_kernels  # noqa: E402

SEED = 20
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(
    not (tf.__version__.startswith("2.21") or os.environ.get("TF_WGPU_FUZZ") == "1"),
    reason="the kernel fuzzer runs on TF 2.21 only (set TF_WGPU_FUZZ=1 to run it here)",
)


def test_fuzz_every_kernel():
    n_cases = int(os.environ.get("TF_WGPU_FUZZ_CASES", 5000))
    totals = fuzz_kernels.run_fuzz(n_cases, seed=SEED, workers=2, case_timeout=60)
    report = fuzz_kernels.format_totals(totals)
    print("\n" + report)
    target = os.path.join(REPO, "target")
    if os.path.isdir(target):
        with open(os.path.join(target, "fuzz-report.json"), "w") as f:
            json.dump(totals, f, indent=1, default=str)
    rows = len(fuzz_kernels.registered_kernels())
    if n_cases >= rows:
        assert totals["rows_covered"] == rows, f"only {totals['rows_covered']} of {rows} kernel rows got a case"
    assert not totals["panics"], "kernels panicked (caught at the FFI boundary):\n" + report
    assert not totals["failures"], (
        f"{len(totals['failures'])} of {n_cases} fuzz cases failed (seed {SEED}; rerun one with "
        f"`python tests/python/fuzz_kernels.py --replay ID --seed {SEED}`):\n"
        + fuzz_kernels.format_totals(totals, max_failures=60)
    )
