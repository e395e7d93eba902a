//! MatMul, BatchMatMulV2/V3 (`wgsl/matmul.wgsl`) and Einsum built on them.

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::encoder::Encoder;
use crate::runtime::pipeline::{
    check_loop_iterations, dispatch, dispatch_workgroups, dispatch_workgroups_with_texels, is_loop_limit, loop_budget,
    loops_fit, nested_loop_iterations, storage_window, Binding, Pipeline, PipelineSpec, Shader,
};
use crate::runtime::scratch::{texels_fit, TEXELS_A, TEXELS_B, TEXEL_ROW};
use crate::runtime::{DeviceCore, Stream};

use super::batch::{split_batch_on_overflow, BatchArgs};
use super::binary::broadcast_shapes;
use super::binary::{self, BinaryOp};
use super::cast;
use super::column_tiles::copy_columns;
use super::index::{self, DimMap};
use super::matmul_gpu;
use super::matmul_skinny;
use super::slice::contiguous_strides;
use super::windows;
use super::{fast_div, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "matmul",
    source: concat!(include_str!("../../wgsl/matmul_batch.wgsl"), include_str!("../../wgsl/matmul.wgsl")),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// The uniform-fed tiled matmul for CPU adapters (`wgsl/matmul_tiles.wgsl`) and its packer.
pub const PACK_SHADER: Shader = Shader {
    name: "matmul_pack",
    source: concat!(include_str!("../../wgsl/quot.wgsl"), include_str!("../../wgsl/matmul_pack.wgsl")),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};
pub const TILES_SHADER: Shader = Shader {
    name: "matmul_tiles",
    source: include_str!("../../wgsl/matmul_tiles.wgsl"),
    storage_buffers: 1,
    uniform_buffers: 2 * TILE_PAIRS,
    textures: 0,
};
/// The same product with A's rows shared through `subgroupBroadcast` (`wgsl/matmul_tiles_subgroup.wgsl`),
/// for devices with subgroups of at least [`SUBGROUP_TILE_LANES`] invocations: about 1.8x the plain
/// kernel on lavapipe.
pub const TILES_SUBGROUP_SHADER: Shader = Shader {
    name: "matmul_tiles_subgroup",
    source: include_str!("../../wgsl/matmul_tiles_subgroup.wgsl"),
    storage_buffers: 1,
    uniform_buffers: 2 * TILE_PAIRS,
    textures: 0,
};
/// The subgroup product with the packed tiles read from two textures, a whole product per dispatch
/// (`wgsl/matmul_tiles_texels.wgsl`), for CPU adapters: about twice the uniform kernel's speed on
/// small products (see `encode_texel_products`).
pub const TILES_TEXELS_SHADER: Shader = Shader {
    name: "matmul_tiles_texels",
    source: include_str!("../../wgsl/matmul_tiles_texels.wgsl"),
    storage_buffers: 1,
    uniform_buffers: 0,
    textures: 2,
};
/// Invocations in a workgroup of `matmul_tiles_subgroup`: all of them must share one subgroup.
const SUBGROUP_TILE_LANES: u32 = 8;
/// Rows and columns of a packed tile: 128 x 128 f32 is 64 KiB, WebGPU's default (and lavapipe's)
/// largest uniform binding.
pub(super) const TILE: u32 = 128;
pub(super) const TILE_BYTES: u64 = (TILE * TILE * 4) as u64;
/// k-tiles one dispatch adds up: A and B tiles of 3 pairs and the parameters are 7 uniform
/// bindings. (With 5 pairs, 11 bindings, lavapipe 22.3 corrupted the host heap now and then.)
const TILE_PAIRS: u32 = 3;
/// Rows and columns of C one workgroup of `matmul_tiles` computes: a tile takes 8 workgroups down,
/// and across, one per 64 columns that hold columns of C (so a narrow last tile skips its padding).
const TILE_ROWS_PER_GROUP: u32 = 16;
const TILE_COLS_PER_GROUP: u32 = 64;
/// The same for `matmul_tiles_subgroup`: 4 workgroups down, one per 32 columns across.
const SUBGROUP_TILE_ROWS_PER_GROUP: u32 = 32;
const SUBGROUP_TILE_COLS_PER_GROUP: u32 = 4 * SUBGROUP_TILE_LANES;
/// The most scratch memory one packed operand may take; bigger products use the direct kernel.
const MAX_PACKED_BYTES: u64 = 1 << 30;
/// Set to `tiles`, `tiles-plain` (the tiled kernel without subgroups), `tiles-uniform` (the subgroup
/// tiles read through uniform bindings, not textures), `direct` or `gpu` to force one matmul kernel
/// (tests and benchmarks compare them).
pub const ENV_MATMUL: &str = "TF_WGPU_MATMUL";

const MAX_BATCH_RANK: usize = 4;
/// The block of C each workgroup computes (`wgsl/matmul.wgsl`: 16 invocations of ROWS x COLS).
const COLUMNS_PER_GROUP: u32 = 16 * 16;
const ROWS_PER_GROUP: u32 = 16;
/// The block of C a workgroup of the `small` variant computes (8 x 8 invocations of 4 x 4).
const SMALL_BLOCK: u32 = 32;

/// Whether the `small` variant fits the output better: below a full 16 x 256 block, most of the
/// register-blocked kernel's invocations would compute clamped, discarded columns.
fn small_output(m: u32, n: u32) -> bool {
    n < COLUMNS_PER_GROUP || m < ROWS_PER_GROUP
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
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
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct PackParams {
    pub rows: u32,
    pub cols: u32,
    pub rs: u32,
    pub cs: u32,
    pub src_off: u32,
    pub row_tiles: u32,
    pub col_tiles: u32,
    pub batch_rank: u32,
    pub batches: u32,
    pub row0: u32,
    pub dispatch_row: u32,
    pub dispatch_rows: u32,
    pub batch_shape: [u32; 4],
    pub batch_stride: [u32; 4],
    pub image: [u32; 4],
    pub window: [u32; 4],
    pub dilation_pad: [u32; 4],
}

/// `matmul_tiles_texels.wgsl`'s parameters.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TexelTileParams {
    m: u32,
    n: u32,
    c_off: u32,
    row_tile0: u32,
    row_tiles: u32,
    k_tiles: u32,
    col_tiles: u32,
    accumulate: u32,
    quads: u32,
    _pad: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TileParams {
    m: u32,
    n: u32,
    row0: u32,
    col0: u32,
    c_off: u32,
    pairs: u32,
    accumulate: u32,
    quads: u32,
}

/// Which matmul kernel a launch uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// `matmul.wgsl`: storage loads, register blocks; what GPUs want.
    Direct,
    /// `matmul_pack.wgsl` + `matmul_tiles.wgsl` (or its subgroup variant): uniform loads; what
    /// llvmpipe wants.
    Tiles,
    /// `matmul_gpu.wgsl`: workgroup-memory tiles of 256 invocations; the GPU profile's.
    Gpu,
}

fn forced_kernel() -> Option<&'static str> {
    static FORCED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FORCED.get_or_init(|| std::env::var(ENV_MATMUL).ok()).as_deref()
}

