//! Everything that differs by operating system, in one place, each OS behind `cfg`:
//!
//! - [`tf_symbol`]: finding a function of TensorFlow's C API in this process. The plugin never
//!   links against TF, so one binary serves several TF versions. Where TF defines the C API
//!   (established from the export tables of TF's wheels: `scripts/tf-c-api-exports.py`):
//!   - Linux: `libtensorflow_framework.so.2`. TF 2.19 and later load it with RTLD_GLOBAL, so the
//!     global scope finds it; TF 2.16 loads it locally, so it is also asked by name.
//!   - macOS: `libtensorflow_framework.2.dylib`, found among the loaded images.
//!   - Windows: `tensorflow/python/_pywrap_tensorflow_common.dll` (TF 2.21) or
//!     `_pywrap_tensorflow_internal.pyd` (TF 2.16 through `tensorflow-intel`, TF 2.19); the
//!     `tensorflow_framework.2.dll` that TF 2.21 ships is an 8 KiB stub that exports nothing.
//! - [`tf_library_dir`]: the directory of that library (`build_info.py` is read from beside it).
//! - [`physical_memory_bytes`]: the machine's memory (a software adapter's budget).
//! - [`isolate_vulkan_drivers`]: keeping Mesa's Vulkan drivers away from TF's LLVM (Linux only).
//! - [`Library`]: opening a library as TF's plugin loader does (the examples' and tests' walk
//!   through the C ABI).

use std::ffi::c_void;
use std::path::PathBuf;

/// Environment variable: set to `0` to skip the RTLD_DEEPBIND preload of Mesa Vulkan drivers.
pub const ENV_DEEPBIND: &str = "TF_WGPU_DEEPBIND_DRIVERS";

/// The address of TF's C function `name_nul` (NUL-terminated), or null where this process has none.
pub fn tf_symbol(name_nul: &str) -> *mut c_void {
    debug_assert!(name_nul.ends_with('\0'));
    os::tf_symbol(name_nul)
}

/// The directory of the library that defines TF's C API, where one is loaded.
pub fn tf_library_dir() -> Option<PathBuf> {
    let symbol = tf_symbol("TF_NewStatus\0");
    if symbol.is_null() {
        return None;
    }
    os::library_path_of(symbol)?.parent().map(|p| p.to_path_buf())
}

/// The machine's physical memory in bytes, where the OS tells it.
pub fn physical_memory_bytes() -> Option<u64> {
    os::physical_memory_bytes()
}

/// Preloads Mesa's Vulkan drivers that link libLLVM with RTLD_DEEPBIND (Linux; nothing elsewhere).
pub fn isolate_vulkan_drivers() {
    #[cfg(target_os = "linux")]
    mesa::isolate_vulkan_drivers();
}

/// A shared library opened by path and kept loaded for the life of the process, as TF keeps its
/// plugins.
pub struct Library(Module);

impl Library {
    /// Opens the library at `path` (on Unix binding every symbol now, locally), or says why it
    /// cannot.
    pub fn open(path: &std::path::Path) -> Result<Library, String> {
        os::open_library(path).map(|handle| Library(Module(handle)))
    }

    /// The address of the exported symbol `name`, or null where the library does not export it.
    pub fn symbol(&self, name: &std::ffi::CStr) -> *mut c_void {
        os::library_symbol(self.0 .0, name)
    }
}

