#!/usr/bin/env python3
"""Which library of TensorFlow's wheel exports the C API the plugin resolves, per OS and TF version.

    python scripts/tf-c-api-exports.py [--versions 2.16.2,2.19.1,2.21.0] [--work DIR]

Downloads TF's wheels for Windows (win_amd64) and macOS (macosx arm64) with `pip download` (about
1.5 GB; Windows before 2.17 takes the libraries from `tensorflow-intel`, which `tensorflow` pulls in
there), reads the export tables of the libraries that can hold the C API (`llvm-objdump -p` for PE
DLLs and .pyd files, `llvm-nm` for Mach-O) and of the installed Linux TF (`nm -D`), and checks
every `TF_*` function named in `src/ffi/tf.rs`'s `tf_api!` table against them. `ffi::loader`
follows what this prints. Needs `llvm-objdump`/`llvm-nm` (Debian: `apt-get install llvm`). Not run
in CI: it downloads the wheels of two other OSes.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Libraries of TF's wheels that could define the C API, by OS.
CANDIDATES = {
    "windows": ["tensorflow/python/_pywrap_tensorflow_common.dll", "tensorflow/python/_pywrap_tensorflow_internal.pyd",
                "tensorflow/tensorflow_framework.2.dll"],
    "macos": ["tensorflow/libtensorflow_framework.2.dylib", "tensorflow/libtensorflow_cc.2.dylib",
              "tensorflow/python/lib_pywrap_tensorflow_common.dylib"],
}
PLATFORMS = {"windows": "win_amd64", "macos": "macosx_12_0_arm64"}


def needed_symbols():
    text = open(os.path.join(ROOT, "src", "ffi", "tf.rs")).read()
    table = text[text.index("tf_api! {"):]
    table = table[:table.index("\n}\n")]
    return re.findall(r"^\s+(TF_\w+):", table, re.M)


def exports(path, kind):
    if kind == "windows":
        out = subprocess.run(["llvm-objdump", "-p", path], capture_output=True, text=True, check=True).stdout
        table = out.split("Export Table:", 1)[-1] if "Export Table:" in out else ""
        return {line.split()[-1] for line in table.splitlines() if re.match(r"^\s+\d+\s+0x[0-9a-f]+\s+\S+$", line)}
    if kind == "macos":
        out = subprocess.run(["llvm-nm", "-gU", "--defined-only", path], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1].lstrip("_") for line in out.splitlines() if line.strip()}
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def download(kind, version, work):
    target = os.path.join(work, f"{kind}-{version}")
    os.makedirs(target, exist_ok=True)
    older = tuple(int(p) for p in version.split(".")[:2]) < (2, 17)
    names = ["tensorflow"] + (["tensorflow-intel"] if kind == "windows" and older else [])
    for name in names:
        if not glob.glob(os.path.join(target, name.replace("-", "_") + "-*.whl")):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "--platform", PLATFORMS[kind], "--python-version", "3.11", f"{name}=={version}",
                            "-d", target], check=True)
    libraries = {}
    for wheel in glob.glob(os.path.join(target, "*.whl")):
        with zipfile.ZipFile(wheel) as z:
            for member in CANDIDATES[kind]:
                if member in z.namelist():
                    libraries[member] = z.extract(member, target)
    return libraries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.16.2,2.19.1,2.21.0")
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "tf-wheels"))
    args = parser.parse_args()
    need = needed_symbols()
    print(f"{len(need)} TF_* functions in src/ffi/tf.rs")
    import tensorflow as tf

    linux = os.path.join(os.path.dirname(tf.__file__), "libtensorflow_framework.so.2")
    rows = [("linux", tf.__version__, "tensorflow/libtensorflow_framework.so.2", exports(linux, "linux"))]
    for version in args.versions.split(","):
        for kind in ("windows", "macos"):
            for member, path in sorted(download(kind, version, args.work).items()):
                rows.append((kind, version, member, exports(path, kind)))
    print("| OS | TF | library | TF_* exported | plugin's functions found | missing |")
    print("|---|---|---|---|---|---|")
    for kind, version, member, names in rows:
        found = [n for n in need if n in names]
        missing = [n for n in need if n not in names]
        shown = "all" if not found else ", ".join(missing) if len(missing) <= 3 else f"{len(missing)}, {missing[0]} ..."
        print(f"| {kind} | {version} | {member} | {sum(n.startswith('TF_') for n in names)} | {len(found)} of {len(need)} | "
              f"{shown or '-'} |")


if __name__ == "__main__":
    main()
