"""tensorflow-wgpu: TensorFlow on any Vulkan, Metal or DX12 GPU.

Installing the package is enough: TensorFlow loads ``tensorflow-plugins/libtensorflow_wgpu.so``
from site-packages at import time. This module only helps to find the library.
"""

import glob
import os
import site
import sys

__all__ = ["library_path"]


def library_path():
    """Path of the installed plugin library, or None."""
    roots = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
    for root in roots:
        for name in glob.glob(os.path.join(root, "tensorflow-plugins", "*tensorflow_wgpu*")):
            return name
    return None
