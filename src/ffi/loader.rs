//! Keeps Mesa's Vulkan drivers away from TensorFlow's LLVM.
//!
//! `libtensorflow_framework.so.2` exports its own LLVM and TF loads it with RTLD_GLOBAL. Mesa
//! drivers such as lavapipe link the system `libLLVM`, and the Vulkan loader opens them with
//! RTLD_LOCAL, so their `llvm::` calls bind to TF's copy first and crash inside the driver's shader
//! compiler. Opening each Mesa driver ourselves with RTLD_DEEPBIND first makes it (and the libLLVM it
//! brings) prefer its own symbols; the loader's later dlopen then returns that same handle.
//!
//! Only drivers that link `libLLVM` are opened so. RTLD_DEEPBIND binds a library's dependencies
//! apart from the rest of the process, and for drivers without LLVM (Intel's) that only does
//! harm: `libvulkan_intel_hasvk`'s driconf parsing, deep-bound, corrupted the heap at
//! `vkCreateInstance` in about one process in five (glibc's malloc checker showed a double free
//! in `XML_ParserFree`).

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

/// The DT_NEEDED names of a 64-bit little-endian ELF shared object, or None if `bytes` is not one.
fn needed_libraries(bytes: &[u8]) -> Option<Vec<String>> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    // ELFCLASS64, ELFDATA2LSB.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (ph_off, ph_size, ph_count) = (u64_at(0x20)? as usize, u16_at(0x36)? as usize, u16_at(0x38)? as usize);
    let headers: Vec<usize> = (0..ph_count).map(|i| ph_off + i * ph_size).collect();
    // (type, file offset, virtual address, file size) of each program header.
    let segment = |h: usize| Some((u32_at(h)?, u64_at(h + 8)?, u64_at(h + 16)?, u64_at(h + 32)?));
    let to_offset = |address: u64| {
        headers.iter().filter_map(|&h| segment(h)).find_map(|(kind, offset, vaddr, size)| {
            (kind == 1 && (vaddr..vaddr + size).contains(&address)).then(|| (address - vaddr + offset) as usize)
        })
    };
    let (_, dynamic, _, dynamic_size) = headers.iter().filter_map(|&h| segment(h)).find(|s| s.0 == 2)?;
    let entries: Vec<(u64, u64)> = (0..dynamic_size as usize / 16)
        .map_while(|i| Some((u64_at(dynamic as usize + 16 * i)?, u64_at(dynamic as usize + 16 * i + 8)?)))
        .take_while(|&(tag, _)| tag != 0)
        .collect();
    // DT_STRTAB (5) holds the names that DT_NEEDED (1) entries point into.
    let strings = to_offset(entries.iter().find(|e| e.0 == 5)?.1)?;
    let name_at = |at: usize| {
        let tail = bytes.get(at..)?;
        let end = tail.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&tail[..end]).into_owned())
    };
    Some(entries.iter().filter(|e| e.0 == 1).filter_map(|e| name_at(strings + e.1 as usize)).collect())
}

/// Whether the driver at `path` links libLLVM (and so needs RTLD_DEEPBIND).
fn links_llvm(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| needed_libraries(&bytes))
        .is_some_and(|needed| needed.iter().any(|n| n.starts_with("libLLVM")))
}

/// Preloads every Mesa Vulkan driver (`libvulkan_*.so`) that links libLLVM with RTLD_DEEPBIND.
/// Linux only; idempotent.
pub fn isolate_vulkan_drivers() {
    if !cfg!(target_os = "linux") || std::env::var(ENV_DEEPBIND).is_ok_and(|v| v == "0") {
        return;
    }
    for manifest in icd_manifests() {
        let Some(path) = library_path(&manifest) else {
            continue;
        };
        let is_mesa = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libvulkan_"));
        if !is_mesa || !links_llvm(&resolve_library(&path)) {
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

/// Where the dynamic loader would find a driver named without a directory (manifests may name the
/// file alone).
fn resolve_library(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"];
    dirs.iter().map(|d| Path::new(d).join(path)).find(|p| p.exists()).unwrap_or_else(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_needed_libraries_of_an_elf_file() {
        // This test binary is a 64-bit ELF on Linux that links libc.
        if cfg!(all(target_os = "linux", target_pointer_width = "64", target_endian = "little")) {
            let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
            let needed = needed_libraries(&exe).expect("an ELF file");
            assert!(needed.iter().any(|n| n.starts_with("libc.so")), "{needed:?}");
        }
        assert!(needed_libraries(b"not an elf file").is_none());
        assert!(needed_libraries(b"\x7fELF\x02\x01").is_none());
    }

    #[test]
    fn only_llvm_drivers_are_deep_bound() {
        // Mesa's drivers where they are installed (CI installs lavapipe): lavapipe links libLLVM.
        let lavapipe = resolve_library(Path::new("libvulkan_lvp.so"));
        if lavapipe.exists() {
            assert!(links_llvm(&lavapipe));
        }
        let intel = resolve_library(Path::new("libvulkan_intel.so"));
        if intel.exists() {
            assert!(!links_llvm(&intel));
        }
    }
}
