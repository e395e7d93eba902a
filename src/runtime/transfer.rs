//! Byte-exact copies and fills inside a command encoder, at any offset and size.
//!
//! wgpu's own `copy_buffer_to_buffer`/`clear_buffer` need 4-byte alignment and distinct buffers; the
//! rest goes through `wgsl/memory.wgsl`, in windows no larger than a storage binding may be.

use crate::error::Result;

use super::device::DeviceCore;
use super::encoder::Encoder;
use super::pipeline::{dispatch, Binding, PipelineSpec, Shader};
use super::trace::ActivityKind;

pub const MEMORY_SHADER: Shader = Shader {
    name: "memory",
    source: include_str!("../../wgsl/memory.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ByteParams {
    src_byte: u32,
    dst_byte: u32,
    len: u32,
    pattern: u32,
}

fn is_word_aligned(values: &[u64]) -> bool {
    values.iter().all(|v| v % wgpu::COPY_BUFFER_ALIGNMENT == 0)
}

/// Largest byte count one shader pass handles, leaving room for window alignment on both ends.
fn chunk_limit(core: &DeviceCore) -> u64 {
    let align = core.limits.min_storage_buffer_offset_alignment as u64;
    let max = core.limits.max_storage_buffer_binding_size.min(1 << 30);
    (max - 2 * align - 8) / 256 * 256
}

/// The aligned window of `buffer` covering `[pos, pos + len)` and `pos` relative to it.
fn window<'a>(core: &DeviceCore, buffer: &'a wgpu::Buffer, pos: u64, len: u64) -> (Binding<'a>, u32) {
    let align = core.limits.min_storage_buffer_offset_alignment as u64;
    let start = pos / align * align;
    let end = (pos + len).div_ceil(4) * 4;
    let end = end.min(buffer.size()).max(start + 4);
    (Binding { buffer, offset: start, size: end - start }, (pos - start) as u32)
}

/// Copies `len` bytes from `src[src_offset..]` to `dst[dst_offset..]` in encoder order.
pub fn encode_copy(
    core: &DeviceCore,
    encoder: &mut Encoder,
    src: &wgpu::Buffer,
    src_offset: u64,
    dst: &wgpu::Buffer,
    dst_offset: u64,
    len: u64,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    encoder.traced(core, ActivityKind::MemcpyDtoD, len, |encoder| {
        copy_untraced(core, encoder, src, src_offset, dst, dst_offset, len)
    })
}

fn copy_untraced(
    core: &DeviceCore,
    encoder: &mut Encoder,
    src: &wgpu::Buffer,
    src_offset: u64,
    dst: &wgpu::Buffer,
    dst_offset: u64,
    len: u64,
) -> Result<()> {
    let same_buffer = src == dst;
    if !same_buffer && is_word_aligned(&[src_offset, dst_offset, len]) {
        encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, len);
        return Ok(());
    }
    if same_buffer {
        // wgpu forbids a copy within one buffer: go through a temporary holding the source words.
        let start = src_offset / 4 * 4;
        let end = (src_offset + len).div_ceil(4) * 4;
        let temp = core.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("d2d staging"),
            size: end - start,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(src, start, &temp, 0, end - start);
        return encode_copy(core, encoder, &temp, src_offset - start, dst, dst_offset, len);
    }
    let pipeline =
        core.pipelines.get(core, &MEMORY_SHADER, &PipelineSpec { entry: "copy_bytes", ..Default::default() })?;
    let chunk = chunk_limit(core);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk);
        let (src_window, src_byte) = window(core, src, src_offset + done, n);
        let (dst_window, dst_byte) = window(core, dst, dst_offset + done, n);
        let params = ByteParams { src_byte, dst_byte, len: n as u32, pattern: 0 };
        let words = (dst_byte as u64 + n).div_ceil(4) - dst_byte as u64 / 4;
        dispatch(
            core,
            encoder,
            "copy_bytes",
            &pipeline,
            &[src_window, dst_window],
            bytemuck::bytes_of(&params),
            words,
        )?;
        done += n;
    }
    Ok(())
}

/// Fills `len` bytes at `dst[offset..]`: byte k of the range gets byte `k % 4` of `pattern`
/// (little-endian), which serves memset (pattern = byte x 4), memset32 and mem_zero.
pub fn encode_fill(
    core: &DeviceCore,
    encoder: &mut Encoder,
    dst: &wgpu::Buffer,
    offset: u64,
    len: u64,
    pattern: u32,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    encoder.traced(core, ActivityKind::Memset, len, |encoder| fill_untraced(core, encoder, dst, offset, len, pattern))
}

fn fill_untraced(
    core: &DeviceCore,
    encoder: &mut Encoder,
    dst: &wgpu::Buffer,
    offset: u64,
    len: u64,
    pattern: u32,
) -> Result<()> {
    if pattern == 0 && is_word_aligned(&[offset, len]) {
        encoder.clear_buffer(dst, offset, Some(len));
        return Ok(());
    }
    let pipeline =
        core.pipelines.get(core, &MEMORY_SHADER, &PipelineSpec { entry: "fill_bytes", ..Default::default() })?;
    let chunk = chunk_limit(core);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk);
        let (dst_window, dst_byte) = window(core, dst, offset + done, n);
        let params = ByteParams { src_byte: 0, dst_byte, len: n as u32, pattern };
        let words = (dst_byte as u64 + n).div_ceil(4) - dst_byte as u64 / 4;
        // Binding 0 is unused by fill_bytes; the destination window stands in for it.
        dispatch(
            core,
            encoder,
            "fill_bytes",
            &pipeline,
            &[dst_window, dst_window],
            bytemuck::bytes_of(&params),
            words,
        )?;
        done += n;
    }
    Ok(())
}
