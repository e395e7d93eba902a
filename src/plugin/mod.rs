//! The `extern "C"` shims TensorFlow calls: `SE_InitPlugin` and every SP_PlatformFns /
//! SP_StreamExecutor / SP_TimerFns callback. Each one checks its pointers, catches panics and turns
//! errors into a `TF_Status`; the work itself is done by `runtime`.

mod describe;
mod executor;
mod graph;
mod platform;
mod profiler;
mod stats;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{from_panic, Error, Result};
use crate::ffi::tf::{set_status, TF_Status};

pub use describe::tf_wgpu_describe;
pub use graph::TF_InitGraph;
pub use platform::SE_InitPlugin;
pub use profiler::TF_InitProfiler;
pub use stats::{tf_wgpu_memory_stats, TfWgpuMemoryStats};

/// Platform name TF shows (`/physical_device:GPU:0` has this as its platform).
pub const PLATFORM_NAME: &std::ffi::CStr = c"WGPU";
/// Device type: TF treats it as a GPU.
pub const DEVICE_TYPE: &std::ffi::CStr = c"GPU";

/// Runs `f`, writing its outcome (or a caught panic) into `status`.
fn with_status(status: *mut TF_Status, f: impl FnOnce() -> Result<()>) {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(from_panic(p)));
    // SAFETY: TF passes a live TF_Status (or null, which is ignored).
    unsafe { set_status(status, &outcome) };
}

/// Runs `f` for a callback without a status: errors and panics are logged and `fallback` returned.
fn or_log<T>(what: &str, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(from_panic(p))) {
        Ok(value) => value,
        Err(e) => {
            log::error!("tensorflow-wgpu: {what}: {e}");
            fallback
        }
    }
}

fn null_arg(what: &str) -> Error {
    Error::invalid_argument(format!("tensorflow-wgpu: {what} is null"))
}
