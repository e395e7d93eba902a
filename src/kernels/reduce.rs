//! Reductions over any set of axes (`wgsl/reduce.wgsl`, and `wgsl/reduce_f64.wgsl` for float64): Sum,
//! Prod, Max, Min, Mean, All, Any, ArgMax, ArgMin.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::encoder::Encoder;
use crate::runtime::pipeline::{
    aligned_vec4_window, check_loop_iterations, dispatch, dispatch_workgroups, dispatch_workgroups_with_texels, grid,
    loop_budget, storage_window, Binding, Pipeline, PipelineSpec, Shader, BINDING_LIMIT_ERROR,
};
use crate::runtime::scratch::{texels_pay_off, TEXELS_A};
use crate::runtime::{DeviceCore, Stream};

use super::batch::{split_batch_on_overflow, BatchArgs};
use super::binary::{self, BinaryOp};
use super::complex;
use super::index::{self, DimMap};
use super::integer;
use super::slice::{self, contiguous_strides, StridedView};
use super::windows::{self, binding_limit};
use super::{fast_div, rank_constant, shader_len, validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "reduce",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/reduce_index.wgsl"),
        include_str!("../../wgsl/reduce.wgsl")
    ),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};
/// `reduce.wgsl`'s `reduce_columns_vec16_texels`: its texture binds after the parameter block.
pub const TEXELS_SHADER: Shader = Shader { name: "reduce texels", textures: 1, ..SHADER };
/// float64 Sum, Prod, Max, Min, Mean and L2Loss, computed in f64 (needs SHADER_F64). Binding 2 is the input
/// again, read as words for its NaN bits.
pub const F64_SHADER: Shader = Shader {
    name: "reduce_f64",
    source: concat!(
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/reduce_index.wgsl"),
        include_str!("../../wgsl/reduce_f64.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// Integer Sum, Prod, Max, Min and Mean, int8 to uint64, in 64 bits (`wgsl/integer_reduce.wgsl`).
pub const INTEGER_SHADER: Shader = Shader {
    name: "integer_reduce",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/reduce_index.wgsl"),
        include_str!("../../wgsl/integer_reduce.wgsl")
    ),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

/// Elements one invocation of `integer_reduce.wgsl` combines in one launch.
const INTEGER_CHUNK: u64 = 4096;

const MAX_RANK: usize = 8;

/// TF op name → `OP` of `reduce_f32`.
pub const FLOAT_REDUCTIONS: [(&str, u32); 5] = [("Sum", 0), ("Prod", 1), ("Max", 2), ("Min", 3), ("Mean", 4)];
/// Reductions of at most this many elements per output take `reduce_f32_serial` (and rows of at most
/// this many elements one invocation each in `nn.rs`'s row kernels).
pub(super) const SERIAL_REDUCTION_MAX: u32 = 512;
pub(super) const SERIAL_WORKGROUP: u64 = 64;

/// `OP` of `reduce_f32` for L2Loss.
const L2_LOSS: u32 = 5;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    kept_rank: u32,
    red_rank: u32,
    count: u32,
    in_off: u32,
    out_off: u32,
    outputs: u32,
    out_words: u32,
    /// ArgMax/ArgMin: the whole axis's index of the bound window's first reduced row.
    index_base: u32,
    kept_shape: [u32; MAX_RANK],
    kept_stride: [u32; MAX_RANK],
    red_shape: [u32; MAX_RANK],
    red_stride: [u32; MAX_RANK],
    rows: u32,
    rows_per_slice: u32,
    slices: u32,
    partial: u32,
}

/// Kept and reduced dimensions as (size, element stride) lists, adjacent contiguous dims merged.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    pub kept: Vec<(i64, i64)>,
    pub reduced: Vec<(i64, i64)>,
}

/// Which dimensions of `shape` an axes list reduces (negative axes count from the end).
pub fn reduced_mask(shape: &[i64], axes: &[i64]) -> Result<Vec<bool>> {
    let rank = shape.len() as i64;
    let mut mask = vec![false; shape.len()];
    for &a in axes {
        let d = if a < 0 { a + rank } else { a };
        if d < 0 || d >= rank {
            return Err(Error::invalid_argument(format!(
                "Invalid reduction dimension ({a} for input with {rank} dimension(s)"
            )));
        }
        if std::mem::replace(&mut mask[d as usize], true) {
            return Err(Error::invalid_argument(format!(
                "Invalid reduction arguments: Axes contains duplicate dimension: {d}"
            )));
        }
    }
    Ok(mask)
}

pub fn split_dims(shape: &[i64], mask: &[bool]) -> Split {
    let strides = contiguous_strides(shape);
    let mut split = Split::default();
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        let list = if mask[d] { &mut split.reduced } else { &mut split.kept };
        match list.last_mut() {
            // Merge with the previous dim of the same kind when they are adjacent in memory.
            Some((size, stride)) if *stride == strides[d] * shape[d] && d > 0 && mask[d - 1] == mask[d] => {
                *size *= shape[d];
                *stride = strides[d];
            }
            _ => list.push((shape[d], strides[d])),
        }
    }
    split
}

fn params_for(split: &Split) -> Result<Params> {
    if split.kept.len() > MAX_RANK || split.reduced.len() > MAX_RANK {
        return Err(Error::unimplemented("reductions beyond rank 8"));
    }
    let mut p: Params = bytemuck::Zeroable::zeroed();
    p.kept_rank = split.kept.len() as u32;
    p.red_rank = split.reduced.len() as u32;
    p.kept_shape = [1; MAX_RANK];
    p.red_shape = [1; MAX_RANK];
    for (k, &(size, stride)) in split.kept.iter().enumerate() {
        p.kept_shape[k] = size as u32;
        p.kept_stride[k] = stride as u32;
    }
    for (k, &(size, stride)) in split.reduced.iter().enumerate() {
        p.red_shape[k] = size as u32;
        p.red_stride[k] = stride as u32;
    }
    p.count = shader_len(split.reduced.iter().map(|&(s, _)| s as u64).product(), "reduction")?;
    p.outputs = shader_len(split.kept.iter().map(|&(s, _)| s as u64).product(), "reduction")?;
    Ok(p)
}

/// Float reductions to fewer outputs than this split each output's elements over slices reduced
/// by workgroups of their own (`launch_in_slices`), slices of at least `MIN_PARALLEL_SLICE`.
const PARALLEL_WORKGROUPS: u32 = 64;
const MIN_PARALLEL_SLICE: u64 = 1 << 14;

/// Column reductions with at least this many elements split their rows over slices.
const COLUMN_SLICE_MIN_ELEMENTS: u64 = 1 << 16;
/// Slices hold at least this many rows, and there are enough of them for about this many invocations.
const COLUMN_SLICE_MIN_ROWS: u32 = 64;
const COLUMN_TARGET_INVOCATIONS: u32 = 256;

/// The (batches, columns) of `p` where it reduces the middle axis of a `batches` x `count` x
/// `columns` input: the kept columns innermost and contiguous, one merged reduced dimension outside
/// them, and at most one kept dimension outside that (Mean over an NHWC image's H and W).
fn column_reduction(p: &Params) -> Option<(u32, u32)> {
    if p.red_rank != 1 {
        return None;
    }
    let (shape, stride) = (&p.kept_shape, &p.kept_stride);
    match p.kept_rank {
        1 if stride[0] == 1 && p.red_stride[0] == shape[0] => Some((1, shape[0])),
        2 if stride[1] == 1
            && p.red_stride[0] == shape[1]
            && u64::from(stride[0]) == u64::from(p.count) * u64::from(shape[1]) =>
        {
            Some((shape[0], shape[1]))
        }
        _ => None,
    }
}