/// A tile-product kernel: its shader, the rows and columns of C one workgroup computes, and the
/// label of its dispatches.
struct TileKernel {
    shader: &'static Shader,
    rows_per_group: u32,
    cols_per_group: u32,
    label: &'static str,
}

/// Whether this device runs the subgroup tile kernels (`matmul_tiles_subgroup.wgsl`,
/// `conv_tiles_subgroup.wgsl`): subgroups of at least 8 invocations, and `tiles-plain` not forced.
pub(super) fn subgroup_tiles(core: &DeviceCore) -> bool {
    subgroup_tiles_fit(core.features, core.info.subgroup_min_size) && forced_kernel() != Some("tiles-plain")
}

/// Whether a device with `features` and subgroups of at least `subgroup_min_size` invocations
/// creates and runs `TILES_SUBGROUP_SHADER` and `im2col::CONV_TILES_SHADER` (they need SUBGROUP).
pub fn subgroup_tiles_fit(features: wgpu::Features, subgroup_min_size: u32) -> bool {
    features.contains(wgpu::Features::SUBGROUP) && subgroup_min_size >= SUBGROUP_TILE_LANES
}

/// The tile-product kernel for this device: the subgroup variant where a workgroup of 8 fits one
/// subgroup, unless `tiles-plain` is forced.
fn tile_kernel(core: &DeviceCore) -> TileKernel {
    if subgroup_tiles(core) {
        TileKernel {
            shader: &TILES_SUBGROUP_SHADER,
            rows_per_group: SUBGROUP_TILE_ROWS_PER_GROUP,
            cols_per_group: SUBGROUP_TILE_COLS_PER_GROUP,
            label: "matmul tiles subgroup",
        }
    } else {
        TileKernel {
            shader: &TILES_SHADER,
            rows_per_group: TILE_ROWS_PER_GROUP,
            cols_per_group: TILE_COLS_PER_GROUP,
            label: "matmul tiles",
        }
    }
}

/// Whether the tiled kernel would round partial sums to the output type: a second group of k-tiles
/// adds to C as stored, and a half-precision C would lose the f32 partial sum's low bits.
fn rounds_between_groups(dtype: DType, k: u32) -> bool {
    dtype != DType::F32 && k > TILE * TILE_PAIRS
}

/// The tiled kernel pays two packing passes and one dispatch per 128 x 128 tile of C (and per three
/// k-tiles), so it is chosen for CPU adapters, on outputs big enough to fill a tile, where the
/// dispatch count stays modest.
pub(super) fn choose_kernel(core: &DeviceCore, dtype: DType, batch: u64, m: u32, n: u32, k: u32) -> Kernel {
    let limits = &core.limits;
    let tiles_fit = limits.max_uniform_buffers_per_shader_stage > 2 * TILE_PAIRS
        && limits.max_uniform_buffer_binding_size >= TILE_BYTES;
    // Packed operands must fit a scratch buffer and a storage binding (the packer writes them whole).
    let tiles = |rows: u32, cols: u32| batch * rows.div_ceil(TILE) as u64 * cols.div_ceil(TILE) as u64;
    let largest = tiles(m, k).max(tiles(k, n)) * TILE_BYTES;
    let packed_fit =
        largest <= limits.max_buffer_size.min(limits.max_storage_buffer_binding_size).min(MAX_PACKED_BYTES);
    let forced_tiles = matches!(forced_kernel(), Some("tiles" | "tiles-plain" | "tiles-uniform"));
    match forced_kernel() {
        Some("direct") => return Kernel::Direct,
        Some("gpu") => return Kernel::Gpu,
        _ if matmul_gpu::applies(core) && !forced_tiles => return Kernel::Gpu,
        _ => {}
    }
    // The tiles compute in f32: float64 takes the direct kernel, which accumulates in f64.
    if !tiles_fit || !packed_fit || rounds_between_groups(dtype, k) || dtype == DType::F64 {
        return Kernel::Direct;
    }
    if forced_tiles {
        return Kernel::Tiles;
    }
    let dispatches = batch * m.div_ceil(TILE) as u64 * n.div_ceil(TILE) as u64 * k.div_ceil(TILE * TILE_PAIRS) as u64;
    let cpu = core.info.device_type == wgpu::DeviceType::Cpu;
    // Down to 16 columns or a contraction of 16 the tiles still beat the direct kernel on lavapipe
    // (a 12544 x 24 x 144 product, a MobileNetV2 expansion: 56 ms against 161); below, it wins.
    if cpu && m >= 32 && n >= 16 && k >= 16 && dispatches <= 4096 {
        Kernel::Tiles
    } else {
        Kernel::Direct
    }
}

