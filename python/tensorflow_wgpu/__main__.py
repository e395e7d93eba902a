"""``python -m tensorflow_wgpu``: where the plugin library is, and the adapters and backend it
would use. Needs no TensorFlow: it loads the library itself, which only TensorFlow's absence allows
(loading it beside TensorFlow's own copy would register the plugin twice)."""

import ctypes
import os
import sys

from tensorflow_wgpu import library_path


def main():
    path = os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH") or library_path()
    if path and os.path.isdir(path):
        # TF takes a directory of plugins too: ours is the one named for this package.
        found = [os.path.join(path, f) for f in sorted(os.listdir(path)) if "tensorflow_wgpu" in f]
        path = found[0] if found else None
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
    while True:
        buffer = ctypes.create_string_buffer(size)
        written = describe(buffer, size)
        if written <= size:  # the report can grow between the calls (an adapter opening)
            break
        size = written
    print(buffer.raw[:written].decode("utf-8"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