/// Column reductions (see `reduce_columns` in `wgsl/reduce.wgsl`): one launch, or partial results per
/// slice of rows in scratch and a second launch that combines them. The tree kernel took 11.5 ms to
/// sum a 64x26x26x16 gradient over its channels on lavapipe (one 256-thread workgroup per channel,
/// each element's index split into coordinates).
fn launch_columns(
    stream: &Stream,
    op: u32,
    mut p: Params,
    (batches, columns): (u32, u32),
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let (rows, cols) = (p.count, p.outputs);
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    // Four columns per invocation where the columns and both offsets fall on vec4s.
    let vec4_windows = match columns.is_multiple_of(4) {
        true => aligned_vec4_window(device, &in_mem, 4)?.zip(aligned_vec4_window(device, &out_mem, 4)?),
        false => None,
    };
    let (entry, columns_per_invocation) = match vec4_windows {
        Some(_) if columns.is_multiple_of(16) => ("reduce_columns_vec16", 16),
        Some(_) => ("reduce_columns_vec4", 4),
        None => ("reduce_columns", 1),
    };
    let slices = if rows as u64 * cols as u64 >= COLUMN_SLICE_MIN_ELEMENTS {
        (COLUMN_TARGET_INVOCATIONS / (cols / columns_per_invocation)).clamp(1, (rows / COLUMN_SLICE_MIN_ROWS).max(1))
    } else {
        1
    };
    // Enough slices that no invocation loops longer than the adapter allows.
    let slices = slices.max(shader_len((rows as u64).div_ceil(loop_budget(device, 1)), "reduction")?);
    check_loop_iterations(device, slices as u64, "reduction")?;
    let constants = [("OP", op as f64), fast_div(p.count.max(cols * slices))];
    let pipeline =
        device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &[], constants: &constants })?;
    // On CPU adapters the first launch of a big vec16 reduction reads its input from a texture.
    let input_vec4s = input.byte_len() / 16;
    let texel_pipeline = match entry == "reduce_columns_vec16"
        && device.kernel_profile() == KernelProfile::Cpu
        && texels_pay_off(input_vec4s, input_vec4s)
    {
        true => {
            let spec = PipelineSpec { entry: "reduce_columns_vec16_texels", aliases: &[], constants: &constants };
            Some(device.pipelines.get(device, &TEXELS_SHADER, &spec)?)
        }
        false => None,
    };
    let partial_bytes = slices as u64 * cols as u64 * 4;
    let scratch = if slices > 1 { Some(device.scratch.get(device, "reduce partials", partial_bytes)?) } else { None };
    stream.encode(|core, encoder| {
        let ((in_bind, in_off), (out_bind, out_off)) = match vec4_windows {
            Some(windows) => windows,
            None => (storage_window(core, &in_mem, 4)?, storage_window(core, &out_mem, 4)?),
        };
        (p.rows, p.rows_per_slice, p.slices) = (rows, rows.div_ceil(slices), slices);
        // The shader's view: `columns` per row, batches `rows * columns` elements apart.
        (p.kept_shape[1], p.kept_stride[0]) = (columns, if batches > 1 { rows * columns } else { 0 });
        p.in_off = in_off;
        let launch = |encoder: &mut _, input: Binding, output: Binding, p: &Params| {
            let invocations = (cols / columns_per_invocation) as u64 * p.slices as u64;
            let groups = grid(core, invocations.div_ceil(SERIAL_WORKGROUP), entry)?;
            dispatch_workgroups(core, encoder, entry, &pipeline, &[input, output], bytemuck::bytes_of(p), groups)
        };
        // The texel kernel where the input starts on a texel (a texture copy must).
        let texel_start = in_bind.offset + u64::from(in_off) * 4;
        let texels = texel_pipeline.as_ref().filter(|_| texel_start.is_multiple_of(16));
        let first_launch = |encoder: &mut Encoder, output: Binding, p: &Params| {
            let Some(texels) = texels else {
                return launch(encoder, in_bind, output, p);
            };
            let view = core.scratch.texels(core, encoder, TEXELS_A, in_bind.buffer, texel_start, input_vec4s)?;
            let invocations = (cols / columns_per_invocation) as u64 * p.slices as u64;
            let label = "reduce_columns_vec16_texels";
            let groups = grid(core, invocations.div_ceil(SERIAL_WORKGROUP), label)?;
            let (bindings, params) = ([in_bind, output], bytemuck::bytes_of(p));
            dispatch_workgroups_with_texels(core, encoder, label, texels, &bindings, &[&view], params, groups)
        };
        let Some(scratch) = &scratch else {
            p.out_off = out_off;
            return first_launch(encoder, out_bind, &p);
        };
        let partials = Binding { buffer: scratch, offset: 0, size: partial_bytes };
        (p.out_off, p.partial) = (0, 1);
        first_launch(encoder, partials, &p)?;
        (p.rows, p.rows_per_slice, p.slices, p.partial) = (slices, slices, 1, 0);
        // The partials are one batch of `slices` rows of every output.
        (p.kept_shape[1], p.kept_stride[0]) = (cols, 0);
        (p.in_off, p.out_off) = (0, out_off);
        launch(encoder, partials, out_bind, &p)
    })
}

/// Whether every output of `p` reduces one contiguous run of a multiple of 4 elements starting
/// on a multiple of 4 (relative to the binding's offset), as `reduce_f32_serial_vec4` reads them.
fn contiguous_vec4_rows(p: &Params) -> bool {
    let kept = &p.kept_stride[..p.kept_rank as usize];
    p.red_rank == 1 && p.red_stride[0] == 1 && p.count.is_multiple_of(4) && kept.iter().all(|s| s.is_multiple_of(4))
}

fn launch(
    stream: &Stream,
    entry: &'static str,
    op: u32,
    mut p: Params,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    if p.outputs == 0 || out.num_elements() == 0 {
        return Ok(());
    }
    if input.dtype == DType::F64 {
        return launch_f64(stream, op, p, input, out);
    }
    if let Some(geometry) = column_reduction(&p).filter(|_| entry == "reduce_f32" && op != L2_LOSS) {
        return launch_columns(stream, op, p, geometry, input, out);
    }
    // Short reductions loop serially, one invocation per output (see `wgsl/reduce.wgsl`).
    let serial = entry == "reduce_f32" && p.count <= SERIAL_REDUCTION_MAX;
    let entry = if serial { "reduce_f32_serial" } else { entry };
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len().max(1))?;
    let vec4_input = match serial && contiguous_vec4_rows(&p) {
        true => aligned_vec4_window(device, &in_mem, 4)?,
        false => None,
    };
    let entry = if vec4_input.is_some() { "reduce_f32_serial_vec4" } else { entry };
    // Each of 256 threads strides over the reduced elements (one slice of them), then 8 steps of
    // the tree; a float reduction longer than the adapter's loop limit goes in two passes.
    (p.rows, p.rows_per_slice, p.slices, p.partial) = (p.count, p.count, 1, 0);
    let per_thread = loop_budget(device, 16);
    if entry == "reduce_bool" {
        // Slices under the loop limit, over several workgroups where the outputs are few.
        let slice_len = slice_length(u64::from(p.count), p.outputs, per_thread);
        (p.rows_per_slice, p.slices) = (slice_len as u32, shader_len(u64::from(p.count).div_ceil(slice_len), entry)?);
    }
    if entry == "reduce_f32" && (p.count as u64).div_ceil(256) > per_thread {
        return launch_in_slices(stream, op, p, per_thread * 256, input, out);
    }
    // A few outputs over many elements: one workgroup per output would leave the other threads
    // idle (a Sum over all elements ran on one of lavapipe's threads, 100x TF-CPU's time), so
    // slices of each output's elements reduce in parallel first.
    if entry == "reduce_f32" && p.outputs < PARALLEL_WORKGROUPS && p.count as u64 >= 2 * MIN_PARALLEL_SLICE {
        if op != L2_LOSS && launch_in_chunks(stream, op, p, input, out)? {
            return Ok(());
        }
        let slices = u64::from(PARALLEL_WORKGROUPS / p.outputs).max(2);
        let slice_len = (p.count as u64).div_ceil(slices).max(MIN_PARALLEL_SLICE);
        return launch_in_slices(stream, op, p, slice_len, input, out);
    }
    let iterations = if serial { p.count as u64 } else { u64::from(p.rows_per_slice).div_ceil(256) + 8 };
    check_loop_iterations(device, iterations, "reduction")?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let pipeline = pipeline_for(device, entry, op, &p)?;
    let byte_units = entry == "reduce_bool";
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = match vec4_input {
            Some(window) => window,
            None => storage_window(core, &in_mem, if byte_units { 1 } else { 4 })?,
        };
        let (out_bind, out_off) = storage_window(core, &out_mem, if byte_units { 1 } else { 4 })?;
        p.in_off = in_off;
        p.out_off = out_off;
        let groups = if serial {
            grid(core, (p.outputs as u64).div_ceil(SERIAL_WORKGROUP), entry)?
        } else {
            grid(core, p.outputs as u64 * u64::from(p.slices), entry)?
        };
        dispatch_workgroups(core, encoder, entry, &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&p), groups)
    })
}

/// The pipeline of `entry` for op `op` over `p`'s ranks; `quot` may divide through f32 where every
/// index it splits (elements, outputs, rows) is small enough.
fn pipeline_for(device: &DeviceCore, entry: &'static str, op: u32, p: &Params) -> Result<Arc<Pipeline>> {
    pipeline_of(device, &SHADER, entry, op, p)
}

fn pipeline_of(
    device: &DeviceCore,
    shader: &Shader,
    entry: &'static str,
    op: u32,
    p: &Params,
) -> Result<Arc<Pipeline>> {
    let constants = [
        ("OP", op as f64),
        fast_div(p.count.max(p.outputs).max(p.rows)),
        ("KEPT_RANK", rank_constant(p.kept_rank).1),
        ("RED_RANK", rank_constant(p.red_rank).1),
    ];
    device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants: &constants })
}

