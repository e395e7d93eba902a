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
use super::encoder::Encoder;
use super::trace::ActivityKind;

/// Texels per row of a scratch texture (`ScratchBuffers::texels`): 16-byte texels, four 32-bit
/// elements each, so a row is 64 KiB, a multiple of the 256-byte row pitch copies need.
pub const TEXEL_ROW: u32 = 4096;

/// The two scratch textures kernels copy operands into (`ScratchBuffers::texels`): every kernel
/// shares them, as they share scratch buffers, so a process holds at most two.
pub const TEXELS_A: &str = "texels a";
pub const TEXELS_B: &str = "texels b";

/// Copies into textures pay off from about this many vec4s (the copy, the texture's bind group and
/// a second pipeline cost more than the lane-by-lane loads they save below it), and stop at this
/// many (64 MiB), so the two textures never hold more than 128 MiB.
const TEXELS_MIN_VEC4S: u64 = 16 * 1024;
const TEXELS_MAX_VEC4S: u64 = 4 << 20;

/// Whether a kernel should copy an operand of `vec4s` 16-byte texels into a texture, its reads
/// being `vec4s` or more (see `TEXELS_MIN_VEC4S`).
pub fn texels_pay_off(reads: u64, vec4s: u64) -> bool {
    reads >= TEXELS_MIN_VEC4S && vec4s <= TEXELS_MAX_VEC4S
}

/// Whether `vec4s` 16-byte texels fit one scratch texture on a device with `limits`: at most
/// `TEXELS_MAX_VEC4S`, in rows of `TEXEL_ROW` texels whose count, rounded up to the power of two
/// `texels` allocates, is within the adapter's 2-D texture size.
pub fn texels_fit(limits: &wgpu::Limits, vec4s: u64) -> bool {
    let max = u64::from(limits.max_texture_dimension_2d);
    let rows = vec4s.div_ceil(u64::from(TEXEL_ROW)).next_power_of_two();
    vec4s <= TEXELS_MAX_VEC4S && u64::from(TEXEL_ROW) <= max && rows <= max
}

#[derive(Default)]
pub struct ScratchBuffers {
    buffers: Mutex<HashMap<&'static str, wgpu::Buffer>>,
    textures: Mutex<HashMap<&'static str, (wgpu::Texture, wgpu::TextureView)>>,
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

    /// Copies `vec4s` 16-byte texels of `buffer` from `offset` (a multiple of 16) into the scratch
    /// texture for `role` (`TEXEL_ROW` texels a row, row-major) and returns its view, for kernels
    /// on CPU adapters: llvmpipe loads storage buffers lane by lane, a loop per load, but fetches
    /// texels as vectors, and a copy into a texture is a memcpy there.
    pub fn texels(
        &self,
        core: &DeviceCore,
        encoder: &mut Encoder,
        role: &'static str,
        buffer: &wgpu::Buffer,
        offset: u64,
        vec4s: u64,
    ) -> Result<wgpu::TextureView> {
        let row = u64::from(TEXEL_ROW);
        let (full_rows, rest) = (vec4s / row, vec4s % row);
        let (texture, view) = self.texture(core, role, vec4s.div_ceil(row))?;
        encoder.traced(core, ActivityKind::MemcpyDtoD, vec4s * 16, |encoder| {
            let copy = |encoder: &mut Encoder, start: u64, origin_row: u64, width: u64, rows: u64| {
                encoder.copy_buffer_to_texture(
                    wgpu::TexelCopyBufferInfo {
                        buffer,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: start,
                            bytes_per_row: Some(TEXEL_ROW * 16),
                            rows_per_image: Some(rows as u32),
                        },
                    },
                    wgpu::TexelCopyTextureInfo {
                        texture: &texture,
                        mip_level: 0,
                        origin: wgpu::Origin3d { x: 0, y: origin_row as u32, z: 0 },
                        aspect: wgpu::TextureAspect::All,
                    },
                    wgpu::Extent3d { width: width as u32, height: rows as u32, depth_or_array_layers: 1 },
                );
            };
            if full_rows > 0 {
                copy(encoder, offset, 0, row, full_rows);
            }
            if rest > 0 {
                copy(encoder, offset + full_rows * row * 16, full_rows, rest, 1);
            }
            Ok(())
        })?;
        Ok(view)
    }

    /// The scratch texture for `role`, at least `rows` rows of `TEXEL_ROW` texels. Heights grow by
    /// powers of two, so few sizes are ever made (wgpu zeroes each once, at its first partial copy).
    fn texture(&self, core: &DeviceCore, role: &'static str, rows: u64) -> Result<(wgpu::Texture, wgpu::TextureView)> {
        let mut textures = self.textures.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = textures.get(role).filter(|(t, _)| u64::from(t.height()) >= rows) {
            return Ok(found.clone());
        }
        let max = u64::from(core.limits.max_texture_dimension_2d);
        let height = rows.next_power_of_two();
        if height > max || u64::from(TEXEL_ROW) > max {
            return Err(Error::unimplemented(format!("{role}: {rows} texel rows exceed the adapter's texture size")));
        }
        log::debug!("tensorflow-wgpu: scratch texture {role} grows to {height} rows");
        let (texture, error) = core.capture_errors(|| {
            core.device.create_texture(&wgpu::TextureDescriptor {
                label: Some(role),
                size: wgpu::Extent3d { width: TEXEL_ROW, height: height as u32, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba32Uint,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            })
        });
        if let Some(e) = error {
            return Err(Error::resource_exhausted(format!("{role}: could not allocate a {height}-row texture: {e}")));
        }
        let view = texture.create_view(&wgpu::TextureViewDescriptor { label: Some(role), ..Default::default() });
        textures.insert(role, (texture.clone(), view.clone()));
        Ok((texture, view))
    }
}