/// The plugin's file name on this OS, as cargo builds it and TF's loader globs it (`.so`, `.dylib`,
/// `.dll`).
pub fn plugin_file_name() -> String {
    format!("{}tensorflow_wgpu{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// A handle of a loaded library, kept for the life of the process.
#[derive(Clone, Copy)]
struct Module(*mut c_void);
// SAFETY: a loaded library's handle is a process-wide token, usable from any thread.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

#[cfg(unix)]
mod os {
    use std::ffi::{c_char, c_void, CStr};
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::Module;

    /// The loaded library that defines TF's C API, for TFs that load it without putting it in the
    /// global scope (2.16). Null when it is not loaded.
    fn framework() -> *mut c_void {
        static HANDLE: OnceLock<Module> = OnceLock::new();
        HANDLE.get_or_init(|| Module(open_loaded_framework())).0
    }

    #[cfg(not(target_vendor = "apple"))]
    fn open_loaded_framework() -> *mut c_void {
        // SAFETY: RTLD_NOLOAD only returns a library that is already loaded (taking a reference
        // that is kept for the life of the process); it never loads one.
        unsafe { libc::dlopen(c"libtensorflow_framework.so.2".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) }
    }

    // dyld's image list (`mach-o/dyld.h`, in libSystem); libc's declarations are deprecated.
    #[cfg(target_vendor = "apple")]
    extern "C" {
        fn _dyld_image_count() -> u32;
        fn _dyld_get_image_name(image_index: u32) -> *const c_char;
    }

    #[cfg(target_vendor = "apple")]
    fn open_loaded_framework() -> *mut c_void {
        // dyld matches RTLD_NOLOAD by path: find the loaded image's own path first.
        // SAFETY: each name is a NUL-terminated path owned by dyld, or null past the end. Apple
        // documents this walk as unsafe against images unloaded meanwhile by another thread; TF's
        // libraries are never unloaded, and this runs once, when TF loads the plugin.
        unsafe {
            for index in 0.._dyld_image_count() {
                let name = _dyld_get_image_name(index);
                if !name.is_null() && CStr::from_ptr(name).to_bytes().ends_with(b"/libtensorflow_framework.2.dylib") {
                    return libc::dlopen(name, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
                }
            }
        }
        std::ptr::null_mut()
    }

    pub fn tf_symbol(name_nul: &str) -> *mut c_void {
        // SAFETY: `name_nul` is NUL-terminated; RTLD_DEFAULT searches the global scope.
        let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name_nul.as_ptr() as *const c_char) };
        if !global.is_null() {
            return global;
        }
        let framework = framework();
        if framework.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: `framework` is a live handle from dlopen; `name_nul` is NUL-terminated.
        unsafe { libc::dlsym(framework, name_nul.as_ptr() as *const c_char) }
    }

    pub fn library_path_of(symbol: *mut c_void) -> Option<PathBuf> {
        // SAFETY: dladdr only reads the loader's tables for an address inside a loaded library and
        // fills `info`; `dli_fname` then points at a NUL-terminated path owned by the loader.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(symbol, &mut info) == 0 || info.dli_fname.is_null() {
                return None;
            }
            Some(PathBuf::from(CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned()))
        }
    }

    pub fn open_library(path: &std::path::Path) -> Result<*mut c_void, String> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: dlopen of a NUL-terminated path; the handle is kept for the life of the process.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns null or a NUL-terminated message owned by the loader.
            let error = unsafe { libc::dlerror() };
            let why =
                if error.is_null() { "unknown".into() } else { unsafe { CStr::from_ptr(error) }.to_string_lossy() };
            return Err(format!("cannot load {}: {why}", path.display()));
        }
        Ok(handle)
    }

    pub fn library_symbol(handle: *mut c_void, name: &CStr) -> *mut c_void {
        // SAFETY: `handle` is a live dlopen handle; `name` is NUL-terminated.
        unsafe { libc::dlsym(handle, name.as_ptr()) }
    }

    pub fn physical_memory_bytes() -> Option<u64> {
        // SAFETY: sysconf has no preconditions.
        let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        (pages > 0 && page_size > 0).then(|| pages as u64 * page_size as u64)
    }
}

#[cfg(windows)]
mod os {
    use std::ffi::c_void;
    use std::os::windows::ffi::OsStringExt;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::Module;

    type Hmodule = *mut c_void;

    /// `MEMORYSTATUSEX` of `sysinfoapi.h`.
    #[repr(C)]
    struct MemoryStatusEx {
        length: u32,
        memory_load: u32,
        total_phys: u64,
        avail_phys: u64,
        total_page_file: u64,
        avail_page_file: u64,
        total_virtual: u64,
        avail_virtual: u64,
        avail_extended_virtual: u64,
    }