/// A float64 Sum, Prod, Max, Min, Mean or L2Loss (`reduce_f64.wgsl`): one invocation per output for short
/// and empty reductions, else one workgroup per output; where one output's elements exceed a
/// thread's loop budget, or few outputs would leave workgroups idle, workgroups reduce slices of
/// each output into partial results that a second launch reduces.
fn launch_f64(stream: &Stream, op: u32, mut p: Params, input: &TensorRef, out: &TensorRef) -> Result<()> {
    let device = stream.device();
    // An empty input binds the output in its place: the serial kernel reads none of it.
    let source = if input.num_elements() == 0 { out } else { input };
    let in_mem = device.memory.resolve(source.address, source.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let count = u64::from(p.count);
    (p.rows, p.rows_per_slice, p.slices, p.partial) = (p.count, p.count, 1, 0);
    // One launch from the input to the output: `workgroups` of `entry`.
    let single = |entry: &'static str, mut p: Params, workgroups: u64| {
        let pipeline = pipeline_of(device, &F64_SHADER, entry, op, &p)?;
        stream.encode(|core, encoder| {
            let (in_bind, in_off) = storage_window(core, &in_mem, 8)?;
            let (out_bind, out_off) = storage_window(core, &out_mem, 8)?;
            (p.in_off, p.out_off) = (in_off, out_off);
            let groups = grid(core, workgroups, entry)?;
            let bindings = [in_bind, out_bind, in_bind];
            dispatch_workgroups(core, encoder, entry, &pipeline, &bindings, bytemuck::bytes_of(&p), groups)
        })
    };
    if p.count <= SERIAL_REDUCTION_MAX {
        check_loop_iterations(device, count, "reduction")?;
        return single("reduce_f64_serial", p, u64::from(p.outputs).div_ceil(SERIAL_WORKGROUP));
    }
    let slice_len = slice_length(count, p.outputs, loop_budget(device, 16));
    let slices = shader_len(count.div_ceil(slice_len), "reduction")?;
    let outputs = p.outputs;
    // L2Loss's slices halve their sums of squares, and the second launch adds them.
    (p.rows_per_slice, p.slices, p.partial) = (slice_len as u32, slices, u32::from(slices > 1 && op != L2_LOSS));
    if slices == 1 {
        return single("reduce_f64", p, u64::from(outputs));
    }
    let first_pass = pipeline_of(device, &F64_SHADER, "reduce_f64", op, &p)?;
    let mut second = params_for(&split_dims(&[outputs as i64, slices as i64], &[false, true]))?;
    (second.rows, second.rows_per_slice, second.slices, second.partial) = (slices, slices, 1, 0);
    second.count = p.count;
    check_loop_iterations(device, u64::from(slices).div_ceil(256) + 8, "reduction")?;
    let second_op = if op == L2_LOSS { 0 } else { op };
    let second_pass = pipeline_of(device, &F64_SHADER, "reduce_f64", second_op, &second)?;
    let partial_bytes = u64::from(outputs) * u64::from(slices) * 8;
    let scratch = device.scratch.get(device, "reduce_f64 slices", partial_bytes)?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, 8)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 8)?;
        let partials = Binding { buffer: &scratch, offset: 0, size: partial_bytes };
        (p.in_off, p.out_off) = (in_off, 0);
        let groups = grid(core, u64::from(outputs) * u64::from(slices), "reduce_f64")?;
        let bindings = [in_bind, partials, in_bind];
        dispatch_workgroups(core, encoder, "reduce_f64", &first_pass, &bindings, bytemuck::bytes_of(&p), groups)?;
        (second.in_off, second.out_off) = (0, out_off);
        let groups = grid(core, u64::from(outputs), "reduce_f64")?;
        let bindings = [partials, out_bind, partials];
        dispatch_workgroups(core, encoder, "reduce_f64", &second_pass, &bindings, bytemuck::bytes_of(&second), groups)
    })
}

/// Chunks of at most this many elements reduce in `launch_in_chunks`'s first pass.
const CHUNK_MAX: u32 = 512;

/// A few outputs over long contiguous runs (Sum or Mean of a whole tensor) in two passes: chunks of
/// up to `CHUNK_MAX` contiguous elements by `reduce_f32_serial_vec4` (each invocation streams its
/// own chunk as vec4s), then each output's chunk results by the tree kernel. llvmpipe reads a lane's
/// contiguous run far faster than the tree kernel's 256 threads striding over the elements: a Sum
/// of 4x56x56x256 floats took 13 ms in slices. Returns false where the elements are not one
/// contiguous run per output on vec4s, or no chunk length divides them.
fn launch_in_chunks(stream: &Stream, op: u32, p: Params, input: &TensorRef, out: &TensorRef) -> Result<bool> {
    let kept_rank = p.kept_rank as usize;
    if !contiguous_vec4_rows(&p) || kept_rank >= MAX_RANK {
        return Ok(false);
    }
    let Some(chunk) = (16..=CHUNK_MAX / 4).rev().map(|q| 4 * q).find(|&len| p.count.is_multiple_of(len)) else {
        return Ok(false);
    };
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let Some((in_bind, in_off)) = aligned_vec4_window(device, &in_mem, 4)? else {
        return Ok(false);
    };
    let chunks = p.count / chunk;
    // First pass: each output's run as `chunks` kept rows of `chunk` elements; Mean sums there.
    let mut first = p;
    (first.kept_shape[kept_rank], first.kept_stride[kept_rank]) = (chunks, chunk);
    (first.kept_rank, first.count, first.red_shape[0]) = (p.kept_rank + 1, chunk, chunk);
    first.outputs = shader_len(u64::from(p.outputs) * u64::from(chunks), "reduction")?;
    let first_op = if op == 4 { 0 } else { op };
    // Second pass: [outputs, chunks] over its chunks, dividing Mean by the whole count.
    let mut second = params_for(&split_dims(&[i64::from(p.outputs), i64::from(chunks)], &[false, true]))?;
    (second.rows, second.rows_per_slice, second.slices, second.partial, second.count) = (chunks, chunks, 1, 0, p.count);
    check_loop_iterations(device, u64::from(chunks).div_ceil(256) + 8, "reduction")?;
    let first_pass = pipeline_for(device, "reduce_f32_serial_vec4", first_op, &first)?;
    let second_pass = pipeline_for(device, "reduce_f32", op, &second)?;
    let partial_bytes = u64::from(first.outputs) * 4;
    let scratch = device.scratch.get(device, "reduce chunks", partial_bytes)?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    stream.encode(|core, encoder| {
        let (out_bind, out_off) = storage_window(core, &out_mem, 4)?;
        let partials = Binding { buffer: &scratch, offset: 0, size: partial_bytes };
        (first.in_off, first.out_off) = (in_off, 0);
        let groups = grid(core, u64::from(first.outputs).div_ceil(SERIAL_WORKGROUP), "reduce_f32_serial_vec4")?;
        let bindings = [in_bind, partials];
        dispatch_workgroups(
            core,
            encoder,
            "reduce_f32_serial_vec4",
            &first_pass,
            &bindings,
            bytemuck::bytes_of(&first),
            groups,
        )?;
        (second.in_off, second.out_off) = (0, out_off);
        let groups = grid(core, u64::from(p.outputs), "reduce_f32")?;
        dispatch_workgroups(
            core,
            encoder,
            "reduce_f32",
            &second_pass,
            &[partials, out_bind],
            bytemuck::bytes_of(&second),
            groups,
        )
    })?;
    Ok(true)
}

/// A float reduction in two passes: workgroups reduce slices of `slice_len` elements of each output
/// into raw partial results in scratch (`outputs` x `slices`), and a second launch reduces those.
/// L2Loss halves its partials in the first pass and sums them in the second; Mean divides by the
/// original count in the second.
fn launch_in_slices(
    stream: &Stream,
    op: u32,
    mut p: Params,
    slice_len: u64,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let device = stream.device();
    let slices = shader_len((p.count as u64).div_ceil(slice_len), "reduction")?;
    (p.rows_per_slice, p.slices, p.partial) = (slice_len as u32, slices, u32::from(op != L2_LOSS));
    let outputs = p.outputs;
    let mut second = params_for(&split_dims(&[outputs as i64, slices as i64], &[false, true]))?;
    let second_op = if op == L2_LOSS { 0 } else { op };
    (second.rows, second.rows_per_slice, second.slices, second.partial) = (slices, slices, 1, 0);
    second.count = p.count;
    check_loop_iterations(device, (slices as u64).div_ceil(256) + 8, "reduction")?;
    let first_pass = pipeline_for(device, "reduce_f32", op, &p)?;
    let second_pass = pipeline_for(device, "reduce_f32", second_op, &second)?;
    let partial_bytes = outputs as u64 * slices as u64 * 4;
    let scratch = device.scratch.get(device, "reduce slices", partial_bytes)?;
    let in_mem = device.memory.resolve(input.address, input.byte_len().max(1))?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, 4)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 4)?;
        let partials = Binding { buffer: &scratch, offset: 0, size: partial_bytes };
        (p.in_off, p.out_off) = (in_off, 0);
        let groups = grid(core, outputs as u64 * slices as u64, "reduce_f32")?;
        dispatch_workgroups(
            core,
            encoder,
            "reduce_f32",
            &first_pass,
            &[in_bind, partials],
            bytemuck::bytes_of(&p),
            groups,
        )?;
        (second.in_off, second.out_off) = (0, out_off);
        let groups = grid(core, outputs as u64, "reduce_f32")?;
        let bindings = [partials, out_bind];
        dispatch_workgroups(core, encoder, "reduce_f32", &second_pass, &bindings, bytemuck::bytes_of(&second), groups)
    })
}

