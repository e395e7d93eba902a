//! tensorflow-wgpu: a TensorFlow PluggableDevice that runs TF programs on any Vulkan, Metal or DX12
//! GPU (and Mesa lavapipe) through wgpu.
//!
//! Layers, data flowing one way: `ffi` (TF's C API, byte for byte) → `runtime` (devices, memory,
//! streams, events, poller, timers) → `kernels` (WGSL launches) → `plugin` and
//! `kernels::registration` (the `extern "C"` shims TF calls).

pub mod error;
pub mod ffi;
pub mod kernels;
pub mod optimizer;
pub mod plugin;
pub mod rewrite;
pub mod runtime;
