//! The GPU profile's products (`wgsl/matmul_gpu.wgsl`): MatMul and BatchMatMul in workgroup-memory
//! tiles, and the convolution and its filter gradient as implicit GEMMs on the same kernel (A read
//! through im2col index math, no columns written out). `DeviceCore::kernel_profile` chooses them
//! on GPUs; `TF_WGPU_KERNELS=gpu` forces them elsewhere.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{
    dispatch, dispatch_workgroups, loop_budget, storage_window, Binding, PipelineSpec, Shader,
};
use crate::runtime::{DeviceCore, Stream};

use super::im2col::Im2col;
use super::{DType, TensorRef};

pub const SHADER: Shader = Shader {
    name: "matmul_gpu",
    source: concat!(include_str!("../../wgsl/matmul_batch.wgsl"), include_str!("../../wgsl/matmul_gpu.wgsl")),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};

/// Rows and columns of C one workgroup computes, and the contraction one step stages.
const TILE: u32 = 64;
const DEPTH: u32 = 16;
/// Workgroups below which a long contraction is split across more of them: a GPU has 10-100
/// compute units, each wanting a few workgroups (a filter gradient is often 9 x 1 tiles).
const TARGET_GROUPS: u64 = 256;
/// The shortest contraction one split sums.
const MIN_SPLIT: u64 = 256;
/// The most scratch memory the splits' partial sums may take.
const MAX_PARTIAL_BYTES: u64 = 64 << 20;
/// Batch dims the shader follows.
pub const MAX_BATCH_RANK: usize = 4;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k_end: u32,
    batch_rank: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    accumulate: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    batch_shape: [u32; 4],
    a_batch_stride: [u32; 4],
    b_batch_stride: [u32; 4],
    batches: u32,
    splits: u32,
    k_split: u32,
    block_steps: u32,
    tile_row0: u32,
    k_base: u32,
    c_rs: u32,
    pixel_stride: u32,
    image: [u32; 4],
    window: [u32; 4],
    dilation_pad: [u32; 4],
}

/// How the kernel reads A (the shader's `A_MODE`). The convolutions' `Im2col` is one group's
/// geometry (`c` its channels); `pixel_stride` the elements between pixels of the image A reads.
#[derive(Clone, Copy, Debug)]
pub enum ReadA {
    /// Element strides of A's rows and columns.
    Strided { rs: u32, cs: u32 },
    /// The im2col matrix of an NHWC input: rows output pixels, columns filter taps.
    Im2col { g: Im2col, pixel_stride: u32 },
    /// Its transpose: rows taps, columns pixels.
    Im2colTransposed { g: Im2col, pixel_stride: u32 },
    /// dy gathered for the input gradient: rows input pixels, columns taps (ky, kx, o) of `oc`
    /// output channels.
    GatherDy { g: Im2col, oc: u32, pixel_stride: u32 },
}

/// C[batch] (M x N, rows `c_rs` apart) = A[batch] x B[batch], A read as `read_a` says, B with
/// element strides `b_strides`, batch strides along `batch_shape` (0 where an operand broadcasts).
pub struct Product<'a> {
    pub a: &'a TensorRef,
    pub b: &'a TensorRef,
    pub c: &'a TensorRef,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub read_a: ReadA,
    pub b_strides: (u32, u32),
    pub c_rs: u32,
    pub batch_shape: &'a [u32],
    pub a_batch_strides: &'a [i64],
    pub b_batch_strides: &'a [i64],
}

/// Whether `device` runs the GPU profile's products.
pub fn applies(device: &DeviceCore) -> bool {
    device.kernel_profile() == crate::runtime::device::KernelProfile::Gpu
}

/// The steps of a running sum before it is folded into the total: sums of about sqrt(k) terms
/// (at least 512), whose error grows like sqrt(k) rather than k.
fn block_steps(k: u64) -> u32 {
    let root = ((k as f64).sqrt() as u64).next_power_of_two().max(512);
    (root / u64::from(DEPTH)) as u32
}

