//! Convolution as an implicit GEMM on the tiled matmul: im2col(input)[batch*oh*ow, kh*kw*c] x
//! filter[kh*kw*c, oc]. Where it fits, `wgsl/conv_tiles_subgroup.wgsl` reads the im2col matrix
//! straight from uniform windows of the input ([`launch_conv_windows`]); otherwise it exists only
//! as packed tiles (`wgsl/matmul_pack.wgsl`'s `pack_im2col*` entries, then `matmul_tiles*.wgsl`), a
//! chunk of row tiles at a time.

use crate::error::{Error, Result};
use crate::runtime::encoder::Encoder;
use crate::runtime::memory::DeviceSlice;
use crate::runtime::pipeline::{
    dispatch, dispatch_workgroups, dispatch_workgroups_with_texels, loops_fit, nested_loop_iterations, storage_window,
    vec4_window, Binding, PipelineSpec, Shader,
};
use crate::runtime::scratch::{texels_fit, TEXELS_A, TEXELS_B};
use crate::runtime::transfer::encode_copy;
use crate::runtime::{DeviceCore, Stream};

use super::matmul::{
    choose_kernel, encode_pack, encode_products, pack, pack_pipeline, subgroup_tiles, texel_tiles, vec4_entry, Kernel,
    Operand, PackParams, TileShape, PACK_SHADER, TILE, TILE_BYTES,
};
use super::windows::binding_limit;
use super::{DType, TensorRef};

/// `pack_im2col_window`'s layout: the packed tiles (storage), then the input window (uniform).
pub const WINDOW_SHADER: Shader =
    Shader { name: "matmul_pack_window", storage_buffers: 1, uniform_buffers: 1, ..PACK_SHADER };

/// The convolution read through input windows: the output (storage), the input window and the
/// filter slabs (uniform).
pub const CONV_TILES_SHADER: Shader = Shader {
    name: "conv_tiles_subgroup",
    source: include_str!("../../wgsl/conv_tiles_subgroup.wgsl"),
    storage_buffers: 1,
    uniform_buffers: 1 + CONV_SLABS,
    textures: 0,
};
/// `conv_tiles_subgroup` with the input and the filter read from two textures, a whole convolution
/// per dispatch (`wgsl/conv_tiles_texels.wgsl`), for CPU adapters (see `launch_conv_texels`).
pub const CONV_TEXELS_SHADER: Shader = Shader {
    name: "conv_tiles_texels",
    source: include_str!("../../wgsl/conv_tiles_texels.wgsl"),
    storage_buffers: 1,
    uniform_buffers: 0,
    textures: 2,
};
/// Filter slabs one `conv_tiles_subgroup` dispatch binds (`scripts/gen-matmul-tiles.py`'s CONV_SLABS).
const CONV_SLABS: u32 = 3;
/// Output pixels and channels one workgroup of `conv_tiles_subgroup` computes.
const CONV_PIXELS_PER_GROUP: u32 = 32;
const CONV_CHANNELS_PER_GROUP: u32 = 32;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ConvTileParams {
    m: u32,
    n: u32,
    row0: u32,
    rows: u32,
    c_off: u32,
    accumulate: u32,
    input_at: i32,
    first_tap: u32,
    taps: u32,
    taps_per_slab: u32,
    _pad: [u32; 2],
    image: [u32; 4],
    window: [u32; 4],
    dilation_pad: [u32; 4],
}

/// An NHWC convolution's geometry, for the implicit GEMM.
#[derive(Clone, Copy, Debug)]
pub struct Im2col {
    pub batch: u32,
    pub h: u32,
    pub w: u32,
    pub c: u32,
    pub oh: u32,
    pub ow: u32,
    pub kh: u32,
    pub kw: u32,
    pub strides: [u32; 2],
    pub dilations: [u32; 2],
    pub pads: [u32; 2],
}

/// Bytes of packed im2col tiles per chunk: the matrix of a big convolution would be hundreds of MiB.
const CHUNK_BYTES: u64 = 64 << 20;

/// The uniform window `pack_im2col_window` reads the input through (the shader's array size).
const WINDOW_BYTES: u64 = 64 << 10;

/// One `pack_im2col_window` dispatch: rows `first..first + rows` of a chunk (im2col rows counted
/// from the chunk's first), read through the window at `offset` in the input's buffer.
#[derive(Debug, PartialEq, Eq)]
struct WindowDispatch {
    first: u32,
    rows: u32,
    offset: u64,
    /// Where the input starts within the window, in elements (negative: before it).
    input_at: i64,
}