/// A float reduction over an input larger than a storage binding: the input splits along its
/// leading dimension into parts that fit. Where that dimension is kept, each part reduces into its
/// rows of the output; where it is reduced, the parts' results combine elementwise (a few partial
/// results, each itself compensated). Mean sums, then divides by the count, as TF's reducer does.
fn reduce_in_windows(
    ctx: &mut dyn KernelContext,
    op: &str,
    input: &TensorRef,
    mask: &[bool],
    out: &TensorRef,
) -> Result<()> {
    let (code, combine) = match op {
        "Sum" | "Mean" => (0, BinaryOp::Add),
        "Prod" => (1, BinaryOp::Mul),
        "Max" => (2, BinaryOp::Maximum),
        "Min" => (3, BinaryOp::Minimum),
        other => return Err(Error::internal(format!("{other} is not a float reduction"))),
    };
    reduce_parts(ctx, code, combine, input.clone(), mask.to_vec(), out)?;
    if op == "Mean" {
        let count: i64 = input.shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&d, _)| d).product();
        let divisor = ctx.allocate_temp(out.dtype, &[])?;
        let stream = ctx.stream()?;
        if out.dtype == DType::F64 {
            stream.memcpy_htod(divisor.address, &(count as f64).to_le_bytes())?;
        } else {
            stream.fill(divisor.address, 4, (count as f32).to_bits())?;
        }
        binary::launch(stream, BinaryOp::RealDiv, out, &divisor, out)?;
    }
    Ok(())
}

/// `out` = the reduction `code` of `input` over `mask`, in parts that fit a storage binding.
fn reduce_parts(
    ctx: &mut dyn KernelContext,
    code: u32,
    combine: BinaryOp,
    input: TensorRef,
    mask: Vec<bool>,
    out: &TensorRef,
) -> Result<()> {
    let lead = input.shape.iter().take_while(|&&d| d == 1).count();
    let (shape, mask) = (input.shape[lead..].to_vec(), mask[lead..].to_vec());
    let input = TensorRef { shape, ..input };
    if input.byte_len() <= binding_limit(ctx.stream()?.device()) || input.shape.is_empty() {
        let p = params_for(&split_dims(&input.shape, &mask))?;
        return launch(ctx.stream()?, "reduce_f32", code, p, &input, out);
    }
    let limit = binding_limit(ctx.stream()?.device());
    let rows = input.shape[0];
    let row_bytes = input.byte_len() / rows as u64;
    let per_part = (limit / row_bytes).max(1) as i64;
    let mut partial: Option<TensorRef> = None;
    let mut start = 0;
    while start < rows {
        let count = per_part.min(rows - start);
        let part = TensorRef {
            address: input.address + start as u64 * row_bytes,
            dtype: input.dtype,
            shape: [&[count], &input.shape[1..]].concat(),
        };
        if !mask[0] {
            // Kept: the part's rows of the output.
            let out_row = out.num_elements() as i64 / rows;
            let rows_out = TensorRef {
                address: out.address + (start * out_row) as u64 * out.dtype.size(),
                dtype: out.dtype,
                shape: vec![count * out_row],
            };
            reduce_parts(ctx, code, combine, part, mask.clone(), &rows_out)?;
        } else if start == 0 {
            reduce_parts(ctx, code, combine, part, mask.clone(), out)?;
        } else {
            // Reduced: the part's result, combined into the output.
            let temp = match &partial {
                Some(t) => t.clone(),
                None => ctx.allocate_temp(out.dtype, &out.shape)?,
            };
            partial = Some(temp.clone());
            reduce_parts(ctx, code, combine, part, mask.clone(), &temp)?;
            binary::launch(ctx.stream()?, combine, out, &temp, out)?;
        }
        start += count;
    }
    Ok(())
}

/// `out` = the float sum of `input` over the dimensions `mask` marks, for inputs of any size.
pub fn sum(ctx: &mut dyn KernelContext, input: &TensorRef, mask: &[bool], out: &TensorRef) -> Result<()> {
    if input.num_elements() == 0 {
        return ctx.stream()?.fill(out.address, out.byte_len(), 0);
    }
    float_reduction(ctx, "Sum", input, mask, out)
}

/// `out` = the float maximum of non-empty `input` over the dimensions `mask` marks (NaN
/// propagates), for inputs of any size.
pub fn max(ctx: &mut dyn KernelContext, input: &TensorRef, mask: &[bool], out: &TensorRef) -> Result<()> {
    float_reduction(ctx, "Max", input, mask, out)
}

/// The float reduction `op` (of `FLOAT_REDUCTIONS`) of `input` over `mask` into `out`: windows
/// past a binding, slices of long reductions.
fn float_reduction(
    ctx: &mut dyn KernelContext,
    op: &str,
    input: &TensorRef,
    mask: &[bool],
    out: &TensorRef,
) -> Result<()> {
    if input.byte_len() > binding_limit(ctx.stream()?.device()) {
        return reduce_in_windows(ctx, op, input, mask, out);
    }
    let code = FLOAT_REDUCTIONS.iter().find(|(name, _)| *name == op).map(|&(_, code)| code);
    let code = code.ok_or_else(|| Error::internal(format!("no float reduction {op}")))?;
    let p = params_for(&split_dims(&input.shape, mask))?;
    launch(ctx.stream()?, "reduce_f32", code, p, input, out)
}

/// `out[c] = mean over r of input[r, c]` for a float32 input of any size.
pub fn mean_over_rows(ctx: &mut dyn KernelContext, input: &TensorRef, out: &TensorRef) -> Result<()> {
    reduce_in_windows(ctx, "Mean", input, &[true, false], out)
}

/// `out[c] = sum over r of input[r, c]` for a `[rows, cols]` float32 input (bias gradients).
pub fn sum_columns(stream: &Stream, input: &TensorRef, out: &TensorRef) -> Result<()> {
    if input.num_elements() == 0 {
        return stream.fill(out.address, out.byte_len(), 0);
    }
    let p = params_for(&split_dims(&input.shape, &[true, false]))?;
    launch(stream, "reduce_f32", 0, p, input, out)
}

/// Output shape of reducing `shape` over `mask`, with or without kept dims.
fn reduced_shape(shape: &[i64], mask: &[bool], keep_dims: bool) -> Vec<i64> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&d, &m)| match (m, keep_dims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Sum, Prod, Max, Min, Mean (float32, float64) and All, Any (bool).
pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let mut input = ctx.input(0)?;
    let (axes, _) = ctx.host_input_values(1)?;
    let mut mask = reduced_mask(&input.shape, &axes)?;
    let shape = reduced_shape(&input.shape, &mask, kernel.attrs.bool("keep_dims")?);
    let mut out = ctx.allocate_output(0, input.dtype, &shape)?;
    if kernel.def.op == "Prod" && complex::part_of(input.dtype).is_some() {
        return complex::prod(ctx, &input, &mask, &out);
    }
    if let (Some(parts), Some(out_parts)) = (complex::parts_view(&input), complex::parts_view(&out)) {
        // A complex Sum or Mean reduces the real and the imaginary parts alike: the float
        // reduction of the parts' views, their trailing axis kept.
        (input, out) = (parts, out_parts);
        mask.push(false);
        if input.num_elements() == 0 {
            // (TF's complex Mean of nothing is 0, its float one NaN.)
            return ctx.stream()?.fill(out.address, out.byte_len(), 0);
        }
    }
    let p = params_for(&split_dims(&input.shape, &mask))?;
    let stream = ctx.stream()?;
    let code = FLOAT_REDUCTIONS.iter().find(|(n, _)| *n == kernel.def.op).map(|(_, c)| *c).unwrap_or(0);
    if input.num_elements() == 0 && input.dtype == DType::F64 {
        // The serial kernel with no elements writes the identity (Mean: NaN).
        return launch(stream, "reduce_f32", code, p, &input, &out);
    }
    if input.num_elements() == 0 {
        // Reducing nothing: every output is the reduction's identity (Mean of nothing is NaN).
        let identity: u32 = match kernel.def.op {
            "Prod" => 1f32.to_bits(),
            "Max" => f32::NEG_INFINITY.to_bits(),
            "Min" => f32::INFINITY.to_bits(),
            "Mean" => f32::NAN.to_bits(),
            "All" => 0x0101_0101,
            _ => 0,
        };
        return stream.fill(out.address, out.byte_len(), identity);
    }
    if let "All" | "Any" = kernel.def.op {
        let any = kernel.def.op == "Any";
        stream.fill(out.address, out.byte_len(), if any { 0 } else { 0x0101_0101 })?;
        return bool_reduction(ctx, u32::from(any), &input, &mask, &out);
    }
    if input.byte_len() > binding_limit(stream.device()) {
        return reduce_in_windows(ctx, kernel.def.op, &input, &mask, &out);
    }
    launch(stream, "reduce_f32", code, p, &input, &out)
}