/// The skinny product's plan where `launch` takes it: where the direct kernel would run (24 x 1024
/// x 1024: 5.5 ms against its 32 on lavapipe), or where it is estimated to beat the tiles; never
/// on the GPU profile or with a kernel forced.
fn skinny_choice<'a>(
    device: &DeviceCore,
    dtype: DType,
    batches: u64,
    a: &Operand<'a>,
    b: &Operand<'a>,
) -> Option<matmul_skinny::Plan<'a>> {
    let (m, n, k) = (a.rows, b.cols, a.cols);
    let kernel = choose_kernel(device, dtype, batches, m, n, k);
    if forced_kernel().is_some() || kernel == Kernel::Gpu {
        return None;
    }
    let plan = matmul_skinny::plan(device, dtype, batches, a, b)?;
    let shape = TileShape { m, n, k, batches: batches as u32, accumulate: false };
    let texels = texel_products_apply(device, &shape, m.div_ceil(TILE));
    (kernel == Kernel::Direct || plan.estimated_ms() < tiles_estimated_ms(m, n, k, texels)).then_some(plan)
}

/// Whether `launch` runs the matrix product op(a) x op(b) (both 2-D) on the skinny kernel: for
/// routes that would otherwise take a convolution kernel of their own.
pub(super) fn takes_skinny(device: &DeviceCore, a: &TensorRef, b: &TensorRef, ta: bool, tb: bool) -> bool {
    let (a, b) = (Operand::new(a, ta, Vec::new()), Operand::new(b, tb, Vec::new()));
    skinny_choice(device, a.tensor.dtype, 1, &a, &b).is_some()
}

/// lavapipe's time for one tiled product (batch 1) on the 2-core machine of the benchmarks: about
/// 0.08 ms a dispatch, and 60 GFLOP/s over C padded to 128 rows and 32 columns a tile (the square
/// 1024 product: 49 ms; MobileNetV2's 12544 x 24 x 144 expansion, 196 dispatches: 18.5 ms). The
/// texel kernel (`texels`) is one dispatch. The model leaves out the stores, which bound products
/// of a short k: that expansion, estimated at 1.7 ms on it, takes 8 ms (the skinny kernel's 14), and
/// the pointwise gradients it moves off the skinny kernel measured faster too (op_matrix.py).
fn tiles_estimated_ms(m: u32, n: u32, k: u32, texels: bool) -> f64 {
    let dispatches = if texels {
        1.0
    } else {
        m.div_ceil(TILE) as f64 * n.div_ceil(TILE) as f64 * k.div_ceil(TILE * TILE_PAIRS) as f64
    };
    let padded = m.next_multiple_of(TILE) as f64 * n.next_multiple_of(32) as f64 * k.next_multiple_of(4) as f64;
    dispatches * 0.08 + 2.0 * padded / 60e6
}

/// `out[..., M, N] = op(a)[..., M, K] x op(b)[..., K, N]`, op = transpose where asked, with the
/// batch dimensions broadcast. Returns the output shape for `a` and `b` shapes.
pub fn output_shape(a: &[i64], b: &[i64], transpose_a: bool, transpose_b: bool) -> Result<Vec<i64>> {
    if a.len() < 2 || b.len() < 2 {
        return Err(Error::invalid_argument(format!("In[0] and In[1] must be at least rank 2: {a:?}, {b:?}")));
    }
    let (ar, br) = (a.len(), b.len());
    let (m, ka) = if transpose_a { (a[ar - 1], a[ar - 2]) } else { (a[ar - 2], a[ar - 1]) };
    let (kb, n) = if transpose_b { (b[br - 1], b[br - 2]) } else { (b[br - 2], b[br - 1]) };
    if ka != kb {
        return Err(Error::invalid_argument(format!(
            "Matrix size-incompatible: In[0]: {a:?}, In[1]: {b:?} (contracting dimensions {ka} vs {kb})"
        )));
    }
    let mut shape = broadcast_shapes(&a[..ar - 2], &b[..br - 2])?;
    shape.extend([m, n]);
    Ok(shape)
}

