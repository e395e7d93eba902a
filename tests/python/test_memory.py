"""TF's memory APIs on WGPU: get_memory_info, reset_memory_stats, a logical device's memory_limit
and memory growth, served by TF's BFC allocator over the plugin's allocator (README, "Memory").
Settings that must come before the device opens run in a fresh process."""

import os
import subprocess
import sys
import textwrap

import tensorflow as tf

import tensorflow_wgpu
from conftest import worker_result

GPU = "/device:GPU:0"
MiB = 1 << 20


def run_python(code, **env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})
    return worker_result(done)


def test_get_memory_info_follows_allocations_within_the_allocators_regions():
    with tf.device(GPU):
        # Once first: TF caches the fill value's scalar on the device.
        warm = tf.ones([1024, 256])
        del warm
        tf.config.experimental.reset_memory_stats("GPU:0")
        before = tf.config.experimental.get_memory_info("GPU:0")
        x = tf.ones([1024, 256])
        during = tf.config.experimental.get_memory_info("GPU:0")
        regions = tensorflow_wgpu.memory_stats()
        del x
    after = tf.config.experimental.get_memory_info("GPU:0")
    assert during["current"] - before["current"] == 1024 * 256 * 4
    assert after["current"] == before["current"]
    assert during["peak"] >= during["current"] > 0
    # The allocator's own count: the regions TF's tensors are carved from hold them all.
    assert regions["live_allocations"] >= 1
    assert during["current"] <= regions["bytes_in_use"] <= regions["bytes_limit"]
    tf.config.experimental.reset_memory_stats("GPU:0")
    reset = tf.config.experimental.get_memory_info("GPU:0")
    assert reset["peak"] == reset["current"] == after["current"]


def test_peak_counts_a_freed_temporary():
    with tf.device(GPU):
        warm = tf.zeros([4])  # TF keeps the fill value's scalar on the device
        del warm
        tf.config.experimental.reset_memory_stats("GPU:0")
        base = tf.config.experimental.get_memory_info("GPU:0")["current"]
        big = tf.zeros([4 * MiB // 4])
        del big
        info = tf.config.experimental.get_memory_info("GPU:0")
    assert info["current"] == base
    assert info["peak"] >= base + 4 * MiB


def test_a_logical_devices_memory_limit_bounds_allocations():
    got = run_python("""
        import json
        import tensorflow as tf
        import tensorflow_wgpu
        gpu = tf.config.list_physical_devices("GPU")[0]
        tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=64)])
        with tf.device("/device:GPU:0"):
            small = tf.ones([4 << 20])  # 16 MiB
            try:
                tf.ones([24 << 20]).numpy()  # 96 MiB
                error = None
            except tf.errors.ResourceExhaustedError as e:
                error = type(e).__name__
        print("RESULT " + json.dumps({"error": error, "regions": tensorflow_wgpu.memory_stats(),
                                      "info": tf.config.experimental.get_memory_info("GPU:0")}))
    """)
    assert got["error"] == "ResourceExhaustedError"
    assert got["regions"]["bytes_limit"] == 64 * MiB
    assert got["regions"]["bytes_in_use"] <= 64 * MiB
    assert got["info"]["current"] >= 16 * MiB


def region_bytes_after_one_op(**config):
    return run_python(f"""
        import json
        import tensorflow as tf
        import tensorflow_wgpu
        gpu = tf.config.list_physical_devices("GPU")[0]
        if {config.get("growth", False)}:
            tf.config.experimental.set_memory_growth(gpu, True)
        with tf.device("/device:GPU:0"):
            x = tf.ones([256]) + 1
        print("RESULT " + json.dumps({{"regions": tensorflow_wgpu.memory_stats(),
                                      "info": tf.config.experimental.get_memory_info("GPU:0")}}))
    """, **config.get("env", {}))


def test_memory_growth_allocates_as_needed():
    grown = region_bytes_after_one_op(growth=True)
    whole = region_bytes_after_one_op()
    forced = region_bytes_after_one_op(env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"})
    # With growth, BFC starts from a 2 MiB region; without, it takes the budget up front (as large
    # a region as the adapter's max_buffer_size allows).
    assert grown["regions"]["bytes_in_use"] <= 4 * MiB
    assert forced["regions"]["bytes_in_use"] <= 4 * MiB
    assert whole["regions"]["bytes_in_use"] >= 64 * MiB
    for got in (grown, whole, forced):
        assert 0 < got["info"]["current"] <= got["regions"]["bytes_in_use"]


def test_the_pool_allocator_route_still_runs():
    got = run_python("""
        import json
        import tensorflow as tf
        import tensorflow_wgpu
        with tf.device("/device:GPU:0"):
            warm = tf.ones([1024, 256])
            del warm
            before = tensorflow_wgpu.memory_stats()
            x = tf.ones([1024, 256])
            during = tensorflow_wgpu.memory_stats()
            total = float(tf.reduce_sum(x))
            del x
        after = tensorflow_wgpu.memory_stats()
        print("RESULT " + json.dumps({"before": before, "during": during, "after": after, "total": total}))
    """, TF_WGPU_ALLOCATOR="pool")
    assert got["total"] == 1024 * 256
    assert got["during"]["bytes_in_use"] >= got["before"]["bytes_in_use"] + 1024 * 256 * 4
    assert got["after"]["bytes_in_use"] == got["before"]["bytes_in_use"]
    assert got["during"]["peak_bytes_in_use"] >= got["during"]["bytes_in_use"]