/// All (`op` 0) or Any (1) of `input` over `mask` into `out`, which holds the identity: each
/// launch clears or sets the bytes its elements decide, so windows of an input past a binding
/// (ranges of its leading dimension, or of all its elements where every dimension is reduced)
/// combine in place.
fn bool_reduction(
    ctx: &mut dyn KernelContext,
    op: u32,
    input: &TensorRef,
    mask: &[bool],
    out: &TensorRef,
) -> Result<()> {
    let limit = binding_limit(ctx.stream()?.device());
    if input.byte_len() <= limit {
        let p = params_for(&split_dims(&input.shape, mask))?;
        return launch(ctx.stream()?, "reduce_bool", op, p, input, out);
    }
    let lead = input.shape.iter().take_while(|&&d| d == 1).count();
    let (mut shape, mut mask) = (input.shape[lead..].to_vec(), mask[lead..].to_vec());
    if mask.iter().all(|&m| m) {
        (shape, mask) = (vec![input.num_elements() as i64], vec![true]);
    }
    let rows = shape[0];
    let row_bytes = input.byte_len() / rows.max(1) as u64;
    let out_row = if mask[0] { 0 } else { out.num_elements() / rows as u64 };
    if row_bytes > limit {
        // One row passes a binding: each row on its own (its dimensions after the first), into
        // its part of the output, or into all of it where the first dimension is reduced.
        for r in 0..rows {
            let row = TensorRef {
                address: input.address + r as u64 * row_bytes,
                dtype: input.dtype,
                shape: shape[1..].to_vec(),
            };
            let row_out = match out_row {
                0 => out.clone(),
                _ => TensorRef {
                    address: out.address + r as u64 * out_row * out.dtype.size(),
                    dtype: out.dtype,
                    shape: vec![out_row as i64],
                },
            };
            bool_reduction(ctx, op, &row, &mask[1..], &row_out)?;
        }
        return Ok(());
    }
    let per_part = (limit / row_bytes) as i64;
    let mut start = 0;
    while start < rows {
        let count = per_part.min(rows - start);
        let part = TensorRef {
            address: input.address + start as u64 * row_bytes,
            dtype: input.dtype,
            shape: [&[count], &shape[1..]].concat(),
        };
        // A kept leading dimension: the part's rows of the output; a reduced one: all of it.
        let part_out = match out_row {
            0 => out.clone(),
            _ => TensorRef {
                address: out.address + start as u64 * out_row,
                dtype: out.dtype,
                shape: vec![count * out_row as i64],
            },
        };
        let p = params_for(&split_dims(&part.shape, &mask))?;
        launch(ctx.stream()?, "reduce_bool", op, p, &part, &part_out)?;
        start += count;
    }
    Ok(())
}

