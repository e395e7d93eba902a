"""The profiler plugin: a profile of a Keras training step, read back from the XSpace TF writes.

Each profile runs in a worker process (`profile_worker.py`). The op profile and trace viewer checks
run xprof's converters (TensorBoard's profile plugin) in the venv `scripts/setup.sh` makes for them
(`.venv-xprof`, `TF_WGPU_XPROF_PYTHON` to name another).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import worker_result
from tensorflow.tsl.profiler.protobuf import xplane_pb2

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
COPIES = {"MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "Memset"}
XPROF_PYTHON = os.environ.get("TF_WGPU_XPROF_PYTHON", os.path.join(ROOT, ".venv-xprof", "bin", "python"))


def profile(tmp_path, route, **env):
    logdir = str(tmp_path / "logs")
    done = subprocess.run([sys.executable, os.path.join(HERE, "profile_worker.py"), logdir, route],
                          capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    result = worker_result(done, f"profile_worker.py {route}")
    assert len(result["xplanes"]) == 1, result
    space = xplane_pb2.XSpace()
    with open(result["xplanes"][0], "rb") as f:
        space.ParseFromString(f.read())
    return result, space


def device_plane(space):
    planes = [p for p in space.planes if p.name == "/device:GPU:0"]
    assert len(planes) == 1, [p.name for p in space.planes]
    return planes[0]


def events(plane):
    """(line name, event name, {stat name: value}, start ns, duration ps) of every event."""
    stat_names = {i: m.name for i, m in plane.stat_metadata.items()}

    def value(stat):
        return getattr(stat, stat.WhichOneof("value"))

    for line in plane.lines:
        for event in line.events:
            stats = {stat_names[s.metadata_id]: value(s) for s in event.stats}
            start_ns = line.timestamp_ns + event.offset_ps // 1000
            yield line.name, plane.event_metadata[event.metadata_id].name, stats, start_ns, event.duration_ps


def plane_stats(plane):
    names = {i: m.name for i, m in plane.stat_metadata.items()}
    return {names[s.metadata_id]: s.str_value for s in plane.stats}


@pytest.mark.parametrize("clock", ["gpu", "host"])
def test_a_training_step_has_every_dispatch_with_a_duration(tmp_path, clock):
    env = {"TF_WGPU_PROFILER_CLOCK": "host"} if clock == "host" else {}
    result, space = profile(tmp_path, "api", **env)
    plane = device_plane(space)
    expected_clock = "gpu timestamps" if clock == "gpu" else "host encode and completion times"
    assert plane_stats(plane)["event_clock"] == expected_clock
    all_events = list(events(plane))
    kernels = [e for e in all_events if e[0].startswith("Stream #") and e[1] not in COPIES]
    # Every dispatch of the step, each with a duration and the TF op that launched it.
    assert len(kernels) == result["dispatches"] > 20
    assert all(duration > 0 for *_, duration in kernels)
    assert all(":" in stats["tf_op"] for _, _, stats, _, _ in kernels)
    op_types = {stats["tf_op"].rsplit(":", 1)[1] for _, _, stats, _, _ in kernels}
    assert {"Conv2D", "Conv2DBackpropFilter", "MatMul", "MaxPool", "MaxPoolGrad", "BiasAddGrad"} <= op_types
    # The loss comes back to the host: a device-to-host copy with its size.
    copies = [e for e in all_events if e[1] in COPIES]
    assert any(name == "MemcpyD2H" and stats["bytes_transferred"] >= 4 for _, name, stats, _, _ in copies)
    assert all(stats["memcpy_details"].startswith("kind:") for _, _, stats, _, _ in copies)
    submits = [e for e in all_events if e[0] == "Submits"]
    assert submits and all(name == "Submit" and stats["commands"] >= 0 for _, name, stats, _, _ in submits)
    # On the host's clock (TF counts both planes from the session's start): within the span of the
    # host's events, give or take the time TF takes to start and stop its tracers.
    host = [e for plane in space.planes if plane.name == "/host:CPU" for e in events(plane)]
    first, last = min(e[3] for e in host), max(e[3] + e[4] // 1000 for e in host)
    slack = 50_000_000
    assert last - first <= result["stop_ns"] - result["start_ns"]
    for _, _, _, start_ns, duration_ps in all_events:
        assert first - slack <= start_ns
        assert start_ns + duration_ps // 1000 <= last + slack
    # The kernels of one stream run one after another.
    stream = sorted((start, start + d // 1000) for line, name, _, start, d in kernels if line == kernels[0][0])
    overlaps = sum(b[0] < a[1] for a, b in zip(stream, stream[1:]))
    if clock == "gpu":
        assert overlaps == 0


def test_kerass_tensorboard_callback_records_the_device(tmp_path):
    _, space = profile(tmp_path, "callback")
    plane = device_plane(space)
    ops = {stats.get("tf_op", "") for _, _, stats, _, _ in events(plane)}
    assert any(op.endswith(":Conv2D") for op in ops), sorted(ops)[:20]


def xprof(xplane, tool):
    code = ("import sys, json; from xprof.convert import raw_to_tool_data as r; "
            "data, _ = r.xspace_to_tool_data([sys.argv[1]], sys.argv[2], {}); "
            "sys.stdout.write(data if isinstance(data, str) else data.decode())")
    done = subprocess.run([XPROF_PYTHON, "-c", code, xplane, tool], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module")
def xprof_python():
    if not os.path.exists(XPROF_PYTHON):
        pytest.fail(f"xprof's venv is missing ({XPROF_PYTHON}): run scripts/setup.sh")
    return XPROF_PYTHON


def test_tensorboards_op_profile_trace_viewer_and_memory_profile_read_the_profile(tmp_path, xprof_python):
    result, _ = profile(tmp_path, "api")
    xplane = result["xplanes"][0]
    op_profile = json.loads(xprof(xplane, "op_profile"))
    names = json.dumps(op_profile)
    assert "Conv2DBackpropFilter" in names and "MatMul" in names
    trace = json.loads(xprof(xplane, "trace_viewer"))
    processes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert any("/device:GPU:0" in p for p in processes), processes
    timed = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("dur", 0) > 0]
    assert any(e["name"] == "MemcpyD2H" for e in timed)
    # TF's BFC allocator, over the plugin's regions, records the device's allocations.
    memory = json.loads(xprof(xplane, "memory_profile"))["memoryProfilePerAllocator"]
    device = [v for k, v in memory.items() if k.startswith("PluggableDevice_0")]
    assert device and device[0]["memoryProfileSnapshots"], sorted(memory)
    assert int(device[0]["profileSummary"]["peakStats"]["peakBytesInUse"]) > 0