/// Encodes the batched product into `out` (contiguous, shape from `output_shape`).
pub fn launch(
    stream: &Stream,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
    transpose_a: bool,
    transpose_b: bool,
) -> Result<()> {
    let shape = output_shape(&a.shape, &b.shape, transpose_a, transpose_b)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let rank = shape.len();
    let (m, n) = (shape[rank - 2], shape[rank - 1]);
    let k = if transpose_a { a.shape[a.shape.len() - 2] } else { a.shape[a.shape.len() - 1] };
    if k == 0 {
        return stream.fill(out.address, out.byte_len(), 0);
    }
    let batch: Vec<i64> = shape[..rank - 2].iter().copied().filter(|&d| d != 1).collect();
    // Batch strides of an operand along the output batch dims (0 where it broadcasts).
    let batch_strides = |t: &TensorRef| -> Vec<i64> {
        let strides = contiguous_strides(&t.shape);
        let t_batch = &t.shape[..t.shape.len() - 2];
        let pad = (rank - 2) - t_batch.len();
        (0..rank - 2)
            .filter(|&d| shape[d] != 1)
            .map(|d| if d < pad || t_batch[d - pad] == 1 { 0 } else { strides[d - pad] })
            .collect()
    };
    if batch.len() > MAX_BATCH_RANK {
        return Err(Error::unimplemented(format!("matmul with more than {MAX_BATCH_RANK} broadcast batch dims")));
    }
    let batch_count: i64 = batch.iter().product();
    let device = stream.device();
    let kernel = choose_kernel(device, out.dtype, batch_count as u64, m as u32, n as u32, k as u32);
    let operands = || (Operand::new(a, transpose_a, batch_strides(a)), Operand::new(b, transpose_b, batch_strides(b)));
    {
        let (a, b) = operands();
        if let Some(plan) = skinny_choice(device, out.dtype, batch_count as u64, &a, &b) {
            return matmul_skinny::launch(stream, &plan, out);
        }
    }
    if kernel != Kernel::Direct {
        let batch_shape: Vec<u32> = batch.iter().map(|&d| d as u32).collect();
        let (a, b) = operands();
        if kernel == Kernel::Gpu {
            return launch_gpu(stream, &a, &b, out, &batch_shape);
        }
        return launch_tiles(stream, &a, &b, out, &batch_shape);
    }
    let mut p: Params = bytemuck::Zeroable::zeroed();
    p.m = m as u32;
    p.n = n as u32;
    p.k = k as u32;
    p.batch_rank = batch.len() as u32;
    let (a_cols, b_cols) = (a.shape[a.shape.len() - 1] as u32, b.shape[b.shape.len() - 1] as u32);
    (p.a_rs, p.a_cs) = if transpose_a { (1, a_cols) } else { (a_cols, 1) };
    (p.b_rs, p.b_cs) = if transpose_b { (1, b_cols) } else { (b_cols, 1) };
    for (d, ((&size, sa), sb)) in batch.iter().zip(batch_strides(a)).zip(batch_strides(b)).enumerate() {
        p.batch_shape[d] = size as u32;
        p.a_batch_stride[d] = sa as u32;
        p.b_batch_stride[d] = sb as u32;
    }
    let mems = [a, b, out].map(|t| device.memory.resolve(t.address, t.byte_len()));
    let [a_mem, b_mem, c_mem] = mems;
    let (a_mem, b_mem, c_mem) = (a_mem?, b_mem?, c_mem?);
    let accumulator = if out.dtype == DType::F64 { "f64" } else { "f32" };
    let aliases = [("T", out.dtype.wgsl()), ("ACC", accumulator)];
    let (m, n) = (m as u32, n as u32);
    let (entry, groups) = if small_output(m, n) {
        ("small", [n.div_ceil(SMALL_BLOCK), m.div_ceil(SMALL_BLOCK), batch_count as u32])
    } else {
        ("main", [n.div_ceil(COLUMNS_PER_GROUP), m.div_ceil(ROWS_PER_GROUP), batch_count as u32])
    };
    // Each invocation loops over a part of k that stays within the adapter's loop limit, the parts
    // after the first adding to C (in f32 or f64: a half-precision C would round each part's sum).
    // f32 and f64 contractions also run in blocks (`direct_k_block`), so that no running sum is
    // longer than that: its error grows with its length (the tiled kernel sums in blocks of 384).
    let budget = loop_budget(device, 64);
    let wide = matches!(out.dtype, DType::F32 | DType::F64);
    let block = if wide { budget.min(direct_k_block(u64::from(p.k))) } else { budget };
    let part = block.min(u64::from(p.k)) as u32;
    if part < p.k && !wide {
        check_loop_iterations(device, u64::from(p.k) + 64, "MatMul")?;
    }
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &aliases, constants: &[] })?;
    let size = out.dtype.size();
    let k = p.k;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &a_mem, size)?;
        let (b_bind, b_off) = storage_window(core, &b_mem, size)?;
        let (c_bind, c_off) = storage_window(core, &c_mem, size)?;
        for k0 in (0..k).step_by(part as usize) {
            (p.a_off, p.b_off, p.c_off) = (a_off + k0 * p.a_cs, b_off + k0 * p.b_rs, c_off);
            (p.k, p.accumulate) = (part.min(k - k0), u32::from(k0 > 0));
            let bindings = [a_bind, b_bind, c_bind];
            dispatch_workgroups(core, encoder, "matmul", &pipeline, &bindings, bytemuck::bytes_of(&p), groups)?;
        }
        Ok(())
    })
}

/// A half-precision product whose contraction passes the adapter's loop cap: its parts of k
/// cannot add up in the output's type without rounding each part, so the operands are widened to
/// f32, multiplied there and the result rounded once.
fn product_in_f32(
    ctx: &mut dyn KernelContext,
    (a, b, out): (&TensorRef, &TensorRef, &TensorRef),
    transpose_a: bool,
    transpose_b: bool,
) -> Result<()> {
    let mut widened = |t: &TensorRef| -> Result<TensorRef> {
        let wide = ctx.allocate_temp(DType::F32, &t.shape)?;
        cast::launch(ctx.stream()?, t, &wide)?;
        Ok(wide)
    };
    let (a32, b32) = (widened(a)?, widened(b)?);
    let out32 = ctx.allocate_temp(DType::F32, &out.shape)?;
    product(ctx, &a32, &b32, &out32, transpose_a, transpose_b)?;
    cast::launch(ctx.stream()?, &out32, out)
}

/// `launch`, for operands and outputs of any size: where a tensor is too big for one storage
/// binding, groups of batch matrices that fit, and matrices in blocks (rows of the output, ranges of
/// the contraction, whose partial products add up), with operand blocks that are not ranges of
/// rows copied to temporaries first.
pub fn product(
    ctx: &mut dyn KernelContext,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
    transpose_a: bool,
    transpose_b: bool,
) -> Result<()> {
    let too_big = match launch(ctx.stream()?, a, b, out, transpose_a, transpose_b) {
        Err(e) if super::batch::is_binding_limit(&e) => e,
        Err(e) if is_loop_limit(&e) && matches!(out.dtype, DType::F16 | DType::BF16) => {
            return product_in_f32(ctx, (a, b, out), transpose_a, transpose_b);
        }
        other => return other,
    };
    let limit = windows::binding_limit(ctx.stream()?.device());
    let rank = out.shape.len();
    let batches: i64 = out.shape[..rank - 2].iter().product();
    // One batch dimension: each operand is a stack of `batches` matrices or a single one.
    let as_stack = |t: &TensorRef| -> Option<TensorRef> {
        let r = t.shape.len();
        let own: i64 = t.shape[..r - 2].iter().product();
        let matrix = t.shape[r - 2..].to_vec();
        (own == batches || own == 1).then(|| TensorRef { shape: [vec![own], matrix].concat(), ..t.clone() })
    };
    let (Some(a3), Some(b3)) = (as_stack(a), as_stack(b)) else {
        return Err(too_big);
    };
    let out3 = TensorRef { shape: vec![batches, out.shape[rank - 2], out.shape[rank - 1]], ..out.clone() };
    // Groups of whole matrices while one of each fits.
    let matrix_bytes = |t: &TensorRef| if t.shape[0] == 1 { 0 } else { t.byte_len() / t.shape[0].max(1) as u64 };
    let largest = matrix_bytes(&a3).max(matrix_bytes(&b3)).max(matrix_bytes(&out3)).max(1);
    let shared = |t: &TensorRef| t.shape[0] == 1 && t.byte_len() <= limit;
    let group = if shared(&a3) || a3.shape[0] > 1 { (limit / largest) as i64 } else { 0 };
    let group = if shared(&b3) || b3.shape[0] > 1 { group } else { 0 };
    if group >= 1 && batches > 1 {
        let mut start = 0;
        while start < batches {
            let count = group.min(batches - start);
            let part = |t: &TensorRef| if t.shape[0] == 1 { t.clone() } else { windows::rows(t, start, count) };
            launch(
                ctx.stream()?,
                &part(&a3),
                &part(&b3),
                &windows::rows(&out3, start, count),
                transpose_a,
                transpose_b,
            )?;
            start += count;
        }
        return Ok(());
    }
    for index in 0..batches {
        let matrix = |t: &TensorRef| {
            let mut m = windows::rows(t, if t.shape[0] == 1 { 0 } else { index }, 1);
            m.shape.remove(0);
            m
        };
        matrix_in_blocks(ctx, (&matrix(&a3), &matrix(&b3), &matrix(&out3)), (transpose_a, transpose_b), limit)?;
    }
    Ok(())
}

