//! Keeps Mesa's Vulkan drivers away from TensorFlow's LLVM.
//!
//! `libtensorflow_framework.so.2` exports its own LLVM and TF loads it with RTLD_GLOBAL. Mesa
//! drivers such as lavapipe link the system `libLLVM`, and the Vulkan loader opens them with
//! RTLD_LOCAL, so their `llvm::` calls bind to TF's copy first and crash inside the driver's shader
//! compiler. Opening each Mesa driver ourselves with RTLD_DEEPBIND first makes it (and the libLLVM it
//! brings) prefer its own symbols; the loader's later dlopen then returns that same handle.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Environment variable: set to `0` to skip the RTLD_DEEPBIND preload of Mesa Vulkan drivers.
pub const ENV_DEEPBIND: &str = "TF_WGPU_DEEPBIND_DRIVERS";

fn icd_manifests() -> Vec<PathBuf> {
    for var in ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"] {
        if let Ok(list) = std::env::var(var) {
            if !list.is_empty() {
                return list.split(':').map(PathBuf::from).collect();
            }
        }
    }
    let dirs = ["/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d"];
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// The `library_path` of an ICD manifest, resolved relative to the manifest when needed.
fn library_path(manifest: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let after_key = &text[text.find("\"library_path\"")? + "\"library_path\"".len()..];
    let value = after_key[after_key.find('"')? + 1..].split('"').next()?;
    let path = PathBuf::from(value);
    if path.is_relative() && value.contains('/') {
        return Some(manifest.parent()?.join(path));
    }
    Some(path)
}

/// Preloads every Mesa Vulkan driver (`libvulkan_*.so`) with RTLD_DEEPBIND. Linux only; idempotent.
pub fn isolate_vulkan_drivers() {
    if !cfg!(target_os = "linux") || std::env::var(ENV_DEEPBIND).is_ok_and(|v| v == "0") {
        return;
    }
    for manifest in icd_manifests() {
        let Some(path) = library_path(&manifest) else {
            continue;
        };
        let is_mesa = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libvulkan_"));
        if !is_mesa {
            continue;
        }
        let Ok(c_path) = CString::new(path.to_string_lossy().as_bytes()) else {
            continue;
        };
        // SAFETY: dlopen of a driver library the Vulkan loader would open anyway; the handle is kept
        // for the life of the process on purpose.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND) };
        if handle.is_null() {
            log::debug!("tensorflow-wgpu: could not preload {}", path.display());
        } else {
            log::debug!("tensorflow-wgpu: preloaded {} with RTLD_DEEPBIND", path.display());
        }
    }
}