/// How many workgroups share one contraction, for products with few tiles of C.
fn splits_for(device: &DeviceCore, tiles: u64, k: u64, outputs: u64, acc_bytes: u64) -> u32 {
    if tiles >= TARGET_GROUPS || k < 2 * MIN_SPLIT {
        return 1;
    }
    let by_scratch = MAX_PARTIAL_BYTES.min(device.limits.max_storage_buffer_binding_size) / (outputs * acc_bytes);
    let by_grid = u64::from(device.limits.max_compute_workgroups_per_dimension) / tiles.max(1);
    TARGET_GROUPS.div_ceil(tiles).min(k / MIN_SPLIT).min(by_scratch).min(by_grid).max(1) as u32
}

/// Encodes `product` on the GPU profile's kernel.
pub fn launch(stream: &Stream, product: &Product) -> Result<()> {
    let Product { a, b, c, m, n, k, read_a, b_strides, batch_shape, .. } = *product;
    if m == 0 || n == 0 || c.num_elements() == 0 {
        return Ok(());
    }
    if k == 0 {
        if product.c_rs != n {
            return Err(Error::internal("an empty contraction into a column block of C"));
        }
        return stream.fill(c.address, c.byte_len(), 0);
    }
    if batch_shape.len() > MAX_BATCH_RANK {
        return Err(Error::unimplemented(format!("matmul with more than {MAX_BATCH_RANK} broadcast batch dims")));
    }
    let device = stream.device();
    let batches: u64 = batch_shape.iter().map(|&d| u64::from(d)).product();
    let outputs = batches * u64::from(m) * u64::from(n);
    let max_dim = u64::from(device.limits.max_compute_workgroups_per_dimension);
    let most_cols = max_dim * u64::from(TILE);
    if u64::from(n) > most_cols {
        // Blocks of C's columns, one launch each: the grid's x dimension holds `max_dim` tiles.
        for col0 in (0..u64::from(n)).step_by(most_cols as usize) {
            let (b_block, c_block) = (from_element(b, col0 * u64::from(b_strides.1)), from_element(c, col0));
            let cols = (u64::from(n) - col0).min(most_cols) as u32;
            launch(stream, &Product { b: &b_block, c: &c_block, n: cols, ..*product })?;
        }
        return Ok(());
    }
    let (col_tiles, row_tiles) = (u64::from(n.div_ceil(TILE)), u64::from(m.div_ceil(TILE)));
    if batches > max_dim || outputs > u64::from(u32::MAX) {
        return Err(Error::unimplemented(format!(
            "a {batches} x {m} x {n} product exceeds the GPU matmul's dispatch grid"
        )));
    }
    let acc_bytes = if c.dtype == DType::F64 { 8 } else { 4 };
    let (k64, tiles) = (u64::from(k), col_tiles * row_tiles * batches);
    let mut splits = splits_for(device, tiles, k64, outputs, acc_bytes);
    // A dispatch's k-steps each run DEPTH + 9 loop iterations (llvmpipe caps their total); longer
    // contractions run in parts, each added to C, or (half types, which C would round between
    // parts) in more splits.
    let most_k = (loop_budget(device, 64) / u64::from(DEPTH + 10)).max(1) * u64::from(DEPTH);
    if !matches!(c.dtype, DType::F32 | DType::F64) && k64 > most_k {
        let needed = k64.div_ceil(most_k);
        if needed * outputs * acc_bytes > MAX_PARTIAL_BYTES.min(device.limits.max_storage_buffer_binding_size) {
            return Err(Error::unimplemented(format!(
                "a {batches} x {m} x {n} half-precision product with a contraction of {k} exceeds this adapter's loop limit"
            )));
        }
        splits = splits.max(needed as u32);
    }
    let k_split = k64.div_ceil(u64::from(splits)).next_multiple_of(u64::from(DEPTH)).min(most_k);
    splits = k64.div_ceil(k_split).min(u64::from(splits)) as u32;
    let part = k_split * u64::from(splits);

    let mut p: Params = bytemuck::Zeroable::zeroed();
    (p.m, p.n, p.batches, p.splits, p.k_split) = (m, n, batches as u32, splits, k_split as u32);
    p.block_steps = block_steps(k64);
    p.batch_rank = batch_shape.len() as u32;
    for (d, &size) in batch_shape.iter().enumerate() {
        p.batch_shape[d] = size;
        p.a_batch_stride[d] = product.a_batch_strides[d] as u32;
        p.b_batch_stride[d] = product.b_batch_strides[d] as u32;
    }
    (p.b_rs, p.b_cs, p.c_rs) = (b_strides.0, b_strides.1, product.c_rs);
    let (mode, a_rows_fast) = match read_a {
        ReadA::Strided { rs, cs } => {
            (p.a_rs, p.a_cs) = (rs, cs);
            (0, cs != 1 && rs == 1)
        }
        ReadA::Im2col { g, pixel_stride } => {
            set_geometry(&mut p, &g, pixel_stride);
            (1, false)
        }
        ReadA::Im2colTransposed { g, pixel_stride } => {
            set_geometry(&mut p, &g, pixel_stride);
            (2, true)
        }
        ReadA::GatherDy { g, oc, pixel_stride } => {
            set_geometry(&mut p, &g, pixel_stride);
            p.image = [g.oh, g.ow, oc, g.w];
            p.window[3] = g.h;
            (3, false)
        }
    };
    let b_rows_fast = p.b_cs != 1 && p.b_rs == 1;
    let accumulator = if c.dtype == DType::F64 { "f64" } else { "f32" };
    let aliases = [("T", c.dtype.wgsl()), ("ACC", accumulator)];
    let constants = [
        ("A_MODE", f64::from(mode)),
        ("A_ROWS_FAST", f64::from(u8::from(a_rows_fast))),
        ("B_ROWS_FAST", f64::from(u8::from(b_rows_fast))),
    ];
    let spec = |entry| PipelineSpec { entry, aliases: &aliases, constants: &constants };
    let product_pipeline = device.pipelines.get(device, &SHADER, &spec("main"))?;
    let sum_pipeline = device.pipelines.get(device, &SHADER, &spec("sum_splits"))?;
    let size = c.dtype.size();
    let [a_mem, b_mem, c_mem] = [a, b, c].map(|t| device.memory.resolve(t.address, t.byte_len()));
    let (a_mem, b_mem, c_mem) = (a_mem?, b_mem?, c_mem?);
    let rows_per_dispatch = max_dim;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &a_mem, size)?;
        let (b_bind, b_off) = storage_window(core, &b_mem, size)?;
        let (c_bind, c_off) = storage_window(core, &c_mem, size)?;
        (p.a_off, p.b_off, p.c_off) = (a_off, b_off, c_off);
        // The partial sums live in device-wide scratch: one `encode` keeps other launches out.
        let partial_bytes = if splits > 1 { outputs * u64::from(splits) * acc_bytes } else { 0 };
        let scratch =
            if splits > 1 { Some(core.scratch.get(core, "matmul split partials", partial_bytes)?) } else { None };
        let partials = match &scratch {
            Some(buffer) => Binding { buffer, offset: 0, size: partial_bytes },
            None => c_bind,
        };
        let bindings = [a_bind, b_bind, c_bind, partials];
        for k0 in (0..k64).step_by(part as usize) {
            (p.k_base, p.k_end, p.accumulate) = (k0 as u32, (k0 + part).min(k64) as u32, u32::from(k0 > 0));
            for first in (0..row_tiles).step_by(rows_per_dispatch as usize) {
                p.tile_row0 = first as u32;
                let groups =
                    [col_tiles as u32, (row_tiles - first).min(rows_per_dispatch) as u32, (batches as u32) * splits];
                dispatch_workgroups(
                    core,
                    encoder,
                    "matmul gpu",
                    &product_pipeline,
                    &bindings,
                    bytemuck::bytes_of(&p),
                    groups,
                )?;
            }
            if splits > 1 {
                dispatch(
                    core,
                    encoder,
                    "matmul gpu sum splits",
                    &sum_pipeline,
                    &bindings,
                    bytemuck::bytes_of(&p),
                    outputs,
                )?;
            }
        }
        Ok(())
    })
}