/// Columns `first..first + count` of `t` [r, c] in a temporary [r, count] (all of `t` where they are).
fn strided_columns(ctx: &mut dyn KernelContext, t: &TensorRef, first: i64, count: i64) -> Result<TensorRef> {
    let (r, c) = (t.shape[0], t.shape[1]);
    if count == c {
        return Ok(t.clone());
    }
    let extent = (r - 1) * c + count;
    let view = TensorRef { address: t.address + first as u64 * t.dtype.size(), shape: vec![extent], ..t.clone() };
    let block = ctx.allocate_temp(t.dtype, &[r, count])?;
    index::map(ctx.stream()?, &view, &block, &[DimMap::direct(r, c), DimMap::direct(count, 1)], None)?;
    Ok(block)
}

/// One matrix product `out` [M, N] = op(a) op(b) whose tensors may each exceed `limit` bytes: rows
/// of `out` in blocks, each summed over blocks of the contraction.
fn matrix_in_blocks(
    ctx: &mut dyn KernelContext,
    (a, b, out): (&TensorRef, &TensorRef, &TensorRef),
    (ta, tb): (bool, bool),
    limit: u64,
) -> Result<()> {
    let size = out.dtype.size();
    let (m, n) = (out.shape[0], out.shape[1]);
    let k = if ta { a.shape[0] } else { a.shape[1] };
    let fit = |other: i64| (limit / (other.max(1) as u64 * size)) as i64;
    let rows = m.min(fit(n));
    let depth = k.min(fit(n)).min(fit(rows));
    if rows < 1 && n > 1 {
        // One row of `out` passes a binding: ranges of its columns, each the product by op(b)'s
        // columns (rows of a transposed b, copied columns of another) into a temporary copied
        // into `out`'s columns (one copy per row).
        let width = (fit(1) / 2).max(1);
        let part = ctx.allocate_temp(out.dtype, &[m, width.min(n)])?;
        let mut c0 = 0;
        while c0 < n {
            let count = width.min(n - c0);
            let b_part = if tb { windows::rows(b, c0, count) } else { strided_columns(ctx, b, c0, count)? };
            let out_part = TensorRef { shape: vec![m, count], ..part.clone() };
            matrix_in_blocks(ctx, (a, &b_part, &out_part), (ta, tb), limit)?;
            let as_columns = |t: &TensorRef| TensorRef { shape: vec![t.shape[0], t.shape[1], 1], ..t.clone() };
            copy_columns(ctx, (&as_columns(&out_part), 0), (&as_columns(out), c0), count)?;
            c0 += count;
        }
        return Ok(());
    }
    if rows < 1 || depth < 1 {
        return Err(Error::unimplemented(format!(
            "{} {} bytes exceeds this adapter's max_storage_buffer_binding_size: one row of a \
             matrix product of {m} x {k} by {k} x {n}",
            crate::runtime::pipeline::BINDING_LIMIT_ERROR,
            n as u64 * size
        )));
    }
    let columns = strided_columns;
    let mut partial: Option<TensorRef> = None;
    let mut r0 = 0;
    while r0 < m {
        let rows_here = rows.min(m - r0);
        let out_rows = windows::rows(out, r0, rows_here);
        // op(a)'s rows r0..: rows of `a`, or columns of a transposed one.
        let a_rows = if ta { columns(ctx, a, r0, rows_here)? } else { windows::rows(a, r0, rows_here) };
        let mut k0 = 0;
        while k0 < k {
            let depth_here = depth.min(k - k0);
            // op(a)[r0.., k0..] and op(b)[k0.., ..]: ranges of rows where the contraction runs down
            // a tensor's first dimension, copied columns where it runs along its second.
            let a_block =
                if ta { windows::rows(&a_rows, k0, depth_here) } else { columns(ctx, &a_rows, k0, depth_here)? };
            let b_block = if tb { columns(ctx, b, k0, depth_here)? } else { windows::rows(b, k0, depth_here) };
            let target = if k0 == 0 {
                out_rows.clone()
            } else {
                let shape = [rows_here, n];
                match &partial {
                    Some(t) if t.shape[0] >= rows_here => TensorRef { shape: shape.to_vec(), ..t.clone() },
                    _ => {
                        let t = ctx.allocate_temp(out.dtype, &shape)?;
                        partial = Some(t.clone());
                        t
                    }
                }
            };
            launch(ctx.stream()?, &a_block, &b_block, &target, ta, tb)?;
            if k0 > 0 {
                binary::launch(ctx.stream()?, BinaryOp::Add, &out_rows, &target, &out_rows)?;
            }
            k0 += depth_here;
        }
        r0 += rows_here;
    }
    Ok(())
}

/// The product on the GPU profile's kernel (`matmul_gpu.rs`).
fn launch_gpu(stream: &Stream, a: &Operand, b: &Operand, out: &TensorRef, batch_shape: &[u32]) -> Result<()> {
    matmul_gpu::launch(
        stream,
        &matmul_gpu::Product {
            a: a.tensor,
            b: b.tensor,
            c: out,
            m: a.rows,
            n: b.cols,
            k: a.cols,
            read_a: matmul_gpu::ReadA::Strided { rs: a.rs, cs: a.cs },
            b_strides: (b.rs, b.cs),
            c_rs: b.cols,
            batch_shape,
            a_batch_strides: &a.batch_strides,
            b_batch_strides: &b.batch_strides,
        },
    )
}

