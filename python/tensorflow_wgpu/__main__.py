"""``python -m tensorflow_wgpu``: where the plugin library is, and the adapters and backend it
would use. Needs no TensorFlow: it loads the library itself, which only TensorFlow's absence allows
(loading it beside TensorFlow's own copy would register the plugin twice)."""

import ctypes
import os
import sys

from tensorflow_wgpu import library_path


def main():
    path = os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH") or library_path()
    print(f"library: {path or 'not found (pip install tensorflow-wgpu, or set TF_PLUGGABLE_DEVICE_LIBRARY_PATH)'}")
    if path is None:
        return 1
    if "tensorflow" in sys.modules:
        print("TensorFlow is imported in this process: run `python -m tensorflow_wgpu` on its own")
        return 1
    lib = ctypes.CDLL(path)
    describe = lib.tf_wgpu_describe
    describe.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    describe.restype = ctypes.c_size_t
    size = describe(None, 0)
    buffer = ctypes.create_string_buffer(size)
    describe(buffer, size)
    print(buffer.raw[:size].decode("utf-8"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