fn set_geometry(p: &mut Params, g: &Im2col, pixel_stride: u32) {
    p.pixel_stride = pixel_stride;
    p.image = [g.h, g.w, g.c, g.ow];
    p.window = [g.kw, g.strides[0], g.strides[1], g.oh];
    p.dilation_pad = [g.dilations[0], g.dilations[1], g.pads[0], g.pads[1]];
}

/// `t` from element `offset` on: a channel or column block's first element, the rest of the
/// tensor bound behind it.
fn from_element(t: &TensorRef, offset: u64) -> TensorRef {
    TensorRef {
        address: t.address + offset * t.dtype.size(),
        dtype: t.dtype,
        shape: vec![(t.num_elements() - offset) as i64],
    }
}

/// One product per group: group j's A, B and C start `steps` elements (times j) into their
/// tensors; every group's product is `m x n x k`, A read as `read_a` says, B's rows and C's rows
/// `[b_rs, c_rs]` elements apart (their columns adjacent).
fn launch_groups(
    stream: &Stream,
    groups: u32,
    tensors: [&TensorRef; 3],
    steps: [u64; 3],
    (m, n, k): (u32, u32, u32),
    read_a: ReadA,
    [b_rs, c_rs]: [u32; 2],
) -> Result<()> {
    for group in 0..u64::from(groups) {
        let [a, b, c] = [0, 1, 2].map(|i| from_element(tensors[i], group * steps[i]));
        let product = Product {
            a: &a,
            b: &b,
            c: &c,
            m,
            n,
            k,
            read_a,
            b_strides: (b_rs, 1),
            c_rs,
            batch_shape: &[],
            a_batch_strides: &[],
            b_batch_strides: &[],
        };
        launch(stream, &product)?;
    }
    Ok(())
}

