//! `tf_wgpu_describe`: what the plugin sees, as text for `python -m tensorflow_wgpu` (no TensorFlow
//! needed): the library's TF lookup, the backends searched and each adapter exposed as a device,
//! with the features and limits its kernels depend on.

use std::ffi::c_char;
use std::fmt::Write;

use crate::error::Result;
use crate::runtime::instance;

use super::or_log;

/// The report `tf_wgpu_describe` writes.
pub fn report() -> String {
    let mut text = String::new();
    let backends = std::env::var(instance::ENV_BACKENDS).unwrap_or_else(|_| "vulkan,metal,dx12 (default)".into());
    let _ = writeln!(text, "backends searched: {backends} ({} to change)", instance::ENV_BACKENDS);
    let count = instance::device_count();
    let _ = writeln!(text, "devices: {count}");
    for ordinal in 0..count {
        let Ok(info) = instance::adapter_info(ordinal) else { continue };
        let _ = writeln!(
            text,
            "GPU:{ordinal}: {} | backend {:?} | {:?} | driver {} {}",
            info.name, info.backend, info.device_type, info.driver, info.driver_info
        );
        match instance::device(ordinal) {
            Ok(device) => {
                let has = |f: wgpu::Features| if device.features.contains(f) { "yes" } else { "no" };
                let l = &device.limits;
                let _ = writeln!(
                    text,
                    "  float16 kernels: {} | float64 kernels: {} | subgroups: {} | timestamps: {} | max buffer {} MiB, max storage binding {} MiB, {} storage buffers per stage",
                    has(wgpu::Features::SHADER_F16),
                    has(wgpu::Features::SHADER_F64),
                    has(wgpu::Features::SUBGROUP),
                    has(wgpu::Features::TIMESTAMP_QUERY),
                    l.max_buffer_size >> 20,
                    l.max_storage_buffer_binding_size >> 20,
                    l.max_storage_buffers_per_shader_stage
                );
            }
            Err(e) => {
                let _ = writeln!(text, "  cannot open: {e}");
            }
        }
    }
    if count == 0 {
        let _ =
            writeln!(text, "no adapter found: TensorFlow will show no GPU (install a Vulkan, Metal or DX12 driver)");
    }
    text
}

/// Writes the report (UTF-8, not NUL-terminated) into `buffer` when `capacity` holds it, and
/// returns its length in bytes either way: call with a null buffer to size one.
///
/// # Safety
/// `buffer` must be null or point to `capacity` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tf_wgpu_describe(buffer: *mut c_char, capacity: usize) -> usize {
    or_log("tf_wgpu_describe", 0, || -> Result<usize> {
        let text = report();
        if !buffer.is_null() && capacity >= text.len() {
            // SAFETY: the caller gives `capacity` writable bytes, at least the report's length.
            unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), text.len()) };
        }
        Ok(text.len())
    })
}