/// The running sums of an f32 direct matmul: a contraction of k runs in blocks of about sqrt(k)
/// (at least 512, so that a GPU's C is not re-read more than k / 512 times), each block's sum added
/// to C. The error then grows like sqrt(k), not like k.
fn direct_k_block(k: u64) -> u64 {
    let root = (k as f64).sqrt() as u64;
    root.next_power_of_two().max(512)
}

/// One matmul operand as a batch of logical matrices: `rows x cols`, element strides, batch strides
/// along the output batch dims (0 where it broadcasts).
pub(super) struct Operand<'a> {
    pub tensor: &'a TensorRef,
    pub rows: u32,
    pub cols: u32,
    pub rs: u32,
    pub cs: u32,
    pub batch_strides: Vec<i64>,
}

impl<'a> Operand<'a> {
    fn new(tensor: &'a TensorRef, transpose: bool, batch_strides: Vec<i64>) -> Self {
        let rank = tensor.shape.len();
        let (stored_rows, stored_cols) = (tensor.shape[rank - 2] as u32, tensor.shape[rank - 1] as u32);
        if transpose {
            Operand { tensor, rows: stored_cols, cols: stored_rows, rs: 1, cs: stored_cols, batch_strides }
        } else {
            Operand { tensor, rows: stored_rows, cols: stored_cols, rs: stored_cols, cs: 1, batch_strides }
        }
    }
}

/// Tile `index` of a packed scratch buffer, as a uniform binding.
fn tile_binding(buffer: &wgpu::Buffer, index: u32) -> Binding<'_> {
    Binding { buffer, offset: index as u64 * TILE_BYTES, size: TILE_BYTES }
}

/// Packs `x` into 128 x 128 f32 tiles in the scratch buffer `role`; returns the buffer.
pub(super) fn pack(
    core: &DeviceCore,
    encoder: &mut Encoder,
    role: &'static str,
    x: &Operand,
    batch_shape: &[u32],
) -> Result<wgpu::Buffer> {
    let device = core;
    let batches: u32 = batch_shape.iter().product();
    let (row_tiles, col_tiles) = (x.rows.div_ceil(TILE), x.cols.div_ceil(TILE));
    let tiles = batches as u64 * row_tiles as u64 * col_tiles as u64;
    let scratch = device.scratch.get(device, role, tiles * TILE_BYTES)?;
    let mut p: PackParams = bytemuck::Zeroable::zeroed();
    (p.rows, p.cols, p.rs, p.cs) = (x.rows, x.cols, x.rs, x.cs);
    (p.row_tiles, p.col_tiles, p.batches) = (row_tiles, col_tiles, batches);
    p.batch_rank = batch_shape.len() as u32;
    for (d, (&size, &stride)) in batch_shape.iter().zip(&x.batch_strides).enumerate() {
        p.batch_shape[d] = size;
        p.batch_stride[d] = stride as u32;
    }
    encode_pack(core, encoder, "pack", x.tensor, p, &scratch, tiles)?;
    Ok(scratch)
}

/// The pipeline of packer `entry` for `dtype`, specialised on whether `quot` may divide through f32
/// (every dividend, a row, a column, a tile or a batch index, below 2^23). `invocations`: how many
/// invocation indices the entry splits with `quot` (0 where it splits them by constants only).
pub(super) fn pack_pipeline(
    device: &DeviceCore,
    shader: &Shader,
    entry: &'static str,
    dtype: DType,
    p: &PackParams,
    (tiles, invocations): (u64, u64),
) -> Result<std::sync::Arc<Pipeline>> {
    let largest =
        (u64::from(p.row0) + u64::from(p.rows)).max(p.cols.into()).max(tiles).max(p.batches.into()).max(invocations);
    let aliases = [("T", dtype.wgsl())];
    let constants = [fast_div(largest.min(u32::MAX.into()) as u32)];
    device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &aliases, constants: &constants })
}

/// Encodes packer `entry` reading `src` into the first `tiles` tiles of `dst` (one invocation per
/// vec4 of a tile; `pack` becomes `vec4_packer`'s choice where that applies).
pub(super) fn encode_pack(
    core: &DeviceCore,
    encoder: &mut Encoder,
    entry: &'static str,
    src: &TensorRef,
    mut p: PackParams,
    dst: &wgpu::Buffer,
    tiles: u64,
) -> Result<()> {
    let src_mem = core.memory.resolve(src.address, src.byte_len())?;
    let (src_bind, src_off) = storage_window(core, &src_mem, src.dtype.size())?;
    p.src_off = src_off;
    let (entry, invocations) = match entry {
        "pack" => vec4_packer(src.dtype, &p).unwrap_or(("pack", tiles * 4096)),
        other => (other, tiles * 4096),
    };
    let pipeline = pack_pipeline(core, &PACK_SHADER, entry, src.dtype, &p, (tiles, 0))?;
    let dst = Binding { buffer: dst, offset: 0, size: tiles * TILE_BYTES };
    dispatch(core, encoder, entry, &pipeline, &[src_bind, dst], bytemuck::bytes_of(&p), invocations)
}

/// The packer that reads an f32 operand as vec4s, and its invocations: `pack_vec4` where rows are
/// contiguous vec4s, `pack_columns_vec4` where columns are (a transposed operand); None where the
/// offset, a stride or the contiguous side is not a multiple of 4.
fn vec4_packer(dtype: DType, p: &PackParams) -> Option<(&'static str, u64)> {
    let tiles = u64::from(p.batches) * u64::from(p.row_tiles) * u64::from(p.col_tiles);
    let on_vec4s = dtype == DType::F32
        && p.src_off.is_multiple_of(4)
        && p.batch_stride[..p.batch_rank as usize].iter().all(|s| s.is_multiple_of(4));
    match (p.rs, p.cs) {
        (rs, 1) if on_vec4s && rs.is_multiple_of(4) && p.cols.is_multiple_of(4) => Some(("pack_vec4", tiles * 4096)),
        (1, cs) if on_vec4s && cs.is_multiple_of(4) && p.rows.is_multiple_of(4) => {
            Some(("pack_columns_vec4", tiles * 1024))
        }
        _ => None,
    }
}