/// The input bytes that im2col rows `rows` read: from the first input row a window of the first
/// output row touches to the last one of the last (padding taps clamp into the same rows).
fn input_span(g: &Im2col, rows: std::ops::Range<u64>) -> std::ops::Range<u64> {
    let (h, w, c) = (g.h as u64, g.w as u64, g.c as u64);
    let per_image = g.oh as u64 * g.ow as u64;
    let input_row = |r: u64, last_tap: bool| {
        let (image, oy) = (r / per_image, (r / g.ow as u64) % g.oh as u64);
        let tap = if last_tap { (g.kh as i64 - 1) * g.dilations[0] as i64 } else { 0 };
        let iy = (oy * g.strides[0] as u64) as i64 - g.pads[0] as i64 + tap;
        image * h + iy.clamp(0, h as i64 - 1) as u64
    };
    let bytes_per_row = w * c * 4;
    input_row(rows.start, false) * bytes_per_row..(input_row(rows.end - 1, true) + 1) * bytes_per_row
}

/// The input bytes that output pixels `pixels` of `conv_tiles_subgroup` read, to the pixel: that
/// kernel reads no padding tap, so its span starts at the first pixel's first tap inside the image
/// and ends after the last pixel's last one (about 40% more pixels per window than whole rows on
/// a 3x3 convolution). A tap's address grows with the pixel, so no pixel between reads outside.
fn pixel_span(g: &Im2col, pixels: std::ops::Range<u64>) -> std::ops::Range<u64> {
    let (h, w) = (i64::from(g.h), i64::from(g.w));
    let per_image = u64::from(g.oh) * u64::from(g.ow);
    // (image, input row, input column) of tap (0, 0) of `pixel`.
    let tap0 = |pixel: u64| {
        let (oy, ox) = ((pixel / u64::from(g.ow)) % u64::from(g.oh), pixel % u64::from(g.ow));
        let iy = oy as i64 * i64::from(g.strides[0]) - i64::from(g.pads[0]);
        let ix = ox as i64 * i64::from(g.strides[1]) - i64::from(g.pads[1]);
        (pixel / per_image, iy, ix)
    };
    // Pixels of the image before the first tap any of `pixels` reads inside it.
    let (image, iy, ix) = tap0(pixels.start);
    let lo = if iy < 0 { 0 } else { (iy * w + ix.clamp(0, w)).min(h * w) };
    // Pixels of the image up to and including the last tap any of them reads inside it.
    let (last_image, iy, ix) = tap0(pixels.end - 1);
    let (iy, ix) = (iy + i64::from((g.kh - 1) * g.dilations[0]), ix + i64::from((g.kw - 1) * g.dilations[1]));
    let hi = if iy >= h { h * w } else { (iy * w + (ix + 1).clamp(0, w)).clamp(0, h * w) };
    let (image_pixels, pixel_bytes) = (g.h as u64 * g.w as u64, g.c as u64 * 4);
    (image * image_pixels + lo as u64) * pixel_bytes..(last_image * image_pixels + hi as u64) * pixel_bytes
}

/// Where a uniform window over `span` (bytes of `input`) binds in the input's buffer, if one does.
fn window_offset(input: &DeviceSlice, align: u64, span: std::ops::Range<u64>) -> Option<u64> {
    let buffer_size = input.buffer().size();
    let (start, end) = (input.offset + span.start, input.offset + span.end);
    let offset = (start / align * align).min(buffer_size.checked_sub(WINDOW_BYTES)? / align * align);
    (offset <= start && end <= offset + WINDOW_BYTES).then_some(offset)
}

/// Splits the `m` output pixels into `conv_tiles_subgroup` dispatches whose input fits one uniform
/// window, as many whole workgroups of pixels each as fit. None where one workgroup's do not.
fn plan_pixel_windows(g: &Im2col, input: &DeviceSlice, align: u64, m: u64) -> Option<Vec<WindowDispatch>> {
    let unit = u64::from(CONV_PIXELS_PER_GROUP);
    let window = |span| window_offset(input, align, span);
    let mut dispatches = Vec::new();
    let mut first = 0;
    while first < m {
        let mut end = (first + unit).min(m);
        let mut offset = window(pixel_span(g, first..end))?;
        while end < m {
            let next = (end + unit).min(m);
            match window(pixel_span(g, first..next)) {
                Some(wider) => (end, offset) = (next, wider),
                None => break,
            }
        }
        dispatches.push(WindowDispatch {
            first: first as u32,
            rows: (end - first) as u32,
            offset,
            input_at: (input.offset as i64 - offset as i64) / 4,
        });
        first = end;
    }
    Some(dispatches)
}