/// An NHWC convolution of `groups` groups (`g.c` input channels each, `oc` output channels in all)
/// as implicit GEMMs, one per group: out[pixels, oc] = im2col(input) x filter[kh * kw * c, oc].
pub fn conv(
    stream: &Stream,
    g: &Im2col,
    groups: u32,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let oc = *filter.shape.last().unwrap_or(&0) as u32;
    let (pixels, taps, group_oc) = (shader_u32(pixels(g))?, shader_u32(taps(g))?, oc / groups);
    let read_a = ReadA::Im2col { g: *g, pixel_stride: g.c * groups };
    let steps = [g.c, group_oc, group_oc].map(u64::from);
    launch_groups(stream, groups, [input, filter, out], steps, (pixels, group_oc, taps), read_a, [oc, oc])
}

/// Conv2DBackpropFilter as implicit GEMMs, one per group: dW[kh * kw * c, oc] = im2col(x)^T x
/// dy[pixels, oc], the contraction over the output pixels split across workgroups where the filter
/// is small.
pub fn conv_grad_filter(
    stream: &Stream,
    g: &Im2col,
    groups: u32,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<()> {
    let oc = *df.shape.last().unwrap_or(&0) as u32;
    let (pixels, taps, group_oc) = (shader_u32(pixels(g))?, shader_u32(taps(g))?, oc / groups);
    let read_a = ReadA::Im2colTransposed { g: *g, pixel_stride: g.c * groups };
    let steps = [g.c, group_oc, group_oc].map(u64::from);
    launch_groups(stream, groups, [x, dy, df], steps, (taps, group_oc, pixels), read_a, [oc, oc])
}

/// Conv2DBackpropInput as implicit GEMMs, one per group: dx[pixels, c] = gathered dy x the filter
/// as `[groups, kh, kw, oc / groups, c / groups]` (`grouped_filter`, which the caller permutes).
pub fn conv_grad_input(
    stream: &Stream,
    g: &Im2col,
    groups: u32,
    dy: &TensorRef,
    grouped_filter: &TensorRef,
    dx: &TensorRef,
) -> Result<()> {
    let oc = *dy.shape.last().unwrap_or(&0) as u32;
    let group_oc = oc / groups;
    let input_pixels = shader_u32(u64::from(g.batch) * u64::from(g.h) * u64::from(g.w))?;
    let taps = shader_u32(u64::from(g.kh) * u64::from(g.kw) * u64::from(group_oc))?;
    let read_a = ReadA::GatherDy { g: *g, oc: group_oc, pixel_stride: oc };
    let steps = [u64::from(group_oc), u64::from(taps) * u64::from(g.c), u64::from(g.c)];
    let shape = (input_pixels, g.c, taps);
    launch_groups(stream, groups, [dy, grouped_filter, dx], steps, shape, read_a, [g.c, g.c * groups])
}

fn pixels(g: &Im2col) -> u64 {
    u64::from(g.batch) * u64::from(g.oh) * u64::from(g.ow)
}

fn taps(g: &Im2col) -> u64 {
    u64::from(g.kh) * u64::from(g.kw) * u64::from(g.c)
}

fn shader_u32(value: u64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::unimplemented(format!("{value} exceeds the GPU matmul's 32-bit indices")))
}