/// EuclideanNorm (float32): the square root of the sum of squares over the reduced axes, as
/// TF's reducer (squares summed in float32, no scaling).
pub fn euclidean_norm(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    use super::unary::{self, UnaryOp};
    let input = ctx.input(0)?;
    let (axes, _) = ctx.host_input_values(1)?;
    let mask = reduced_mask(&input.shape, &axes)?;
    let shape = reduced_shape(&input.shape, &mask, kernel.attrs.bool("keep_dims")?);
    let out = ctx.allocate_output(0, input.dtype, &shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let squares = ctx.allocate_temp(input.dtype, &input.shape)?;
    if input.num_elements() > 0 {
        unary::launch(ctx.stream()?, UnaryOp::Square, 0.0, &input, &squares)?;
    }
    sum(ctx, &squares, &mask, &out)?;
    unary::launch(ctx.stream()?, UnaryOp::Sqrt, 0.0, &out, &out)
}

/// Sum, Prod, Max, Min and Mean of an integer tensor (int8 to uint64): launches of
/// `integer_reduce.wgsl` that each combine chunks of `INTEGER_CHUNK` elements into 64-bit partial
/// results, until one per output is left; narrower outputs are then cast (truncated) from them.
pub fn compute_integer(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (axes, _) = ctx.host_input_values(1)?;
    let mask = reduced_mask(&input.shape, &axes)?;
    let shape = reduced_shape(&input.shape, &mask, kernel.attrs.bool("keep_dims")?);
    let out = ctx.allocate_output(0, input.dtype, &shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let code = FLOAT_REDUCTIONS.iter().find(|(n, _)| *n == kernel.def.op).map(|(_, c)| *c).unwrap_or(0);
    // Past a binding: the input, or the 64-bit partial results (8 bytes an output).
    let past = input.byte_len().max(8 * out.num_elements()) > binding_limit(ctx.stream()?.device());
    if past && input.num_elements() > 0 {
        return integer_reduce_in_windows(ctx, code, &input, &mask, &out);
    }
    if past {
        // Many outputs of nothing: one output's identity, spread over them all.
        let one = ctx.allocate_temp(out.dtype, &[1])?;
        let empty = TensorRef { shape: vec![1, 0], ..input.clone() };
        integer_passes(ctx, code, params_for(&split_dims(&empty.shape, &[false, true]))?, &empty, &one)?;
        let flat = TensorRef { shape: vec![out.num_elements() as i64], ..out.clone() };
        return index::map(ctx.stream()?, &one, &flat, &[DimMap::spread(flat.shape[0])], None);
    }
    let p = params_for(&split_dims(&input.shape, &mask))?;
    integer_passes(ctx, code, p, &input, &out)
}

/// An integer reduction over an input past a binding: parts along the leading dimension as
/// `reduce_parts` takes them, their results combined in `out`'s type (sums and products wrap there
/// as TF's do). Mean combines 64-bit sums, divided by the count at the end as
/// `integer_reduce.wgsl` divides its own, then cast to `out`.
fn integer_reduce_in_windows(
    ctx: &mut dyn KernelContext,
    code: u32,
    input: &TensorRef,
    mask: &[bool],
    out: &TensorRef,
) -> Result<()> {
    let combine = match code {
        1 => integer::MUL,
        2 => integer::MAXIMUM,
        3 => integer::MINIMUM,
        _ => integer::ADD,
    };
    if code != 4 {
        return integer_parts(ctx, code, combine, input.clone(), mask.to_vec(), out);
    }
    let signed = matches!(input.dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    let sums = ctx.allocate_temp(if signed { DType::I64 } else { DType::U64 }, &out.shape)?;
    integer_parts(ctx, 0, combine, input.clone(), mask.to_vec(), &sums)?;
    let count: i64 = input.shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&d, _)| d).product();
    let divisor = ctx.allocate_temp(sums.dtype, &[])?;
    let stream = ctx.stream()?;
    stream.memcpy_htod(divisor.address, &count.to_le_bytes())?;
    integer::launch(stream, integer::TRUNCATE_DIV, &sums, &divisor, &sums)?;
    integer::launch(stream, integer::CAST, &sums, &sums, out)
}

/// `out` = the integer reduction `code` of `input` over `mask`, in parts whose input and 64-bit
/// partial results (`integer_passes`) fit a storage binding, combined by `integer.wgsl`'s op
/// `combine`.
fn integer_parts(
    ctx: &mut dyn KernelContext,
    code: u32,
    combine: u32,
    input: TensorRef,
    mask: Vec<bool>,
    out: &TensorRef,
) -> Result<()> {
    // Dimensions of 1 dropped (the layout is the same), so that every split below makes progress.
    let (shape, mask): (Vec<i64>, Vec<bool>) =
        input.shape.iter().zip(&mask).filter(|(&d, _)| d != 1).map(|(&d, &m)| (d, m)).unzip();
    let input = TensorRef { shape, ..input };
    let limit = binding_limit(ctx.stream()?.device());
    let wide_out = 8 * out.num_elements();
    if (input.byte_len() <= limit && wide_out <= limit) || input.shape.is_empty() {
        let p = params_for(&split_dims(&input.shape, &mask))?;
        return integer_passes(ctx, code, p, &input, out);
    }
    let rows = input.shape[0];
    let flat_out = TensorRef { shape: vec![out.num_elements() as i64], ..out.clone() };
    if !mask[0] {
        // Kept: ranges of rows, each into its rows of the output.
        let out_row = out.num_elements() as i64 / rows;
        let per_part =
            (limit / (input.byte_len() / rows as u64)).min(limit / (8 * out_row.max(1) as u64)).max(1) as i64;
        let mut start = 0;
        while start < rows {
            let count = per_part.min(rows - start);
            let part = windows::rows(&input, start, count);
            let part_out = windows::rows(&flat_out, start * out_row, count * out_row);
            integer_parts(ctx, code, combine, part, mask.clone(), &part_out)?;
            start += count;
        }
        return Ok(());
    }
    if input.byte_len() <= limit {
        // The input fits, its outputs' 64-bit partials do not: ranges along the first kept
        // dimension, each part's (strided) input gathered into a temporary.
        let Some(d) = mask.iter().position(|&m| !m) else {
            return Err(Error::internal("an integer reduction to a single value has one output"));
        };
        let outer: i64 = input.shape[..d].iter().product();
        let (dim, inner) = (input.shape[d], input.shape[d + 1..].iter().product::<i64>());
        let out_inner = out.num_elements() as i64 / dim;
        let per_part = (limit / (8 * out_inner.max(1) as u64)).max(1) as i64;
        let size = input.dtype.size();
        let mut k0 = 0;
        while k0 < dim {
            let count = per_part.min(dim - k0);
            let mut part_shape = input.shape.clone();
            part_shape[d] = count;
            let part = ctx.allocate_temp(input.dtype, &part_shape)?;
            let extent = (outer - 1) * dim * inner + count * inner;
            let view =
                TensorRef { address: input.address + (k0 * inner) as u64 * size, shape: vec![extent], ..input.clone() };
            let dims = [DimMap::direct(outer, dim * inner), DimMap::direct(count, inner), DimMap::direct(inner, 1)];
            index::map(ctx.stream()?, &view, &part, &dims, None)?;
            let part_out = windows::rows(&flat_out, k0 * out_inner, count * out_inner);
            integer_parts(ctx, code, combine, part, mask.clone(), &part_out)?;
            k0 += count;
        }
        return Ok(());
    }
    // Reduced: ranges of rows, each part's result combined into the output.
    let per_part = (limit / (input.byte_len() / rows as u64)).max(1) as i64;
    let mut partial: Option<TensorRef> = None;
    let mut start = 0;
    while start < rows {
        let count = per_part.min(rows - start);
        let part = windows::rows(&input, start, count);
        if start == 0 {
            integer_parts(ctx, code, combine, part, mask.clone(), out)?;
        } else {
            let temp = match &partial {
                Some(t) => t.clone(),
                None => ctx.allocate_temp(out.dtype, &out.shape)?,
            };
            partial = Some(temp.clone());
            integer_parts(ctx, code, combine, part, mask.clone(), &temp)?;
            integer::launch(ctx.stream()?, combine, out, &temp, out)?;
        }
        start += count;
    }
    Ok(())
}

/// ArgMax and ArgMin of an integer tensor over `dimension`: (value, index) records, combined in
/// chunks as `compute_integer`'s partial results, until the last launch writes the index.
pub fn compute_integer_arg(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (input, out, p, axis) = arg_plan(ctx, kernel)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let code = if kernel.def.op == "ArgMin" { INTEGER_ARG_MIN } else { INTEGER_ARG_MAX };
    let limit = binding_limit(ctx.stream()?.device());
    if input.byte_len().max(out.byte_len()) > limit {
        let outer = input.shape[..axis].iter().product::<i64>();
        let inner = input.shape[axis + 1..].iter().product::<i64>();
        return integer_arg_in_windows(ctx, code, (outer, input.shape[axis], inner), &input, &out, limit);
    }
    integer_passes(ctx, code, p, &input, &out)
}

/// Integer ArgMax/ArgMin of `input` viewed as [outer, count, inner] (reduced along `count`) past a
/// binding, into `out` [outer, inner]:
/// - slabs [count, inner] that fit a binding, several to a launch;
/// - otherwise blocks of columns, copied into a contiguous [count, columns] temporary;
/// - otherwise (a column longer than half a binding) windows of rows, each giving its first
///   extreme's index and value per column, merged on the host: the first window holding the
///   extreme value has its first occurrence.
fn integer_arg_in_windows(
    ctx: &mut dyn KernelContext,
    code: u32,
    (outer, count, inner): (i64, i64, i64),
    input: &TensorRef,
    out: &TensorRef,
    limit: u64,
) -> Result<()> {
    let element = input.dtype.size() as i64;
    let out_size = out.dtype.size() as i64;
    // A slab's input, or its results (int64 ones may outgrow a narrow input).
    let slab = (count * inner * element).max(inner * out_size);
    // Elements `first..first + len` of `t`, as `shape`.
    let view = |t: &TensorRef, first: i64, shape: Vec<i64>| TensorRef {
        address: t.address + (first * t.dtype.size() as i64) as u64,
        dtype: t.dtype,
        shape,
    };
    let arg_params = |slabs: i64, count: i64, inner: i64| {
        params_for(&Split { kept: vec![(slabs, count * inner), (inner, 1)], reduced: vec![(count, inner)] })
    };
    if slab <= limit as i64 {
        let per_launch = (limit as i64 / slab.max(1)).max(1);
        let mut o = 0;
        while o < outer {
            let slabs = per_launch.min(outer - o);
            let part = view(input, o * count * inner, vec![slabs, count, inner]);
            let results = view(out, o * inner, vec![slabs, inner]);
            integer_passes(ctx, code, arg_params(slabs, count, inner)?, &part, &results)?;
            o += slabs;
        }
        return Ok(());
    }
    if count * element <= limit as i64 / 2 {
        // A block's input and its results each within half a binding.
        let width = (limit as i64 / 2 / (count * element).max(out_size)).clamp(1, inner);
        let block = ctx.allocate_temp(input.dtype, &[count, width])?;
        for o in 0..outer {
            let slab = view(input, o * count * inner, vec![count, inner]);
            let mut first = 0;
            while first < inner {
                let columns = width.min(inner - first);
                let part = TensorRef { shape: vec![count, columns], ..block.clone() };
                let strided = StridedView { base: first, shape: part.shape.clone(), strides: vec![inner, 1] };
                slice::launch(ctx.stream()?, &slab, &strided, &part)?;
                let results = view(out, o * inner + first, vec![1, columns]);
                integer_passes(ctx, code, arg_params(1, count, columns)?, &part, &results)?;
                first += columns;
            }
        }
        return Ok(());
    }
    // (Each window's results, [inner] int64 indices and extremes, must fit too.)
    let rows_per_window = if inner * 8 > limit as i64 { 0 } else { limit as i64 / (inner * element) };
    if rows_per_window < 1 {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: one row \
             of an ArgMax/ArgMin",
            inner * element
        )));
    }
    let extreme = if code == INTEGER_ARG_MIN { 3 } else { 2 };
    let windows = (count + rows_per_window - 1) / rows_per_window;
    let indices = ctx.allocate_temp(DType::I64, &[windows, inner])?;
    // The extremes in 64 bits (packed narrow ones would share words between windows).
    let signed = matches!(input.dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    let values = ctx.allocate_temp(if signed { DType::I64 } else { DType::U64 }, &[windows, inner])?;
    let mut answers = vec![0i64; (outer * inner) as usize];
    for o in 0..outer {
        for w in 0..windows {
            let rows = rows_per_window.min(count - w * rows_per_window);
            let part = view(input, (o * count + w * rows_per_window) * inner, vec![1, rows, inner]);
            let p = arg_params(1, rows, inner)?;
            integer_passes(ctx, code, p, &part, &view(&indices, w * inner, vec![1, inner]))?;
            integer_passes(ctx, extreme, p, &part, &view(&values, w * inner, vec![1, inner]))?;
        }
        let stream = ctx.stream()?;
        let index_bytes = stream.read_now(indices.address, indices.byte_len())?;
        let value_bytes = stream.read_now(values.address, values.byte_len())?;
        for c in 0..inner as usize {
            let mut best: Option<(i128, i64)> = None;
            for w in 0..windows as usize {
                let slot = w * inner as usize + c;
                let value = integer_value(&value_bytes[slot * 8..][..8], values.dtype);
                let better = match best {
                    None => true,
                    Some((b, _)) => {
                        if code == INTEGER_ARG_MIN {
                            value < b
                        } else {
                            value > b
                        }
                    }
                };
                if better {
                    let index = i64::from_le_bytes(index_bytes[slot * 8..][..8].try_into().unwrap_or([0; 8]));
                    best = Some((value, w as i64 * rows_per_window + index));
                }
            }
            answers[o as usize * inner as usize + c] = best.map_or(0, |(_, index)| index);
        }
    }
    let bytes: Vec<u8> = if out_size == 8 {
        answers.iter().flat_map(|i| i.to_le_bytes()).collect()
    } else {
        answers.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect()
    };
    ctx.stream()?.memcpy_htod(out.address, &bytes)
}

/// A little-endian integer element of `dtype`.
fn integer_value(bytes: &[u8], dtype: DType) -> i128 {
    let mut wide = [0u8; 16];
    wide[..bytes.len()].copy_from_slice(bytes);
    let unsigned = u128::from_le_bytes(wide);
    let bits = 8 * bytes.len() as u32;
    let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    if signed && bits < 128 && unsigned >> (bits - 1) & 1 == 1 {
        (unsigned as i128) - (1i128 << bits)
    } else {
        unsigned as i128
    }
}

/// `OP` of `integer_reduce.wgsl` for ArgMax and ArgMin.
const INTEGER_ARG_MAX: u32 = 5;
const INTEGER_ARG_MIN: u32 = 6;

