//! Device-owned scratch buffers for a kernel's intermediate data (packed matmul tiles), reused
//! across launches so that steady state creates no buffers.
//!
//! Reuse is safe without fences: every stream submits to the device's one queue, whole encoders at
//! a time, so two launches that share a scratch buffer never interleave on the device, and wgpu
//! orders the dispatches within an encoder. A buffer that must grow is replaced; wgpu keeps the old
//! one alive until the work that uses it has finished.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Error, Result};

use super::device::DeviceCore;

#[derive(Default)]
pub struct ScratchBuffers {
    buffers: Mutex<HashMap<&'static str, wgpu::Buffer>>,
}

impl ScratchBuffers {
    /// The scratch buffer for `role`, at least `size` bytes, usable as storage and uniform data and
    /// as a copy source and destination.
    pub fn get(&self, core: &DeviceCore, role: &'static str, size: u64) -> Result<wgpu::Buffer> {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(buffer) = buffers.get(role).filter(|b| b.size() >= size) {
            return Ok(buffer.clone());
        }
        if size > core.limits.max_buffer_size {
            return Err(Error::resource_exhausted(format!(
                "{role}: {size} bytes of scratch exceed the adapter's max_buffer_size ({})",
                core.limits.max_buffer_size
            )));
        }
        // Grow by at least half again, so that a slowly rising size does not reallocate each time.
        let old = buffers.get(role).map_or(0, |b| b.size());
        let size = size.max(old + old / 2).min(core.limits.max_buffer_size).next_multiple_of(256);
        log::debug!("tensorflow-wgpu: scratch {role} grows to {size} bytes");
        let (buffer, error) = core.capture_errors(|| {
            core.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(role),
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::UNIFORM
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        if let Some(e) = error {
            return Err(Error::resource_exhausted(format!("{role}: could not allocate {size} bytes of scratch: {e}")));
        }
        buffers.insert(role, buffer.clone());
        Ok(buffer)
    }
}