/// The tiled product: pack both operands, then the tile products. One `encode` call for all of it:
/// the packed operands live in device-wide scratch, so no other launch (another thread on this
/// stream) may come between the packing and the products, nor a submit between them.
fn launch_tiles(stream: &Stream, a: &Operand, b: &Operand, out: &TensorRef, batch_shape: &[u32]) -> Result<()> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let batches: u32 = batch_shape.iter().product();
    let shape = TileShape { m, n, k, batches, accumulate: false };
    stream.encode(|core, encoder| {
        let a_tiles = pack(core, encoder, "matmul packed A", a, batch_shape)?;
        let b_tiles = pack(core, encoder, "matmul packed B", b, batch_shape)?;
        encode_products(core, encoder, &a_tiles, &b_tiles, &shape, 0..m.div_ceil(TILE), out)
    })
}

/// The sizes of a (batched) tiled product C[m, n] = A[m, k] x B[k, n].
pub(super) struct TileShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub batches: u32,
    /// Add to C as stored from the first k-tile (a product over k in several calls).
    pub accumulate: bool,
}

/// One dispatch per (batch, row tile in `row_tiles`, column tile, group of `TILE_PAIRS` k-tiles),
/// each reading its tiles through uniform bindings. `a_tiles` holds the row tiles of `row_tiles`
/// only (a chunk of A), `b_tiles` all of B.
pub(super) fn encode_products(
    core: &DeviceCore,
    encoder: &mut Encoder,
    a_tiles: &wgpu::Buffer,
    b_tiles: &wgpu::Buffer,
    shape: &TileShape,
    row_tiles: std::ops::Range<u32>,
    out: &TensorRef,
) -> Result<()> {
    let device = core;
    let TileShape { m, n, k, batches, accumulate } = *shape;
    let (k_tiles, col_tiles) = (k.div_ceil(TILE), n.div_ceil(TILE));
    let chunk_tiles = row_tiles.len() as u32;
    if texel_products_apply(core, shape, chunk_tiles) {
        return encode_texel_products(core, encoder, (a_tiles, b_tiles), shape, row_tiles, out);
    }
    let aliases = [("T", out.dtype.wgsl())];
    let TileKernel { shader, rows_per_group, cols_per_group, label } = tile_kernel(device);
    let c_mem = device.memory.resolve(out.address, out.byte_len())?;
    let size = out.dtype.size();
    {
        let (c_bind, c_off) = storage_window(core, &c_mem, size)?;
        let entry = vec4_entry("tiles", n, c_off);
        let pipeline =
            device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &aliases, constants: &[] })?;
        for z in 0..batches {
            for ti in row_tiles.clone() {
                let a_row = z * chunk_tiles + (ti - row_tiles.start);
                for tj in 0..col_tiles {
                    for first in (0..k_tiles).step_by(TILE_PAIRS as usize) {
                        let pairs = TILE_PAIRS.min(k_tiles - first);
                        // Bindings past `pairs` repeat the first pair; the shader skips them.
                        let kt = |i: u32| first + if i < pairs { i } else { 0 };
                        let mut bindings = vec![c_bind];
                        bindings.extend((0..TILE_PAIRS).map(|i| tile_binding(a_tiles, a_row * k_tiles + kt(i))));
                        bindings.extend(
                            (0..TILE_PAIRS).map(|i| tile_binding(b_tiles, (z * k_tiles + kt(i)) * col_tiles + tj)),
                        );
                        let p = TileParams {
                            m,
                            n,
                            row0: ti * TILE,
                            col0: tj * TILE,
                            c_off: c_off + z * m * n,
                            pairs,
                            accumulate: (accumulate || first > 0) as u32,
                            quads: (k - (first + pairs - 1) * TILE).min(TILE).div_ceil(4),
                        };
                        let cols = (n - tj * TILE).min(TILE);
                        let groups = [cols.div_ceil(cols_per_group), TILE / rows_per_group, 1];
                        let params = bytemuck::bytes_of(&p);
                        dispatch_workgroups(core, encoder, label, &pipeline, &bindings, params, groups)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether this device's tile kernels read their operands from textures
/// (`matmul_tiles_texels.wgsl`, `conv_tiles_texels.wgsl`) where they fit: the CPU profile with the
/// subgroup kernels, unless a kernel other than `tiles` is forced.
pub(super) fn texel_tiles(core: &DeviceCore) -> bool {
    core.kernel_profile() == KernelProfile::Cpu
        && subgroup_tiles(core)
        && matches!(forced_kernel(), None | Some("tiles"))
}

// A packed tile is one row of a scratch texture (`matmul_tiles_texels.wgsl` indexes it so).
const _: () = assert!(TEXEL_ROW == TILE * TILE / 4);

/// The vec4s of the packed A (`chunk_tiles` row tiles per batch) and B of a product of `shape`:
/// what `encode_texel_products` copies into the two textures.
fn packed_vec4s(shape: &TileShape, chunk_tiles: u32) -> (u64, u64) {
    let (k_tiles, col_tiles) = (u64::from(shape.k.div_ceil(TILE)), u64::from(shape.n.div_ceil(TILE)));
    let batch_tiles = u64::from(shape.batches) * u64::from(TEXEL_ROW);
    (batch_tiles * u64::from(chunk_tiles) * k_tiles, batch_tiles * k_tiles * col_tiles)
}

/// Whether `encode_products` runs the texel kernel for a product of `shape` whose A holds
/// `chunk_tiles` row tiles per batch: where `texel_tiles` and both packed operands fit the scratch
/// textures, the grid fits a dispatch and one invocation's loops stay within the adapter's loop
/// limit.
fn texel_products_apply(core: &DeviceCore, shape: &TileShape, chunk_tiles: u32) -> bool {
    let TileShape { n, k, batches, .. } = *shape;
    let k_tiles = u64::from(k.div_ceil(TILE));
    let (a_vec4s, b_vec4s) = packed_vec4s(shape, chunk_tiles);
    let max_dim = u64::from(core.limits.max_compute_workgroups_per_dimension);
    let grid = [u64::from(n.div_ceil(SUBGROUP_TILE_COLS_PER_GROUP)), u64::from(chunk_tiles) * 4, u64::from(batches)];
    // The k-group, k-tile and k-step loops, and the four-column stores of 32 rows per k group.
    let groups = k_tiles.div_ceil(u64::from(TILE_PAIRS));
    let iterations = nested_loop_iterations(&[groups, u64::from(TILE_PAIRS), 32]) + groups * 32 * 5;
    texel_tiles(core)
        && texels_fit(&core.limits, a_vec4s)
        && texels_fit(&core.limits, b_vec4s)
        && grid.iter().all(|&g| g <= max_dim)
        && loops_fit(core, iterations)
}

/// `encode_products` on the texel kernel: the packed tiles copied into the two scratch textures
/// (a tile per texture row), then one dispatch for the whole product.
fn encode_texel_products(
    core: &DeviceCore,
    encoder: &mut Encoder,
    (a_tiles, b_tiles): (&wgpu::Buffer, &wgpu::Buffer),
    shape: &TileShape,
    row_tiles: std::ops::Range<u32>,
    out: &TensorRef,
) -> Result<()> {
    let TileShape { m, n, k, batches, accumulate } = *shape;
    let (k_tiles, col_tiles) = (k.div_ceil(TILE), n.div_ceil(TILE));
    let chunk_tiles = row_tiles.len() as u32;
    let (a_vec4s, b_vec4s) = packed_vec4s(shape, chunk_tiles);
    let a_view = core.scratch.texels(core, encoder, TEXELS_A, a_tiles, 0, a_vec4s)?;
    let b_view = core.scratch.texels(core, encoder, TEXELS_B, b_tiles, 0, b_vec4s)?;
    let c_mem = core.memory.resolve(out.address, out.byte_len())?;
    let (c_bind, c_off) = storage_window(core, &c_mem, out.dtype.size())?;
    let aliases = [("T", out.dtype.wgsl())];
    let entry = vec4_entry("tiles", n, c_off);
    let spec = PipelineSpec { entry, aliases: &aliases, constants: &[] };
    let pipeline = core.pipelines.get(core, &TILES_TEXELS_SHADER, &spec)?;
    let p = TexelTileParams {
        m,
        n,
        c_off,
        row_tile0: row_tiles.start,
        row_tiles: chunk_tiles,
        k_tiles,
        col_tiles,
        accumulate: u32::from(accumulate),
        quads: (k - (k_tiles - 1) * TILE).div_ceil(4),
        _pad: [0; 3],
    };
    // Row groups of 32 down to C's last row: a product of fewer rows than its tiles hold skips the
    // padding's workgroups.
    let rows = (m - row_tiles.start * TILE).min(chunk_tiles * TILE);
    let groups = [n.div_ceil(SUBGROUP_TILE_COLS_PER_GROUP), rows.div_ceil(SUBGROUP_TILE_ROWS_PER_GROUP), batches];
    let label = "matmul tiles texels";
    let texels = [&a_view, &b_view];
    dispatch_workgroups_with_texels(core, encoder, label, &pipeline, &[c_bind], &texels, bytemuck::bytes_of(&p), groups)
}

/// The tile kernels' entry point `base`, or its `_vec4` twin (one vec4 store per four outputs
/// instead of four scalar stores) where C's `columns` and element offset `c_off` are multiples of 4.
pub(super) fn vec4_entry(base: &'static str, columns: u32, c_off: u32) -> &'static str {
    match (base, columns.is_multiple_of(4) && c_off.is_multiple_of(4)) {
        ("tiles", true) => "tiles_vec4",
        ("conv", true) => "conv_vec4",
        _ => base,
    }
}

/// MatMul (transpose_a/transpose_b) and BatchMatMulV2/V3 (adj_x/adj_y). Where a tensor is too big
/// for one binding, the product runs in batches (`batch::split_batch_on_overflow`): of the leading
/// batch dimension, or of a's rows.
pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    const A_ROWS: BatchArgs = BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    const B_ROWS: BatchArgs = BatchArgs { inputs: &[1], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    const BOTH: BatchArgs = BatchArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    let (a, b) = (ctx.input(0)?.shape, ctx.input(1)?.shape);
    let transpose_a =
        if kernel.def.op == "MatMul" { kernel.attrs.bool("transpose_a")? } else { kernel.attrs.bool("adj_x")? };
    let (ra, rb) = (a.len(), b.len());
    // Which operands' leading dimension is the output's.
    let args = if ra >= 3 && ra == rb && a[0] == b[0] {
        Some(&BOTH)
    } else if ra >= 3 && (rb < ra || b[0] == 1) {
        Some(&A_ROWS)
    } else if rb >= 3 && (ra < rb || a[0] == 1) {
        Some(&B_ROWS)
    } else if ra == 2 && rb == 2 && !transpose_a {
        Some(&A_ROWS)
    } else {
        None
    };
    match args {
        Some(args) => split_batch_on_overflow(ctx, kernel, args, compute_whole),
        None => compute_whole(ctx, kernel),
    }
}

fn compute_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let (ta, tb) = if kernel.def.op == "MatMul" {
        (kernel.attrs.bool("transpose_a")?, kernel.attrs.bool("transpose_b")?)
    } else {
        (kernel.attrs.bool("adj_x")?, kernel.attrs.bool("adj_y")?)
    };
    if kernel.def.op == "MatMul" && (a.shape.len() != 2 || b.shape.len() != 2) {
        return Err(Error::invalid_argument(format!("In[0] and In[1] must be matrices: {:?}, {:?}", a.shape, b.shape)));
    }
    let shape = output_shape(&a.shape, &b.shape, ta, tb)?;
    let out = ctx.allocate_output(0, a.dtype, &shape)?;
    if super::complex::part_of(a.dtype).is_some() {
        // MatMul transposes; BatchMatMul's adj_x and adj_y also conjugate.
        let adjoint = kernel.def.op != "MatMul";
        return super::complex::matmul(ctx, (&a, &b, &out), (ta, tb), (ta && adjoint, tb && adjoint));
    }
    product(ctx, &a, &b, &out, ta, tb)
}