/// The launches of `integer_reduce.wgsl` for op `code` over `p`, from `input` into `out`.
fn integer_passes(
    ctx: &mut dyn KernelContext,
    code: u32,
    mut p: Params,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let arg = code >= INTEGER_ARG_MAX;
    let signed = matches!(input.dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    let wide = if signed { DType::I64 } else { DType::U64 };
    let chunk = INTEGER_CHUNK.min(loop_budget(ctx.stream()?.device(), 16)) as u32;
    let outputs = p.outputs;
    let (mut source, mut width, mut rows, mut records) = (input.clone(), input.dtype.size(), p.count, false);
    loop {
        let slices = rows.div_ceil(chunk).max(1);
        let last = slices == 1;
        let partials = i64::from(outputs) * i64::from(slices);
        // Partial results: 64-bit values, or (value, index) records of 4 words.
        let dest = match (last, arg || out.dtype.size() == 8) {
            (true, true) => out.clone(),
            (true, false) => ctx.allocate_temp(wide, &out.shape)?,
            (false, _) if arg => ctx.allocate_temp(DType::U32, &[partials * 4])?,
            (false, _) => ctx.allocate_temp(wide, &[partials])?,
        };
        (p.rows, p.rows_per_slice, p.slices, p.partial) = (rows, chunk, slices, u32::from(!last));
        p.out_words = match (arg, last) {
            (false, _) => 2,
            (true, false) => 4,
            (true, true) => (out.dtype.size() / 4) as u32,
        };
        let stream = ctx.stream()?;
        launch_integer(stream, code, width, signed, records, p, &source, &dest)?;
        if last {
            if dest.address != out.address {
                super::integer::launch(stream, super::integer::CAST, &dest, &dest, out)?;
            }
            return Ok(());
        }
        // The partial results, [outputs, slices] row-major, reduce along their rows next.
        (p.kept_rank, p.red_rank) = (1, 1);
        (p.kept_shape, p.kept_stride, p.red_shape, p.red_stride) =
            ([1; MAX_RANK], [0; MAX_RANK], [1; MAX_RANK], [0; MAX_RANK]);
        (p.kept_shape[0], p.kept_stride[0], p.red_shape[0], p.red_stride[0]) = (outputs, slices, slices, 1);
        (source, width, rows, records) = (dest, 8, slices, arg);
    }
}

/// int32 Sum, Prod and Mean with every tensor in host memory (TF-GPU's int32 reductions): sums and
/// products wrap in int32, Mean divides the 64-bit sum toward zero (0 for no elements).
pub fn compute_int32_on_host(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (values, shape) = ctx.host_input_values(0)?;
    let (axes, _) = ctx.host_input_values(1)?;
    let mask = reduced_mask(&shape, &axes)?;
    let out_shape = reduced_shape(&shape, &mask, kernel.attrs.bool("keep_dims")?);
    let kept: Vec<i64> = shape.iter().zip(&mask).filter(|(_, &m)| !m).map(|(&d, _)| d).collect();
    let outputs: i64 = kept.iter().product();
    // The results are built on the host: past this many (an empty input can name billions), a
    // clear error instead of an allocation that takes the process down.
    const HOST_RESULTS: i64 = 1 << 28;
    if outputs > HOST_RESULTS {
        return Err(Error::resource_exhausted(format!(
            "{}: {outputs} int32 results are past the {HOST_RESULTS} a host-memory reduction builds",
            kernel.def.op
        )));
    }
    let count: i64 = shape.iter().zip(&mask).filter(|(_, &m)| m).map(|(&d, _)| d).product();
    let strides = contiguous_strides(&shape);
    let (identity, combine): (i64, fn(i64, i64) -> i64) = match kernel.def.op {
        "Prod" => (1, |a, b| (a as i32).wrapping_mul(b as i32) as i64),
        "Mean" => (0, i64::wrapping_add),
        _ => (0, |a, b| (a as i32).wrapping_add(b as i32) as i64),
    };
    let mut results = vec![identity; outputs.max(0) as usize];
    for (flat, &value) in values.iter().enumerate() {
        // The output this element reduces into: its coordinates along the kept dimensions.
        let mut output = 0i64;
        for d in 0..shape.len() {
            if !mask[d] {
                output = output * shape[d] + (flat as i64 / strides[d]) % shape[d];
            }
        }
        let slot = &mut results[output as usize];
        *slot = combine(*slot, value);
    }
    if kernel.def.op == "Mean" {
        results.iter_mut().for_each(|sum| *sum = if count == 0 { 0 } else { *sum / count });
    }
    let bytes: Vec<u8> = results.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect();
    ctx.write_host_output(0, DType::I32, &out_shape, &bytes)
}

/// One launch of `integer_reduce.wgsl` over `p` (elements of `width` bytes, or ArgMax/ArgMin
/// `records`) into `out`.
#[allow(clippy::too_many_arguments)]
fn launch_integer(
    stream: &Stream,
    op: u32,
    width: u64,
    signed: bool,
    records: bool,
    mut p: Params,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let device = stream.device();
    check_loop_iterations(device, u64::from(p.rows_per_slice), "reduction")?;
    // An empty input (TF's address for it is no allocation) is never read: bind the output.
    let input = if input.byte_len() == 0 { out } else { input };
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let constants = [
        ("OP", f64::from(op)),
        ("WIDTH", width as f64),
        ("SIGNED", f64::from(u8::from(signed))),
        ("RECORDS", f64::from(u8::from(records))),
        fast_div(p.count.max(p.outputs).max(p.rows)),
        ("KEPT_RANK", rank_constant(p.kept_rank).1),
        ("RED_RANK", rank_constant(p.red_rank).1),
    ];
    let pipeline = device.pipelines.get(
        device,
        &INTEGER_SHADER,
        &PipelineSpec { entry: "main", aliases: &[], constants: &constants },
    )?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, 1)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 1)?;
        (p.in_off, p.out_off) = (in_off, out_off);
        let threads = u64::from(p.outputs) * u64::from(p.slices);
        dispatch(core, encoder, "integer_reduce", &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&p), threads)
    })
}

/// BiasAddGrad: `out_backprop` summed over every dimension but the channel one.
pub fn bias_add_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let grad = ctx.input(0)?;
    if grad.shape.len() < 2 {
        return Err(Error::invalid_argument(format!("Input tensor must be at least 2D: {:?}", grad.shape)));
    }
    let channel = match kernel.attrs.str("data_format")? {
        "NHWC" => grad.shape.len() - 1,
        "NCHW" => 1,
        other => return Err(Error::invalid_argument(format!("Unknown data_format {other}"))),
    };
    let mask: Vec<bool> = (0..grad.shape.len()).map(|d| d != channel).collect();
    let out = ctx.allocate_output(0, grad.dtype, &[grad.shape[channel]])?;
    let stream = ctx.stream()?;
    if grad.num_elements() == 0 {
        return stream.fill(out.address, out.byte_len(), 0);
    }
    if grad.byte_len() > binding_limit(stream.device()) {
        return reduce_in_windows(ctx, "Sum", &grad, &mask, &out);
    }
    launch(stream, "reduce_f32", 0, params_for(&split_dims(&grad.shape, &mask))?, &grad, &out)
}

/// L2Loss: half the sum of squares of every element, a scalar.
pub fn l2_loss(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let t = ctx.input(0)?;
    let out = ctx.allocate_output(0, t.dtype, &[])?;
    let stream = ctx.stream()?;
    if t.num_elements() == 0 {
        return stream.fill(out.address, out.byte_len(), 0);
    }
    let everything = vec![true; t.shape.len()];
    if t.byte_len() > binding_limit(stream.device()) {
        // Each part's L2 loss (halved squares), added up.
        return reduce_parts(ctx, L2_LOSS, BinaryOp::Add, t, everything, &out);
    }
    launch(stream, "reduce_f32", L2_LOSS, params_for(&split_dims(&t.shape, &everything))?, &t, &out)
}

/// ArgMax and ArgMin over one axis, into int64 or int32.
pub fn arg(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (axis, axis_shape) = ctx.host_input_values(1)?;
    let axis = validate::scalar(&axis, &axis_shape, "dimension")?;
    validate::axis(axis, input.shape.len(), "dimension")?;
    // Over any axis but the first, rows of the input are independent.
    let rank = input.shape.len() as i64;
    if input.shape.len() >= 2 && axis != 0 && axis != -rank {
        const ROWS: BatchArgs = BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
        return split_batch_on_overflow(ctx, kernel, &ROWS, arg_whole);
    }
    arg_whole(ctx, kernel)
}

fn arg_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (input, out, mut p, axis) = arg_plan(ctx, kernel)?;
    p.out_words = if out.dtype == DType::I64 { 2 } else { 1 };
    if p.outputs == 0 {
        return Ok(());
    }
    let op = u32::from(kernel.def.op == "ArgMin");
    launch_arg(ctx, op, p, axis, &input, &out)
}

/// The elements per slice when each of `outputs` outputs reduces `count` elements with workgroups
/// of 256 threads: under `per_thread` loop iterations each, and spread over several workgroups
/// where the outputs are few; `count` (one slice) otherwise.
fn slice_length(count: u64, outputs: u32, per_thread: u64) -> u64 {
    if count.div_ceil(256) > per_thread {
        per_thread * 256
    } else if outputs < PARALLEL_WORKGROUPS && count >= 2 * MIN_PARALLEL_SLICE {
        count.div_ceil(u64::from(PARALLEL_WORKGROUPS / outputs).max(2)).max(MIN_PARALLEL_SLICE)
    } else {
        count
    }
}

