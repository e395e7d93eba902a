//! Cumsum, Cumprod and CumulativeLogsumexp (`wgsl/scan.wgsl`) along any axis, `exclusive` and
//! `reverse`, in float32 (float16 and bfloat16 through `half::via_f32`) and float64, and Cumsum
//! and Cumprod of 32- and 64-bit integers, wrapping. An axis longer than the adapter's loop budget
//! is scanned in blocks: each block's running values and total, then the exclusive scan of the
//! totals (the same routine, one level up), combined into the later blocks' elements.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, loop_budget, storage_window, PipelineSpec, Shader};

use super::batch;
use super::column_tiles::copy_columns;
use super::validate;
use super::windows::{self, binding_limit};
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "scan",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/scan_words.wgsl"),
        include_str!("../../wgsl/scan.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};
/// The same scans of float64, computed in f64 (SHADER_F64).
pub const FLOAT64_SHADER: Shader = Shader {
    name: "scan_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/scan_f64.wgsl"),
        include_str!("../../wgsl/scan.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    len: u32,
    inner: u32,
    block: u32,
    blocks: u32,
    exclusive: u32,
    reverse: u32,
    in_off: u32,
    out_off: u32,
    totals_off: u32,
    _pad: [u32; 2],
}

/// Cumsum, Cumprod and CumulativeLogsumexp (x, axis).
pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // Past a binding, a range of the leading dimension at a time where the scan runs along another.
    let rank = ctx.input(0)?.shape.len() as i64;
    let (axis, _) = ctx.host_input_values(1)?;
    let along_later_axis = rank >= 2 && axis.len() == 1 && axis[0].rem_euclid(rank.max(1)) != 0;
    batch::split_batch_if(ctx, kernel, along_later_axis.then_some(&batch::INPUT_0_OUTPUT_0), compute_whole)
}

fn compute_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let x = ctx.input(0)?;
    let (axis, axis_shape) = ctx.host_input_values(1)?;
    if !axis_shape.is_empty() {
        return Err(Error::invalid_argument(format!(
            "ScanOp: axis must be a scalar, not {}",
            validate::shape_string(&axis_shape)
        )));
    }
    let rank = x.shape.len();
    let axis = validate::scalar(&axis, &axis_shape, "axis")?;
    if rank == 0 || axis < -(rank as i64) || axis >= rank as i64 {
        return Err(Error::invalid_argument(format!(
            "ScanOp: Expected scan axis in the range [{}, {rank}), but got {axis}",
            -(rank as i64)
        )));
    }
    let axis = axis.rem_euclid(rank as i64) as usize;
    let out = ctx.allocate_output(0, x.dtype, &x.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let outer: i64 = x.shape[..axis].iter().product();
    let inner: i64 = x.shape[axis + 1..].iter().product();
    let combine = match kernel.def.op {
        "Cumprod" => 1,
        "CumulativeLogsumexp" => 2,
        _ => 0,
    };
    let flags = (kernel.attrs.bool("exclusive")?, kernel.attrs.bool("reverse")?);
    let len = x.shape[axis];
    // One outer row past a binding: each row's scan in windows along its axis. (Rows that fit
    // but are many run in batch ranges: `compute`.)
    if (len * inner) as u64 * x.dtype.size() <= binding_limit(ctx.stream()?.device()) {
        return scan(ctx, combine, flags, &x, &out, (outer, len, inner));
    }
    let flat = |t: &TensorRef| TensorRef { shape: vec![outer * len, inner], ..t.clone() };
    let (x, out) = (flat(&x), flat(&out));
    for o in 0..outer {
        let row = |t: &TensorRef| windows::rows(t, o * len, len);
        scan_in_windows(ctx, combine, flags, &row(&x), &row(&out))?;
    }
    Ok(())
}

/// The scan of `input` [len, inner] down its first dimension, in windows of rows that fit a
/// binding: each window scanned alone, then combined with the carry of the windows before it (in
/// the scan's direction), which is the previous window's edge row of `out` (and, for an exclusive
/// scan, of `input` too).
fn scan_in_windows(
    ctx: &mut dyn KernelContext,
    combine: u32,
    (exclusive, reverse): (bool, bool),
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let (len, inner) = (input.shape[0], input.shape[1]);
    let row_bytes = inner as u64 * input.dtype.size();
    let limit = binding_limit(ctx.stream()?.device());
    let rows = (limit / row_bytes.max(1)) as i64;
    if rows < 1 {
        // One step passes a binding: the columns are independent, so ranges of them, each copied
        // into a temporary (one copy per step), scanned there and copied back.
        let width = (limit / input.dtype.size()).max(1) as i64;
        let part = |ctx: &mut dyn KernelContext| ctx.allocate_temp(input.dtype, &[len, width.min(inner), 1]);
        let (part_in, part_out) = (part(ctx)?, part(ctx)?);
        let as_columns = |t: &TensorRef| TensorRef { shape: vec![len, t.shape[1], 1], ..t.clone() };
        let mut first = 0;
        while first < inner {
            let count = width.min(inner - first);
            let narrow = |t: &TensorRef| TensorRef { shape: vec![len, count, 1], ..t.clone() };
            let (x, y) = (narrow(&part_in), narrow(&part_out));
            copy_columns(ctx, (&as_columns(input), first), (&x, 0), count)?;
            let flat = |t: &TensorRef| TensorRef { shape: vec![len, count], ..t.clone() };
            scan_in_windows(ctx, combine, (exclusive, reverse), &flat(&x), &flat(&y))?;
            copy_columns(ctx, (&y, 0), (&as_columns(out), first), count)?;
            first += count;
        }
        return Ok(());
    }
    let windows: Vec<(i64, i64)> = (0..len).step_by(rows as usize).map(|s| (s, rows.min(len - s))).collect();
    let ordered: Vec<(i64, i64)> = if reverse { windows.into_iter().rev().collect() } else { windows };
    let mut carry: Option<TensorRef> = None;
    for (start, count) in ordered {
        let (x, y) = (windows::rows(input, start, count), windows::rows(out, start, count));
        scan(ctx, combine, (exclusive, reverse), &x, &y, (1, count, inner))?;
        if let Some(carry) = &carry {
            let p = Params {
                n: shader_len(y.num_elements(), "Cumsum")?,
                len: count as u32,
                inner: inner as u32,
                ..Params::default()
            };
            launch(ctx, "scan_carry", combine, p, &y, &y, carry)?;
        }
        // The next window's carry: everything up to this window's far edge.
        let edge = if reverse { 0 } else { count - 1 };
        let last_out = windows::rows(&y, edge, 1);
        carry = Some(if exclusive {
            let total = ctx.allocate_temp(input.dtype, &[1, inner])?;
            let stream = ctx.stream()?;
            stream.memcpy_dtod(total.address, windows::rows(&x, edge, 1).address, row_bytes)?;
            let p = Params { n: inner as u32, len: 1, inner: inner as u32, ..Params::default() };
            launch(ctx, "scan_carry", combine, p, &total, &total, &last_out)?;
            total
        } else {
            last_out
        });
    }
    Ok(())
}

