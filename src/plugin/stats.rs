//! `tf_wgpu_memory_stats`: the allocator's figures for Python (`tensorflow_wgpu.memory_stats`).
//! TF's own `get_memory_info` reads zeros for a device without the BFC allocator, which this plugin
//! turns off, so the plugin answers itself.

use std::ffi::c_int;

use crate::error::Result;
use crate::runtime::{instance, memory};

use super::{null_arg, or_log};

/// What `tf_wgpu_memory_stats` writes; every field is bytes or a count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TfWgpuMemoryStats {
    pub bytes_in_use: i64,
    pub peak_bytes_in_use: i64,
    pub num_allocs: i64,
    pub largest_alloc_size: i64,
    pub bytes_limit: i64,
    /// Freed buffers held for reuse, outside the budget.
    pub pooled_bytes: i64,
    pub live_allocations: i64,
}

/// Fills `out` with device `ordinal`'s allocator statistics. Returns 1, or 0 where TF has not
/// opened that device (or `out` is null).
///
/// # Safety
/// `out` must be null or point to a writable `TfWgpuMemoryStats`.
#[no_mangle]
pub unsafe extern "C" fn tf_wgpu_memory_stats(ordinal: c_int, out: *mut TfWgpuMemoryStats) -> c_int {
    or_log("tf_wgpu_memory_stats", 0, || -> Result<c_int> {
        // SAFETY: the caller passes a writable TfWgpuMemoryStats (null checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| null_arg("stats"))?;
        let Some(device) = usize::try_from(ordinal).ok().and_then(instance::opened_device) else {
            return Ok(0);
        };
        let (memory, stats) = (&device.memory, device.memory.stats());
        *out = TfWgpuMemoryStats {
            bytes_in_use: stats.bytes_in_use,
            peak_bytes_in_use: stats.peak_bytes_in_use,
            num_allocs: stats.num_allocs,
            largest_alloc_size: stats.largest_alloc_size,
            bytes_limit: stats.bytes_limit,
            pooled_bytes: memory.pooled_bytes() as i64,
            live_allocations: memory.live_allocations() as i64,
        };
        Ok(1)
    })
}

/// Kernel dispatches encoded so far in this process (`tensorflow_wgpu.dispatch_count`).
#[no_mangle]
pub extern "C" fn tf_wgpu_dispatch_count() -> u64 {
    crate::runtime::trace::dispatch_count()
}

/// Sets device `ordinal`'s memory budget to `bytes` (a logical device's `memory_limit`, which TF
/// does not pass to pluggable devices: `tensorflow_wgpu._memory`); a negative `bytes` restores the
/// default. Applies to a device opened later and to an open one's later allocations. Returns 1, or
/// 0 for a negative ordinal.
#[no_mangle]
pub extern "C" fn tf_wgpu_set_memory_limit(ordinal: c_int, bytes: i64) -> c_int {
    or_log("tf_wgpu_set_memory_limit", 0, || -> Result<c_int> {
        let Ok(ordinal) = usize::try_from(ordinal) else {
            return Ok(0);
        };
        let bytes = u64::try_from(bytes).ok();
        match bytes {
            Some(bytes) => memory::set_limit_override(ordinal, bytes),
            None => memory::clear_limit_override(ordinal),
        }
        if let Some(device) = instance::opened_device(ordinal) {
            device.memory.set_limit(bytes);
        }
        Ok(1)
    })
}
