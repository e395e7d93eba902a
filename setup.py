"""Builds the Rust library with cargo and installs it where TensorFlow looks for plugins.

`pip install .` runs `cargo build --release` and places `libtensorflow_wgpu.so` in
`site-packages/tensorflow-plugins/`, which `import tensorflow` scans at start-up.
"""

import os
import platform
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
LIB = {"Darwin": "libtensorflow_wgpu.dylib", "Windows": "tensorflow_wgpu.dll"}.get(platform.system(), "libtensorflow_wgpu.so")


class BuildWithCargo(build_py):
    def run(self):
        super().run()
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        # TF_WGPU_CARGO_PROFILE=dev gives a quicker, incremental debug build for development.
        profile = os.environ.get("TF_WGPU_CARGO_PROFILE", "release")
        out_dir = "debug" if profile == "dev" else profile
        built = os.path.join(target, out_dir, LIB)
        # TF_WGPU_PREBUILT_LIB=1 packages the library cargo already built (CI: the one its Rust tests
        # ran) instead of building it again: `cargo build --lib` alone resolves other dependency
        # features than a build with the tests, and would recompile the wgpu stack.
        if os.environ.get("TF_WGPU_PREBUILT_LIB") != "1":
            subprocess.check_call(["cargo", "build", "--lib", "--profile", profile], cwd=ROOT)
        elif not os.path.exists(built):
            raise FileNotFoundError(f"TF_WGPU_PREBUILT_LIB=1 but {built} has not been built")
        plugin_dir = os.path.join(self.build_lib, "tensorflow-plugins")
        os.makedirs(plugin_dir, exist_ok=True)
        shutil.copy2(built, os.path.join(plugin_dir, LIB))
        # Beside the packages, in site-packages itself: Python runs it at start-up (tensorflow_wgpu._xla).
        shutil.copy2(os.path.join(ROOT, "python", "tensorflow_wgpu.pth"), os.path.join(self.build_lib, "tensorflow_wgpu.pth"))


class BinaryDistribution(Distribution):
    """The wheel carries a native library: mark it platform-specific."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithCargo}, distclass=BinaryDistribution)