/// Convolution by `conv_tiles_subgroup`: the input read through uniform windows, the filter through
/// slabs of whole taps, no packing pass. Returns false, encoding nothing, where it does not apply:
/// no subgroup tile kernel, not f32, channels or output channels not a multiple of 4, a filter tap
/// wider than a slab, the input not on a vec4 or its buffer not bindable as uniform windows, or an
/// output row's input wider than a window.
pub fn launch_conv_windows(
    stream: &Stream,
    g: &Im2col,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<bool> {
    let device = stream.device();
    let limits = &device.limits;
    let windows_fit = limits.max_uniform_buffer_binding_size >= WINDOW_BYTES
        && limits.max_uniform_buffers_per_shader_stage > CONV_SLABS + 1;
    let Some(mut p) = conv_tile_params(device, g, input, filter, out) else {
        return Ok(false);
    };
    if !windows_fit || p.taps_per_slab == 0 {
        return Ok(false);
    }
    let (oc, taps, taps_per_slab) = (u64::from(p.n), u64::from(g.kh) * u64::from(g.kw), u64::from(p.taps_per_slab));
    let tap_bytes = u64::from(g.c) * oc * 4;
    let m = u64::from(p.m);
    let mem = device.memory.resolve(input.address, input.byte_len())?;
    if !mem.offset.is_multiple_of(16) || !mem.buffer().usage().contains(wgpu::BufferUsages::UNIFORM) {
        return Ok(false);
    }
    let align = u64::from(limits.min_uniform_buffer_offset_alignment);
    let Some(windows) = plan_pixel_windows(g, &mem, align, m) else {
        return Ok(false);
    };
    // Each slab on a uniform-binding boundary.
    let slab_bytes = taps_per_slab * tap_bytes;
    let slab_stride = slab_bytes.next_multiple_of(align);
    let slabs = taps.div_ceil(taps_per_slab);
    let scratch = device.scratch.get(device, "conv filter slabs", (slabs - 1) * slab_stride + WINDOW_BYTES)?;
    let filter_mem = device.memory.resolve(filter.address, filter.byte_len())?;
    let c_mem = device.memory.resolve(out.address, out.byte_len())?;
    // One buffer may not be a uniform and a storage binding of one dispatch: where the output shares
    // the input's buffer (TF's BFC allocator carves both from one region), the kernel writes a
    // scratch buffer that is copied into the output afterwards.
    let out_bytes = out.byte_len().next_multiple_of(4);
    let staged_out = if c_mem.buffer() == mem.buffer() {
        if out_bytes > limits.max_storage_buffer_binding_size {
            return Ok(false);
        }
        Some(device.scratch.get(device, "conv output", out_bytes)?)
    } else {
        None
    };
    let aliases = [("T", DType::F32.wgsl())];
    let taps_per_dispatch = taps_per_slab * u64::from(CONV_SLABS);
    stream.encode(|core, encoder| {
        for s in 0..slabs {
            let len = slab_bytes.min(filter.byte_len() - s * slab_bytes);
            let (src, at) = (filter_mem.buffer(), filter_mem.offset + s * slab_bytes);
            encode_copy(core, encoder, src, at, &scratch, s * slab_stride, len)?;
        }
        let (c_bind, c_off) = match &staged_out {
            Some(staged) => (Binding { buffer: staged, offset: 0, size: out_bytes }, 0),
            None => storage_window(core, &c_mem, 4)?,
        };
        p.c_off = c_off;
        let spec = PipelineSpec { entry: vec4_entry("conv", p.n, c_off), aliases: &aliases, constants: &[] };
        let pipeline = core.pipelines.get(core, &CONV_TILES_SHADER, &spec)?;
        for d in &windows {
            let window = Binding { buffer: mem.buffer(), offset: d.offset, size: WINDOW_BYTES };
            (p.row0, p.rows, p.input_at) = (d.first, d.rows, (d.input_at / 4) as i32);
            for first_tap in (0..taps).step_by(taps_per_dispatch as usize) {
                let first_slab = first_tap / taps_per_slab;
                // Slabs past the filter's last repeat the group's first; the shader skips them.
                let slab = |i: u64| {
                    let index = if first_slab + i < slabs { first_slab + i } else { first_slab };
                    Binding { buffer: &scratch, offset: index * slab_stride, size: WINDOW_BYTES }
                };
                let mut bindings = vec![c_bind, window];
                bindings.extend((0..u64::from(CONV_SLABS)).map(slab));
                p.first_tap = first_tap as u32;
                p.taps = taps_per_dispatch.min(taps - first_tap) as u32;
                p.accumulate = (first_tap > 0) as u32;
                let groups = [(oc as u32).div_ceil(CONV_CHANNELS_PER_GROUP), d.rows.div_ceil(CONV_PIXELS_PER_GROUP), 1];
                let params = bytemuck::bytes_of(&p);
                dispatch_workgroups(core, encoder, "conv tiles subgroup", &pipeline, &bindings, params, groups)?;
            }
        }
        if let Some(staged) = &staged_out {
            encode_copy(core, encoder, staged, 0, c_mem.buffer(), c_mem.offset, out.byte_len())?;
        }
        Ok(())
    })?;
    Ok(true)
}

/// The parameters of the subgroup convolution kernels for `g`, or None where they do not apply: no
/// subgroup tile kernel, not f32, channels or output channels not a multiple of 4, or tensors past
/// 2^31 elements. `taps_per_slab`: the filter taps of one 64 KiB slab, 0 where one tap is bigger
/// (the window kernel then does not apply; the texel kernel adds up taps one at a time).
fn conv_tile_params(
    device: &DeviceCore,
    g: &Im2col,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Option<ConvTileParams> {
    let oc = *filter.shape.last().unwrap_or(&0) as u64;
    let (c, taps) = (u64::from(g.c), u64::from(g.kh) * u64::from(g.kw));
    let m = u64::from(g.batch) * u64::from(g.oh) * u64::from(g.ow);
    let fits = subgroup_tiles(device)
        && input.dtype == DType::F32
        && c.is_multiple_of(4)
        && oc.is_multiple_of(4)
        && c * oc > 0
        && m > 0
        && m <= u64::from(u32::MAX / 2)
        && input.num_elements() <= u64::from(u32::MAX / 2)
        && out.num_elements() <= u64::from(u32::MAX / 2);
    // A slab holds whole taps: c x oc filter values each, at most a window's worth.
    let taps_per_slab = (WINDOW_BYTES / (c * oc * 4).max(1)).min(taps);
    fits.then(|| ConvTileParams {
        m: m as u32,
        n: oc as u32,
        taps_per_slab: taps_per_slab as u32,
        image: [g.h, g.w, g.c / 4, g.ow],
        window: [g.kw, g.strides[0], g.strides[1], g.oh],
        dilation_pad: [g.dilations[0], g.dilations[1], g.pads[0], g.pads[1]],
        ..bytemuck::Zeroable::zeroed()
    })
}

/// Convolution by `conv_tiles_texels`: the input and the filter copied whole into the two scratch
/// textures, then one dispatch for the whole convolution, its taps added up in the window kernel's
/// groups (one tap at a time where a tap passes a slab). Returns false, encoding nothing, where it
/// does not apply: not `matmul::texel_tiles`, `conv_tile_params` None, the input or filter off a
/// vec4 or past a scratch texture, the grid past a dispatch, or one invocation's loops past the
/// adapter's limit.
fn launch_conv_texels(
    stream: &Stream,
    g: &Im2col,
    (input, filter, out): (&TensorRef, &TensorRef, &TensorRef),
) -> Result<bool> {
    let device = stream.device();
    if !texel_tiles(device) {
        return Ok(false);
    }
    let Some(mut p) = conv_tile_params(device, g, input, filter, out) else {
        return Ok(false);
    };
    p.taps_per_slab = p.taps_per_slab.max(1);
    let (input_vec4s, filter_vec4s) = (input.num_elements() / 4, filter.num_elements() / 4);
    let taps = u64::from(g.kh) * u64::from(g.kw);
    let group_taps = u64::from(p.taps_per_slab) * u64::from(CONV_SLABS);
    let groups = taps.div_ceil(group_taps);
    // The tap-group, tap and channel loops, and the four-column stores of 32 pixels per group.
    let iterations = nested_loop_iterations(&[groups, group_taps.min(taps), u64::from(p.image[2])]) + groups * 32 * 5;
    let grid = [p.n.div_ceil(CONV_CHANNELS_PER_GROUP), p.m.div_ceil(CONV_PIXELS_PER_GROUP), 1];
    let input_mem = device.memory.resolve(input.address, input.byte_len())?;
    let filter_mem = device.memory.resolve(filter.address, filter.byte_len())?;
    if !texels_fit(&device.limits, input_vec4s)
        || !texels_fit(&device.limits, filter_vec4s)
        || !input_mem.offset.is_multiple_of(16)
        || !filter_mem.offset.is_multiple_of(16)
        || grid.iter().any(|&g| g > device.limits.max_compute_workgroups_per_dimension)
        || !loops_fit(device, iterations)
    {
        return Ok(false);
    }
    let c_mem = device.memory.resolve(out.address, out.byte_len())?;
    let aliases = [("T", DType::F32.wgsl())];
    (p.row0, p.rows, p.taps, p.first_tap, p.input_at) = (0, p.m, taps as u32, 0, 0);
    stream.encode(|core, encoder| {
        let input_texels =
            core.scratch.texels(core, encoder, TEXELS_A, input_mem.buffer(), input_mem.offset, input_vec4s)?;
        let filter_texels =
            core.scratch.texels(core, encoder, TEXELS_B, filter_mem.buffer(), filter_mem.offset, filter_vec4s)?;
        let (c_bind, c_off) = storage_window(core, &c_mem, 4)?;
        p.c_off = c_off;
        let spec = PipelineSpec { entry: vec4_entry("conv", p.n, c_off), aliases: &aliases, constants: &[] };
        let pipeline = core.pipelines.get(core, &CONV_TEXELS_SHADER, &spec)?;
        let texels = [&input_texels, &filter_texels];
        let params = bytemuck::bytes_of(&p);
        dispatch_workgroups_with_texels(core, encoder, "conv tiles texels", &pipeline, &[c_bind], &texels, params, grid)
    })?;
    Ok(true)
}

/// Splits the chunk of im2col rows `chunk` (padded to `padded_end`) into dispatches whose input
/// fits one uniform window of `input`'s buffer, a whole number of output rows at a time where it
/// can. None where one output row's input does not fit.
fn plan_windows(
    g: &Im2col,
    input: &DeviceSlice,
    align: u64,
    chunk: std::ops::Range<u64>,
    padded_end: u64,
) -> Option<Vec<WindowDispatch>> {
    if input.buffer().size() < WINDOW_BYTES {
        return None;
    }
    let window = |span| window_offset(input, align, span);
    let ow = g.ow as u64;
    let mut dispatches = Vec::new();
    let mut first = chunk.start;
    while first < chunk.end {
        let mut end = ((first / ow + 1) * ow).min(chunk.end);
        let mut offset = window(input_span(g, first..end))?;
        while end < chunk.end {
            let next = (end + ow).min(chunk.end);
            match window(input_span(g, first..next)) {
                Some(wider) => (end, offset) = (next, wider),
                None => break,
            }
        }
        let stop = if end == chunk.end { padded_end } else { end };
        dispatches.push(WindowDispatch {
            first: (first - chunk.start) as u32,
            rows: (stop - first) as u32,
            offset,
            input_at: (input.offset as i64 - offset as i64) / 4,
        });
        first = end;
    }
    Some(dispatches)
}

/// How the packer reads the input.
enum Packer {
    /// `pack_im2col`: element by element, from storage.
    Elements,
    /// `pack_im2col_vec4`: a filter tap's channels as vec4s, from storage (f32, a multiple of 4
    /// channels, the input starting on a vec4).
    Vec4s(DeviceSlice),
    /// `pack_im2col_window`: the same through uniform windows, one dispatch per window, where the
    /// input's buffer can be bound as one.
    Windows(DeviceSlice),
}

fn choose_packer(device: &DeviceCore, g: &Im2col, input: &TensorRef) -> Result<Packer> {
    if input.dtype != DType::F32 || !g.c.is_multiple_of(4) {
        return Ok(Packer::Elements);
    }
    let mem = device.memory.resolve(input.address, input.byte_len())?;
    if !mem.offset.is_multiple_of(16) || vec4_window(device, &mem, 4)?.is_none() {
        return Ok(Packer::Elements);
    }
    let windows = device.limits.max_uniform_buffer_binding_size >= WINDOW_BYTES
        && mem.buffer().usage().contains(wgpu::BufferUsages::UNIFORM);
    Ok(if windows { Packer::Windows(mem) } else { Packer::Vec4s(mem) })
}

/// Encodes a per-tap packer into `dst`: `pack_im2col_vec4` over the whole chunk, or
/// `pack_im2col_window` over `windows`.
fn encode_taps(
    core: &DeviceCore,
    encoder: &mut Encoder,
    input: &DeviceSlice,
    mut p: PackParams,
    windows: Option<&[WindowDispatch]>,
    dst: &wgpu::Buffer,
    tiles: u64,
) -> Result<()> {
    let device = core;
    let (shader, entry) = match windows {
        Some(_) => (&WINDOW_SHADER, "pack_im2col_window"),
        None => (&PACK_SHADER, "pack_im2col_vec4"),
    };
    // One invocation per (row, filter tap) and one per row for the zero columns; a dispatch covers
    // at most the chunk's rows.
    let per_row = u64::from(p.cols / p.image[2]) + 1;
    let invocations = u64::from(p.row_tiles * TILE) * per_row;
    let pipeline = pack_pipeline(device, shader, entry, DType::F32, &p, (tiles, invocations))?;
    {
        let dst = Binding { buffer: dst, offset: 0, size: tiles * TILE_BYTES };
        let Some(windows) = windows else {
            let lost = || Error::internal("im2col input lost its vec4 view");
            let (src, first) = vec4_window(core, input, 4)?.ok_or_else(lost)?;
            (p.dispatch_row, p.dispatch_rows, p.src_off) = (0, p.row_tiles * TILE, first);
            let invocations = u64::from(p.dispatch_rows) * per_row;
            return dispatch(core, encoder, entry, &pipeline, &[src, dst], bytemuck::bytes_of(&p), invocations);
        };
        for d in windows {
            let window = Binding { buffer: input.buffer(), offset: d.offset, size: WINDOW_BYTES };
            (p.dispatch_row, p.dispatch_rows, p.src_off) = (d.first, d.rows, d.input_at as i32 as u32);
            let invocations = u64::from(d.rows) * per_row;
            dispatch(core, encoder, entry, &pipeline, &[dst, window], bytemuck::bytes_of(&p), invocations)?;
        }
        Ok(())
    }
}

/// Convolution as an implicit GEMM on the tiled kernel. Returns false, encoding nothing, where the
/// direct convolution is the better kernel (see `choose_kernel`).
pub fn launch_conv_tiles(
    stream: &Stream,
    g: &Im2col,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<bool> {
    let device = stream.device();
    let m = g.batch as u64 * g.oh as u64 * g.ow as u64;
    let k = g.kh as u64 * g.kw as u64 * g.c as u64;
    let n = *filter.shape.last().unwrap_or(&0) as u64;
    if m > u32::MAX as u64 / 2 || k > u32::MAX as u64 / 2 || input.num_elements() > u64::from(u32::MAX / 2) {
        return Ok(false);
    }
    let (m, k, n) = (m as u32, k as u32, n as u32);
    // Judge the kernel by a chunk of rows (scratch and dispatch count), as chunks run one by one.
    let tiles = choose_kernel(device, out.dtype, 1, m.min(16 * TILE), n, k) == Kernel::Tiles;
    // The texel kernel also takes outputs of under 32 pixels with a deep enough contraction (ResNet50's
    // last stage at 64x64: 16 pixels, 3x3 x 512 -> 512).
    let small_but_deep = m < 32 && u64::from(k) * u64::from(n) >= 1 << 16;
    if (tiles || small_but_deep) && launch_conv_texels(stream, g, (input, filter, out))? {
        return Ok(true);
    }
    if !tiles {
        return Ok(false);
    }
    if launch_conv_windows(stream, g, input, filter, out)? {
        return Ok(true);
    }
    // The HWIO filter as a [kh * kw * c, oc] matrix.
    let b = Operand { tensor: filter, rows: k, cols: n, rs: n, cs: 1, batch_strides: Vec::new() };
    let (row_tiles, k_tiles) = (m.div_ceil(TILE), k.div_ceil(TILE));
    let chunk = ((CHUNK_BYTES / (k_tiles as u64 * TILE_BYTES)).max(1) as u32).min(row_tiles);
    let shape = TileShape { m, n, k, batches: 1, accumulate: false };
    let mut packer = choose_packer(device, g, input)?;
    let mut p = im2col_pack_params(g, k);
    // One `encode` call for all of it: the packed operands live in device-wide scratch, so no other
    // launch (another thread on this stream) may come between packing and products.
    stream.encode(|core, encoder| {
        let b_tiles = pack(core, encoder, "matmul packed B", &b, &[])?;
        for first in (0..row_tiles).step_by(chunk as usize) {
            let tiles = chunk.min(row_tiles - first);
            (p.row0, p.rows, p.row_tiles) = (first * TILE, (m - first * TILE).min(tiles * TILE), tiles);
            let a_tiles = device.scratch.get(device, "matmul packed A", (tiles * k_tiles) as u64 * TILE_BYTES)?;
            encode_im2col_rows(core, encoder, g, input, &mut packer, p, &a_tiles)?;
            encode_products(core, encoder, &a_tiles, &b_tiles, &shape, first..first + tiles, out)?;
        }
        Ok(true)
    })
}

/// The packing parameters of im2col rows `cols` wide (`row0`, `rows` and `row_tiles` per chunk).
fn im2col_pack_params(g: &Im2col, cols: u32) -> PackParams {
    let mut p: PackParams = bytemuck::Zeroable::zeroed();
    (p.cols, p.col_tiles, p.batches) = (cols, cols.div_ceil(TILE), 1);
    p.image = [g.h, g.w, g.c, g.ow];
    p.window = [g.kw, g.strides[0], g.strides[1], g.oh];
    p.dilation_pad = [g.dilations[0], g.dilations[1], g.pads[0], g.pads[1]];
    p
}

/// Packs im2col rows `p.row0..p.row0 + p.rows` (padded to `p.row_tiles` tiles) into `dst` with the
/// packer `packer` names, falling back to the storage packer where the windows do not fit.
fn encode_im2col_rows(
    core: &DeviceCore,
    encoder: &mut Encoder,
    g: &Im2col,
    input: &TensorRef,
    packer: &mut Packer,
    p: PackParams,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let packed = u64::from(p.row_tiles) * u64::from(p.col_tiles);
    if let Packer::Windows(mem) = &*packer {
        let align = u64::from(core.limits.min_uniform_buffer_offset_alignment);
        let rows = u64::from(p.row0)..u64::from(p.row0 + p.rows);
        match plan_windows(g, mem, align, rows, u64::from(p.row0 + p.row_tiles * TILE)) {
            Some(windows) => return encode_taps(core, encoder, mem, p, Some(&windows), dst, packed),
            None => *packer = Packer::Vec4s(mem.clone()),
        }
    }
    match &*packer {
        Packer::Windows(_) => Ok(()),
        Packer::Vec4s(mem) => encode_taps(core, encoder, mem, p, None, dst, packed),
        Packer::Elements => encode_pack(core, encoder, "pack_im2col", input, p, dst, packed),
    }
}

/// Conv2DBackpropFilter as a tiled product: the gradient's transpose, dW^T[oc, kh * kw * c] =
/// dy^T x im2col(x), into `out_t`. The contraction runs over the output pixels, in chunks of packed
/// im2col rows, each chunk's products added to the last. Returns false, encoding nothing, where
/// the tiled kernel is not the better one (see `choose_kernel`).
pub fn launch_grad_filter_tiles(
    stream: &Stream,
    g: &Im2col,
    x: &TensorRef,
    dy: &TensorRef,
    out_t: &TensorRef,
) -> Result<bool> {
    let device = stream.device();
    let pixels = u64::from(g.batch) * u64::from(g.oh) * u64::from(g.ow);
    let taps = u64::from(g.kh) * u64::from(g.kw) * u64::from(g.c);
    let oc = *dy.shape.last().unwrap_or(&0) as u64;
    if [pixels, taps, oc, x.num_elements(), dy.num_elements()].iter().any(|&v| v > u64::from(u32::MAX / 2)) {
        return Ok(false);
    }
    let (k, n, m) = (pixels as u32, taps as u32, oc as u32);
    let (pixel_tiles, col_tiles) = (k.div_ceil(TILE), n.div_ceil(TILE));
    // Within the binding limit too, so that a lowered one (tests) runs several chunks.
    let chunk_bytes = CHUNK_BYTES.min(binding_limit(device));
    let chunk = ((chunk_bytes / (u64::from(col_tiles) * TILE_BYTES)).max(1) as u32).min(pixel_tiles);
    // Judge the kernel by a chunk (scratch and dispatch count), as chunks run one by one.
    if choose_kernel(device, out_t.dtype, 1, m, n, (chunk * TILE).min(k)) != Kernel::Tiles {
        return Ok(false);
    }
    let mut packer = choose_packer(device, g, x)?;
    let mut p = im2col_pack_params(g, n);
    let elem = dy.dtype.size();
    // One `encode` call, as in `launch_conv_tiles`.
    stream.encode(|core, encoder| {
        for first in (0..pixel_tiles).step_by(chunk as usize) {
            let tiles = chunk.min(pixel_tiles - first);
            (p.row0, p.rows, p.row_tiles) = (first * TILE, (k - first * TILE).min(tiles * TILE), tiles);
            let b_tiles = device.scratch.get(device, "matmul packed B", u64::from(tiles * col_tiles) * TILE_BYTES)?;
            encode_im2col_rows(core, encoder, g, x, &mut packer, p, &b_tiles)?;
            let dy_rows = TensorRef {
                address: dy.address + u64::from(p.row0) * oc * elem,
                dtype: dy.dtype,
                shape: vec![i64::from(p.rows), oc as i64],
            };
            let a = Operand { tensor: &dy_rows, rows: m, cols: p.rows, rs: 1, cs: m, batch_strides: Vec::new() };
            let a_tiles = pack(core, encoder, "matmul packed A", &a, &[])?;
            let shape = TileShape { m, n, k: p.rows, batches: 1, accumulate: first > 0 };
            encode_products(core, encoder, &a_tiles, &b_tiles, &shape, 0..m.div_ceil(TILE), out_t)?;
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(batch: u32, hw: u32, c: u32, k: u32, pad: u32) -> Im2col {
        let out = hw + 2 * pad - (k - 1);
        Im2col {
            batch,
            h: hw,
            w: hw,
            c,
            oh: out,
            ow: out,
            kh: k,
            kw: k,
            strides: [1, 1],
            dilations: [1, 1],
            pads: [pad, pad],
        }
    }

    #[test]
    fn input_span_covers_the_rows_of_the_taps() {
        // 3x3 SAME on 56x56x64: an output row reads 3 input rows (2 on the image's edges).
        let g = geometry(2, 56, 64, 3, 1);
        let row = 56 * 64 * 4;
        assert_eq!(input_span(&g, 0..56), 0..2 * row);
        assert_eq!(input_span(&g, 56..112), 0..3 * row);
        assert_eq!(input_span(&g, 55 * 56..56 * 56), 54 * row..56 * row);
        // Rows across two images span the end of one and the start of the next.
        assert_eq!(input_span(&g, 55 * 56..57 * 56), 54 * row..58 * row);
    }

    #[test]
    fn pixel_span_starts_and_ends_at_the_taps_inside_the_image() {
        // 3x3 SAME on 56x56x64.
        let g = geometry(2, 56, 64, 3, 1);
        let px = 64 * 4;
        // The first pixels read no row above the image nor column left of it.
        assert_eq!(pixel_span(&g, 0..1), 0..(56 + 2) * px);
        // Pixel (1, 1) to pixel (3, 4): from (0, 0) to (4, 5).
        assert_eq!(pixel_span(&g, 57..3 * 56 + 5), 0..(4 * 56 + 6) * px);
        // Pixel (2, 10) to (2, 12): from (1, 9) to (3, 13).
        assert_eq!(pixel_span(&g, 2 * 56 + 10..2 * 56 + 13), (56 + 9) * px..(3 * 56 + 14) * px);
        // The last row reads no row below the image; across images the span runs on.
        let image = 56 * 56;
        assert_eq!(pixel_span(&g, image - 1..image), (image - 56 - 2) * px..image * px);
        assert_eq!(pixel_span(&g, image - 2..image + 1), (image - 56 - 3) * px..(image + 56 + 2) * px);
        // Stride 2 with VALID padding: pixel (1, 1) reads (2, 2) to (4, 4).
        let strided = Im2col { strides: [2, 2], pads: [0, 0], oh: 27, ow: 27, ..geometry(1, 56, 64, 3, 0) };
        assert_eq!(pixel_span(&strided, 28..29), (2 * 56 + 2) * px..(4 * 56 + 5) * px);
        // Padding taps past the right edge: pixel (0, 55) of 3x3 SAME ends at (1, 55). Its top
        // taps lie above the image, where the next row's pixels would start reading at column 0.
        assert_eq!(pixel_span(&g, 55..56), 0..(2 * 56) * px);
    }

    /// The bytes every in-image tap of `pixels` reads, found tap by tap.
    fn taps_read(g: &Im2col, pixels: std::ops::Range<u64>) -> Option<std::ops::Range<u64>> {
        let (h, w) = (i64::from(g.h), i64::from(g.w));
        let mut read: Option<std::ops::Range<u64>> = None;
        for pixel in pixels {
            let (image, oy, ox) =
                (pixel / u64::from(g.oh * g.ow), (pixel / u64::from(g.ow)) % u64::from(g.oh), pixel % u64::from(g.ow));
            for ky in 0..i64::from(g.kh) {
                for kx in 0..i64::from(g.kw) {
                    let iy =
                        oy as i64 * i64::from(g.strides[0]) - i64::from(g.pads[0]) + ky * i64::from(g.dilations[0]);
                    let ix =
                        ox as i64 * i64::from(g.strides[1]) - i64::from(g.pads[1]) + kx * i64::from(g.dilations[1]);
                    if (0..h).contains(&iy) && (0..w).contains(&ix) {
                        let at = (image * u64::from(g.h * g.w) + (iy * w + ix) as u64) * u64::from(g.c) * 4;
                        let end = at + u64::from(g.c) * 4;
                        read = Some(read.map_or(at..end, |r| r.start.min(at)..r.end.max(end)));
                    }
                }
            }
        }
        read
    }

    #[test]
    fn pixel_span_holds_every_tap_inside_the_image() {
        // Random geometries (strides, dilations, one-sided and oversized padding) and pixel ranges,
        // checked against the taps themselves.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(n)) as u32
        };
        for _ in 0..400 {
            let (h, w, kh, kw) = (1 + next(9), 1 + next(9), 1 + next(4), 1 + next(4));
            let (strides, dilations, pads) =
                ([1 + next(3), 1 + next(3)], [1 + next(2), 1 + next(2)], [next(4), next(4)]);
            let span_y = (kh - 1) * dilations[0] + 1;
            let span_x = (kw - 1) * dilations[1] + 1;
            if h + 2 * pads[0] < span_y || w + 2 * pads[1] < span_x {
                continue;
            }
            let (oh, ow) = ((h + 2 * pads[0] - span_y) / strides[0] + 1, (w + 2 * pads[1] - span_x) / strides[1] + 1);
            let g = Im2col { batch: 1 + next(3), h, w, c: 4, oh, ow, kh, kw, strides, dilations, pads };
            let m = u64::from(g.batch * oh * ow);
            let first = u64::from(next(m as u32));
            let end = first + 1 + u64::from(next((m - first) as u32));
            if let Some(read) = taps_read(&g, first..end) {
                let span = pixel_span(&g, first..end);
                assert!(
                    span.start <= read.start && read.end <= span.end,
                    "{g:?} {first}..{end}: {span:?} misses {read:?}"
                );
            }
        }
    }
}
