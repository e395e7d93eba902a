"""A logical device's ``memory_limit`` for WGPU devices.

TF does not apply virtual-device settings to pluggable devices ("Pluggable device does not support
virtual device setting yet"), so ``tf.config.set_logical_device_configuration`` (and
``tf.config.experimental.set_virtual_device_configuration``) would have no effect on the budget.
After TF's own checks, this patch hands the limit to the plugin, whose allocator then refuses
memory past it: TF's BFC allocator, which takes its regions from there, reports
``ResourceExhausted`` as it would on CUDA. Several logical devices on one WGPU device are not split
(TF keeps one device); their limits add up.
"""

import ctypes
import warnings

from tensorflow_wgpu import _hooks

TARGET = "tensorflow.python.eager.context"


def _apply(context, device, logical_devices):
    """Hands the limit of `device` (a GPU of this plugin: the only GPU platform in a tensorflow-cpu
    install) to the plugin; no logical devices restores the default budget."""
    if device.device_type != "GPU":
        return
    from tensorflow_wgpu import _loaded_library

    lib = _loaded_library()
    gpus = context.list_physical_devices("GPU")
    if lib is None or device not in gpus:
        return
    if logical_devices and len(logical_devices) > 1:
        warnings.warn("tensorflow-wgpu: TF does not split a pluggable device into logical devices; the "
                      "WGPU device keeps one, with the sum of their memory limits", RuntimeWarning, stacklevel=3)
    limit_bytes = sum(d.memory_limit for d in logical_devices) << 20 if logical_devices else -1
    lib.tf_wgpu_set_memory_limit.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.tf_wgpu_set_memory_limit.restype = ctypes.c_int
    lib.tf_wgpu_set_memory_limit(gpus.index(device), int(limit_bytes))


def patch(module):
    context_class = module.Context
    if getattr(context_class.set_logical_device_configuration, "_tf_wgpu", False):
        return
    original = context_class.set_logical_device_configuration

    def set_logical_device_configuration(self, dev, virtual_devices):
        original(self, dev, virtual_devices)
        _apply(self, dev, virtual_devices)

    set_logical_device_configuration._tf_wgpu = True
    set_logical_device_configuration.__doc__ = original.__doc__
    context_class.set_logical_device_configuration = set_logical_device_configuration


def install():
    """Patches TF's context now if TensorFlow is imported, else when it is."""
    _hooks.when_imported(TARGET, patch)