/// Loops a float64 log-sum-exp combine runs per element, with a margin: llvmpipe's loop cap
/// (`loop_budget`) counts the loops inside each combine too, and `m64_log` runs `m64_binade`'s 10.
const F64_LOGSUMEXP_LOOPS: u64 = 16;

/// `out` = the scan of `input` ([outer, len, inner]) with `(exclusive, reverse)`.
fn scan(
    ctx: &mut dyn KernelContext,
    combine: u32,
    (exclusive, reverse): (bool, bool),
    input: &TensorRef,
    out: &TensorRef,
    (outer, len, inner): (i64, i64, i64),
) -> Result<()> {
    let loops_per_element = if input.dtype == DType::F64 && combine == 2 { F64_LOGSUMEXP_LOOPS } else { 1 };
    let block = (loop_budget(ctx.stream()?.device(), 16) / loops_per_element).min(len as u64).max(1) as i64;
    let blocks = (len + block - 1) / block;
    let totals = ctx.allocate_temp(input.dtype, &[outer, blocks, inner])?;
    let p = Params {
        n: shader_len((outer * blocks * inner) as u64, "Cumsum")?,
        len: shader_len(len as u64, "Cumsum")?,
        inner: shader_len(inner as u64, "Cumsum")?,
        block: block as u32,
        blocks: blocks as u32,
        exclusive: u32::from(exclusive),
        reverse: u32::from(reverse),
        ..Params::default()
    };
    shader_len(input.num_elements(), "Cumsum")?;
    launch(ctx, "scan_blocks", combine, p, input, out, &totals)?;
    if blocks == 1 {
        return Ok(());
    }
    // Each block's offset: the exclusive scan of the block totals before it (in the scan's own
    // direction, which the totals are already in).
    let offsets = ctx.allocate_temp(input.dtype, &[outer, blocks, inner])?;
    scan(ctx, combine, (true, false), &totals, &offsets, (outer, blocks, inner))?;
    let p = Params { n: shader_len(out.num_elements(), "Cumsum")?, ..p };
    launch(ctx, "scan_offsets", combine, p, out, out, &offsets)
}

fn launch(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    combine: u32,
    mut p: Params,
    input: &TensorRef,
    out: &TensorRef,
    totals: &TensorRef,
) -> Result<()> {
    let stream = ctx.stream()?;
    let device = stream.device();
    let [in_mem, out_mem, totals_mem] =
        [input, out, totals].map(|t| device.memory.resolve(t.address, t.byte_len().max(4)));
    let (in_mem, out_mem, totals_mem) = (in_mem?, out_mem?, totals_mem?);
    // The shader, its element kind (`scan_words.wgsl`'s float32, 32-bit or 64-bit integer) and the
    // unit its offsets count.
    let (shader, kind, unit) = match input.dtype {
        DType::F32 => (&SHADER, 0, 4),
        DType::I32 | DType::U32 => (&SHADER, 1, 4),
        DType::I64 | DType::U64 => (&SHADER, 2, 4),
        DType::F64 => (&FLOAT64_SHADER, 0, 8),
        other => return Err(Error::internal(format!("scan: no {other:?} elements"))),
    };
    let constants = [("COMBINE", f64::from(combine)), ("KIND", f64::from(kind))];
    let constants = if input.dtype == DType::F64 { &constants[..1] } else { &constants[..] };
    let pipeline = device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants })?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, unit)?;
        let (totals_bind, totals_off) = storage_window(core, &totals_mem, unit)?;
        (p.in_off, p.out_off, p.totals_off) = (in_off, out_off, totals_off);
        dispatch(
            core,
            encoder,
            entry,
            &pipeline,
            &[in_bind, out_bind, totals_bind],
            bytemuck::bytes_of(&p),
            u64::from(p.n),
        )
    })
}