    const GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT: u32 = 0x2;
    const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;

    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> Hmodule;
        fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut Hmodule) -> i32;
        fn GetModuleFileNameW(module: Hmodule, name: *mut u16, size: u32) -> u32;
        fn GetProcAddress(module: Hmodule, name: *const u8) -> *mut c_void;
        fn LoadLibraryW(name: *const u16) -> Hmodule;
        fn GetLastError() -> u32;
        fn GetCurrentProcess() -> *mut c_void;
        fn K32EnumProcessModules(process: *mut c_void, modules: *mut Hmodule, bytes: u32, needed: *mut u32) -> i32;
        fn GlobalMemoryStatusEx(status: *mut MemoryStatusEx) -> i32;
    }

    /// The modules of TF's wheel that export the C API, newest TF first.
    const TF_MODULES: [&str; 2] = ["_pywrap_tensorflow_common.dll", "_pywrap_tensorflow_internal.pyd"];

    fn wide(text: &str) -> Vec<u16> {
        text.encode_utf16().chain([0]).collect()
    }

    /// The module that exports TF's C API: one of TF_MODULES, else any loaded module that exports
    /// `TF_NewStatus` (a future TF that moves it). Null where none is loaded.
    fn tf_module() -> Hmodule {
        static MODULE: OnceLock<Module> = OnceLock::new();
        MODULE
            .get_or_init(|| {
                let probe = c"TF_NewStatus".as_ptr().cast::<u8>();
                // SAFETY: GetModuleHandleW takes a NUL-terminated wide name and returns a loaded
                // module or null, taking no reference; GetProcAddress reads that module's exports.
                let named = TF_MODULES.iter().map(|name| unsafe { GetModuleHandleW(wide(name).as_ptr()) });
                let found = named
                    .chain(std::iter::once_with(loaded_modules).flatten())
                    .find(|&m| !m.is_null() && !unsafe { GetProcAddress(m, probe) }.is_null());
                Module(found.unwrap_or(std::ptr::null_mut()))
            })
            .0
    }

    fn loaded_modules() -> Vec<Hmodule> {
        let handle_size = std::mem::size_of::<Hmodule>();
        let mut modules: Vec<Hmodule> = vec![std::ptr::null_mut(); 1024];
        // A process that loads modules meanwhile may need a larger buffer: ask again with the size
        // the last call reported.
        for _ in 0..4 {
            let mut needed = 0u32;
            let bytes = (modules.len() * handle_size) as u32;
            // SAFETY: the buffer holds `bytes` bytes of handles; the call writes at most that many
            // and the byte count it would need.
            if unsafe { K32EnumProcessModules(GetCurrentProcess(), modules.as_mut_ptr(), bytes, &mut needed) } == 0 {
                return Vec::new();
            }
            let count = needed as usize / handle_size;
            if count <= modules.len() {
                modules.truncate(count);
                return modules;
            }
            modules = vec![std::ptr::null_mut(); count + 64];
        }
        Vec::new()
    }

    pub fn tf_symbol(name_nul: &str) -> *mut c_void {
        let module = tf_module();
        if module.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: `module` is a loaded module (TF's libraries stay loaded for the process's life);
        // `name_nul` is NUL-terminated.
        unsafe { GetProcAddress(module, name_nul.as_ptr()) }
    }

    /// The file of the module that holds `symbol`. A forwarded export resolves to the module it
    /// forwards to (TF's wheels forward none of the C API).
    pub fn library_path_of(symbol: *mut c_void) -> Option<PathBuf> {
        let mut module: Hmodule = std::ptr::null_mut();
        let mut path = vec![0u16; 32768];
        // SAFETY: FROM_ADDRESS reads `symbol` as an address inside a module and takes no reference
        // (UNCHANGED_REFCOUNT); GetModuleFileNameW writes at most `path.len()` wide characters.
        let written = unsafe {
            let flags = GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT;
            if GetModuleHandleExW(flags, symbol as *const u16, &mut module) == 0 {
                return None;
            }
            GetModuleFileNameW(module, path.as_mut_ptr(), path.len() as u32) as usize
        };
        (written > 0 && written < path.len()).then(|| std::ffi::OsString::from_wide(&path[..written]).into())
    }

    pub fn open_library(path: &std::path::Path) -> Result<*mut c_void, String> {
        use std::os::windows::ffi::OsStrExt;
        let wide_path: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
        // SAFETY: LoadLibraryW of a NUL-terminated wide path; the module stays loaded for the life of
        // the process.
        let handle = unsafe { LoadLibraryW(wide_path.as_ptr()) };
        if handle.is_null() {
            // SAFETY: GetLastError has no preconditions.
            return Err(format!("cannot load {}: error {}", path.display(), unsafe { GetLastError() }));
        }
        Ok(handle)
    }

    pub fn library_symbol(handle: *mut c_void, name: &std::ffi::CStr) -> *mut c_void {
        // SAFETY: `handle` is a loaded module; `name` is NUL-terminated.
        unsafe { GetProcAddress(handle, name.as_ptr().cast()) }
    }

    pub fn physical_memory_bytes() -> Option<u64> {
        let mut status = MemoryStatusEx {
            length: std::mem::size_of::<MemoryStatusEx>() as u32,
            memory_load: 0,
            total_phys: 0,
            avail_phys: 0,
            total_page_file: 0,
            avail_page_file: 0,
            total_virtual: 0,
            avail_virtual: 0,
            avail_extended_virtual: 0,
        };
        // SAFETY: `status` is a MEMORYSTATUSEX with its length set, as the call requires.
        (unsafe { GlobalMemoryStatusEx(&mut status) } != 0).then_some(status.total_phys)
    }
}

#[cfg(target_os = "linux")]
mod mesa {
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

    use super::ENV_DEEPBIND;

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
    /// Idempotent.
    pub fn isolate_vulkan_drivers() {
        if std::env::var(ENV_DEEPBIND).is_ok_and(|v| v == "0") {
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
            let handle =
                unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND) };
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
        let dirs =
            ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"];
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
}