/// ArgMax/ArgMin over the leading axis of `input` [count, inner] whose windows of whole rows would
/// each keep more candidates than a binding holds (few, very long rows): ranges of columns, each
/// copied into a contiguous [count, columns] temporary of at most `bytes`, reduced on its own.
fn arg_by_columns(
    ctx: &mut dyn KernelContext,
    op: u32,
    out_words: u32,
    (count, inner): (u64, u64),
    input: &TensorRef,
    out: &TensorRef,
    bytes: u64,
) -> Result<()> {
    let width = (bytes / (count * input.dtype.size())).clamp(1, inner);
    let block = ctx.allocate_temp(input.dtype, &[count as i64, width as i64])?;
    let mut first = 0;
    while first < inner {
        let columns = width.min(inner - first);
        let part = TensorRef { shape: vec![count as i64, columns as i64], ..block.clone() };
        let view = StridedView { base: first as i64, shape: part.shape.clone(), strides: vec![inner as i64, 1] };
        let whole = TensorRef { shape: vec![count as i64, inner as i64], ..input.clone() };
        slice::launch(ctx.stream()?, &whole, &view, &part)?;
        let split = Split { kept: vec![(columns as i64, 1)], reduced: vec![(count as i64, columns as i64)] };
        let p = Params { out_words, ..params_for(&split)? };
        let results = TensorRef {
            address: out.address + first * out.dtype.size(),
            dtype: out.dtype,
            shape: vec![columns as i64],
        };
        launch_arg(ctx, op, p, 0, &part, &results)?;
        first += columns;
    }
    Ok(())
}

/// ArgMax/ArgMin (`arg_f32`, `arg_f64`): one workgroup per output, or, over a long axis, one per
/// slice of it (under the adapter's loop limit, and over several workgroups where the outputs are
/// few), the slices' candidates reduced by `arg_*_merge`. An input past a storage binding goes in
/// windows of whole slices along the axis (contiguous: each index of the dimensions before the axis
/// runs on its own), as long as the candidates of every window fit a binding.
fn launch_arg(
    ctx: &mut dyn KernelContext,
    op: u32,
    mut p: Params,
    axis: usize,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let f64_input = input.dtype == DType::F64;
    let (shader, merge_entry) = if f64_input { (&F64_SHADER, "arg_f64_merge") } else { (&SHADER, "arg_f32_merge") };
    let element = input.dtype.size();
    let count = u64::from(p.count);
    let outputs = u64::from(p.outputs);
    let inner = input.shape[axis + 1..].iter().product::<i64>() as u64;
    let (limit, per_thread) = {
        let device = ctx.stream()?.device();
        (binding_limit(device), loop_budget(device, 16))
    };
    let outer: i64 = input.shape[..axis].iter().product();
    if input.byte_len() > limit && outer > 1 {
        // Each index of the dimensions before the axis on its own: a [count, inner] view.
        let view = Split { kept: vec![(inner as i64, 1)], reduced: vec![(count as i64, inner as i64)] };
        let sub_p = Params { out_words: p.out_words, ..params_for(&view)? };
        let out_size = out.dtype.size();
        for o in 0..outer as u64 {
            let sub_input = TensorRef {
                address: input.address + o * count * inner * element,
                dtype: input.dtype,
                shape: vec![count as i64, inner as i64],
            };
            let sub_out =
                TensorRef { address: out.address + o * inner * out_size, dtype: out.dtype, shape: vec![inner as i64] };
            launch_arg(ctx, op, sub_p, 0, &sub_input, &sub_out)?;
        }
        return Ok(());
    }
    let mut slice_len = slice_length(count, p.outputs, per_thread);
    let mut window_rows = count;
    if input.byte_len() > limit {
        let rows_fit = limit / (inner.max(1) * element);
        // (Every window keeps a candidate per output and slice, bound whole.)
        let candidates_fit = rows_fit > 0 && outputs * count.div_ceil(rows_fit.min(slice_len)) * 16 <= limit;
        let columns_fit = count * element <= limit / 2;
        if !candidates_fit && columns_fit {
            return arg_by_columns(ctx, op, p.out_words, (count, inner), input, out, limit / 2);
        }
        if !candidates_fit {
            return Err(Error::unimplemented(format!(
                "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: ArgMax/ArgMin \
                 reads windows of whole rows along the axis ({} bytes each), with a candidate per output and \
                 window ({} outputs)",
                input.byte_len(),
                inner * element,
                outputs
            )));
        }
        slice_len = slice_len.min(rows_fit);
        window_rows = rows_fit / slice_len * slice_len;
    }
    let slices = count.div_ceil(slice_len);
    (p.rows_per_slice, p.index_base) = (shader_len(slice_len, "ArgMax/ArgMin")?, 0);
    // A candidate: (index, value) in 2 words, or 2 f64 slots for float64.
    let slot_bytes: u64 = if f64_input { 16 } else { 8 };
    let candidates = if slices > 1 || window_rows < count {
        check_loop_iterations(ctx.stream()?.device(), slices, "ArgMax/ArgMin")?;
        p.partial = shader_len(slices, "ArgMax/ArgMin")?;
        Some(ctx.allocate_temp(DType::U32, &[(outputs * slices * slot_bytes / 4) as i64])?)
    } else {
        p.partial = 0;
        None
    };
    let entry = match (f64_input, candidates.is_some()) {
        (true, true) => "arg_f64_candidates",
        (true, false) => "arg_f64",
        (false, _) => "arg_f32",
    };
    let stream = ctx.stream()?;
    let device = stream.device();
    let pass = pipeline_of(device, shader, entry, op, &p)?;
    let results = candidates.as_ref().unwrap_or(out);
    let results_mem = device.memory.resolve(results.address, results.byte_len())?;
    // Offsets in words, or in f64 slots for float64 candidates.
    let results_unit = if f64_input && candidates.is_some() { 8 } else { 4 };
    let mut start = 0;
    while start < count {
        let rows = window_rows.min(count - start);
        // A window of whole rows along the axis (the dimensions before it are 1), or the input.
        let window = if rows == count {
            input.clone()
        } else {
            TensorRef {
                address: input.address + start * inner * element,
                dtype: input.dtype,
                shape: vec![rows as i64, inner as i64],
            }
        };
        let in_mem = device.memory.resolve(window.address, window.byte_len())?;
        let mut q = p;
        (q.rows, q.slices, q.index_base) =
            (rows as u32, shader_len(rows.div_ceil(slice_len), "ArgMax/ArgMin")?, start as u32);
        // The slots of the slices before this window, in the candidates' units (2 a slot).
        let first_slot = start / slice_len * 2;
        check_loop_iterations(device, u64::from(q.rows_per_slice).div_ceil(256) + 8, "ArgMax/ArgMin")?;
        stream.encode(|core, encoder| {
            let (in_bind, in_off) = storage_window(core, &in_mem, element)?;
            let (out_bind, out_off) = storage_window(core, &results_mem, results_unit)?;
            (q.in_off, q.out_off) = (in_off, out_off + first_slot as u32);
            let groups = grid(core, outputs * u64::from(q.slices), entry)?;
            let bindings = [in_bind, out_bind, in_bind];
            let bindings = if f64_input { &bindings[..] } else { &bindings[..2] };
            dispatch_workgroups(core, encoder, entry, &pass, bindings, bytemuck::bytes_of(&q), groups)
        })?;
        start += rows;
    }
    if candidates.is_none() {
        return Ok(());
    }
    let merge = pipeline_of(device, shader, merge_entry, op, &p)?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    stream.encode(|core, encoder| {
        // (`in_off` in words, or in f64 slots for float64.)
        let (in_bind, in_off) = storage_window(core, &results_mem, results_unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 4)?;
        (p.in_off, p.out_off) = (in_off, out_off);
        let groups = grid(core, outputs.div_ceil(SERIAL_WORKGROUP), merge_entry)?;
        let bindings = [in_bind, out_bind, in_bind];
        let bindings = if f64_input { &bindings[..] } else { &bindings[..2] };
        dispatch_workgroups(core, encoder, merge_entry, &merge, bindings, bytemuck::bytes_of(&p), groups)
    })
}

/// ArgMax/ArgMin's input, its output (allocated) and the parameters of a reduction over
/// `dimension`; an empty reduced axis is InvalidArgument, as in TF.
fn arg_plan(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<(TensorRef, TensorRef, Params, usize)> {
    let input = ctx.input(0)?;
    let (axis, axis_shape) = ctx.host_input_values(1)?;
    let axis = validate::scalar(&axis, &axis_shape, "dimension")?;
    validate::axis(axis, input.shape.len(), "dimension")?;
    let mask = reduced_mask(&input.shape, &[axis])?;
    let d = mask.iter().position(|&m| m).unwrap_or(0);
    if input.shape[d] == 0 {
        return Err(Error::invalid_argument(format!("Reduction axis {axis} is empty in shape {:?}", input.shape)));
    }
    let out = ctx.allocate_output(0, kernel.dtype("output_type")?, &reduced_shape(&input.shape, &mask, false))?;
    // One reduced dimension, kept as is (no merging) so `red_stride[0]` is its stride.
    let strides = contiguous_strides(&input.shape);
    let split = Split {
        kept: (0..input.shape.len()).filter(|&k| k != d).map(|k| (input.shape[k], strides[k])).collect(),
        reduced: vec![(input.shape[d], strides[d])],
    };
    Ok((input, out, params_for(&split)?, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_split_and_merged() {
        let mask = reduced_mask(&[2, 3, 4, 5], &[1, -2]).unwrap();
        assert_eq!(mask, vec![false, true, true, false]);
        let split = split_dims(&[2, 3, 4, 5], &mask);
        assert_eq!(split.kept, vec![(2, 60), (5, 1)]);
        assert_eq!(split.reduced, vec![(12, 5)]);
        assert!(reduced_mask(&[2], &[1]).is_err());
    }
}
