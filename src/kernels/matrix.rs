//! Matrix structure ops over the innermost two dimensions (`wgsl/matrix.wgsl`): MatrixBandPart,
//! which Keras's causal attention masks and `tf.linalg.band_part` call, for every dtype TF places on
//! the device (elements moved as raw bits).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::batch::{self, BatchArgs};
use super::validate::{self, shape_string};
use super::windows::{self, binding_limit, elementwise_parts};
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "matrix",
    source: include_str!("../../wgsl/matrix.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    unit: u32,
    parts: u32,
    rows: u32,
    cols: u32,
    lower: i32,
    upper: i32,
    in_off: u32,
    out_off: u32,
    base: u32,
    _pad: [u32; 2],
}

/// A band limit: a host-memory scalar, negative for "all", at most the matrix's `extent`.
fn band_limit(ctx: &mut dyn KernelContext, index: usize, what: &str, extent: i64, noun: &str) -> Result<i64> {
    let (values, shape) = ctx.host_input_values(index)?;
    if !shape.is_empty() {
        return Err(Error::invalid_argument(format!("{what} must be scalar, got shape {}", shape_string(&shape))));
    }
    let limit = validate::scalar(&values, &shape, what)?;
    if limit > extent {
        return Err(Error::invalid_argument(format!(
            "{what} must be negative or less or equal to number of {noun} ({extent}) got: {limit}"
        )));
    }
    Ok(limit)
}

/// MatrixBandPart(input, num_lower, num_upper): the input with the elements outside the band
/// zeroed.
pub fn band_part(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    if rank < 2 {
        return Err(Error::invalid_argument(format!(
            "input must be at least 2-dim, received shape: {}",
            shape_string(&input.shape)
        )));
    }
    let (rows, cols) = (input.shape[rank - 2], input.shape[rank - 1]);
    let lower = band_limit(ctx, 1, "num_lower", rows, "rows")?;
    let upper = band_limit(ctx, 2, "num_upper", cols, "columns")?;
    let out = ctx.allocate_output(0, input.dtype, &input.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    shader_len((rows * cols) as u64, "MatrixBandPart")?;
    // TF's functor takes the limits as int: int64 ones wrap to their low 32 bits (i64::MIN is 0).
    let clamp = |limit: i64| (limit as i32).max(-1);
    let p = Params {
        rows: shader_len(rows as u64, "MatrixBandPart")?,
        cols: shader_len(cols as u64, "MatrixBandPart")?,
        lower: clamp(lower),
        upper: clamp(upper),
        ..Params::default()
    };
    launch(ctx, p, &input, &out)
}

fn launch(ctx: &mut dyn KernelContext, mut p: Params, input: &TensorRef, out: &TensorRef) -> Result<()> {
    let stream = ctx.stream()?;
    // Past a binding: windows of the flat tensor, each told where in its matrix it starts.
    if let Some(parts) = elementwise_parts(stream.device(), out, &[input])? {
        let (size, matrix) = (out.dtype.size(), u64::from(p.rows) * u64::from(p.cols));
        return parts.iter().try_for_each(|part| {
            let first = (part.out.address - out.address) / size;
            launch(ctx, Params { base: (first % matrix) as u32, ..p }, &part.operands[0], &part.out)
        });
    }
    let size = input.dtype.size();
    let (entry, unit) = if size >= 4 { ("band_words", 4) } else { ("band_parts", size) };
    let elements = input.num_elements();
    p.n = shader_len(if size >= 4 { elements * size / 4 } else { elements }, "MatrixBandPart")?;
    p.unit = (size / 4).max(1) as u32;
    p.parts = (4 / size.min(4)) as u32;
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &[], constants: &[] })?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, unit)?;
        (p.in_off, p.out_off) = (in_off, out_off);
        let invocations = if entry == "band_parts" {
            (u64::from(p.n) + u64::from(out_off % p.parts)).div_ceil(u64::from(p.parts))
        } else {
            u64::from(p.n)
        };
        dispatch(
            core,
            encoder,
            "matrix_band_part",
            &pipeline,
            &[in_bind, out_bind],
            bytemuck::bytes_of(&p),
            invocations,
        )
    })
}

/// MatrixDiag, MatrixDiagPart and MatrixSetDiag (all generations), Diag and DiagPart
/// (`wgsl/diag.wgsl`), for dtypes of whole words.
pub const DIAG_SHADER: Shader = Shader {
    name: "diag",
    source: include_str!("../../wgsl/diag.wgsl"),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct DiagParams {
    n: u32,
    unit: u32,
    mode: u32,
    rows: u32,
    cols: u32,
    num_diags: u32,
    diag_len: u32,
    lo: i32,
    hi: i32,
    super_left: u32,
    sub_left: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    first_row: u32,
    window_rows: u32,
}

/// `diag.wgsl`'s modes.
const BUILD: u32 = 0;
const PART: u32 = 1;
const SET: u32 = 2;

/// The diagonals a V2/V3 op's `k` input names: one index, or [lower, upper].
fn diag_range(ctx: &mut dyn KernelContext, index: usize) -> Result<(i64, i64)> {
    let (k, shape) = ctx.host_input_values(index)?;
    if shape.len() > 1 {
        return Err(Error::invalid_argument(format!(
            "diag_index must be a scalar or vector, received shape: {}",
            shape_string(&shape)
        )));
    }
    let (Some(&lo), hi) = (k.first(), k.get(1)) else {
        return Err(Error::invalid_argument("diag_index must have at least one element"));
    };
    let hi = *hi.unwrap_or(&lo);
    if lo > hi {
        return Err(Error::invalid_argument(format!(
            "lower_diag_index must not be larger than upper_diag_index: {lo} > {hi}"
        )));
    }
    Ok((lo, hi))
}

/// Whether super- and subdiagonals shorter than the longest sit at their row's start: V3's `align`
/// (LEFT_LEFT before it).
fn alignment(kernel: &KernelInstance) -> Result<(bool, bool)> {
    if !kernel.def.op.ends_with("V3") {
        return Ok((true, true));
    }
    Ok(match kernel.attrs.str("align")? {
        "LEFT_LEFT" => (true, true),
        "LEFT_RIGHT" => (true, false),
        "RIGHT_LEFT" => (false, true),
        "RIGHT_RIGHT" => (false, false),
        other => return Err(Error::invalid_argument(format!("Unknown align attribute: {other}"))),
    })
}

/// The padding value: input `index` of a V2/V3 op (a scalar), else a zero.
fn padding(ctx: &mut dyn KernelContext, index: Option<usize>, dtype: DType) -> Result<TensorRef> {
    if let Some(index) = index {
        let value = ctx.input(index)?;
        if !value.shape.is_empty() {
            return Err(Error::invalid_argument(format!(
                "padding_value must be a scalar, received shape: {}",
                shape_string(&value.shape)
            )));
        }
        return Ok(value);
    }
    let zero = ctx.allocate_temp(dtype, &[1])?;
    ctx.stream()?.fill(zero.address, zero.byte_len(), 0)?;
    Ok(zero)
}

/// A diagonal index in range of a rows x cols matrix (TF's check for the part and set ops).
fn check_bound(what: &str, d: i64, rows: i64, cols: i64) -> Result<()> {
    if (-rows < d && d < cols) || d == 0 {
        return Ok(());
    }
    Err(Error::invalid_argument(format!("{what} is out of bound: {d}. It must be between {} and {cols}", -rows)))
}

/// The rows, columns, longest diagonal and diagonals tensor shape ([..., num_diags,] diag_len) of
/// diagonals `lo` to `hi` of `input`'s matrices, checked as TF's part and set ops check them.
fn diagonals_of(input: &TensorRef, lo: i64, hi: i64) -> Result<(i64, i64, i64, Vec<i64>)> {
    let rank = input.shape.len();
    if rank < 2 {
        return Err(Error::invalid_argument(format!(
            "input must be at least 2-dim, received shape: {}",
            shape_string(&input.shape)
        )));
    }
    let (rows, cols) = (input.shape[rank - 2], input.shape[rank - 1]);
    check_bound("lower_diag_index", lo, rows, cols)?;
    check_bound("upper_diag_index", hi, rows, cols)?;
    let diag_len = longest(lo, hi, rows, cols);
    let mut shape = input.shape[..rank - 2].to_vec();
    if lo != hi {
        shape.push(hi - lo + 1);
    }
    shape.push(diag_len);
    Ok((rows, cols, diag_len, shape))
}

/// The longest diagonal from `lo` to `hi` of a rows x cols matrix.
fn longest(lo: i64, hi: i64, rows: i64, cols: i64) -> i64 {
    (rows + hi.min(0)).min(cols - lo.max(0)).max(0)
}

/// MatrixDiag(diagonal), MatrixDiagV2/V3(diagonal, k, num_rows, num_cols, padding_value): matrices
/// with the given diagonals, padding elsewhere.
pub fn matrix_diag(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // Past a binding, a range of the batch at a time: the diagonals have batch dimensions before
    // their one (or, for a range of diagonals, two) of their own.
    let rank = ctx.input(0)?.shape.len();
    let own = if kernel.def.op == "MatrixDiag" {
        1
    } else {
        let k = ctx.host_input_values(1)?.0;
        1 + usize::from(k.len() == 2 && k[0] != k[1])
    };
    batch::split_batch_if(ctx, kernel, (rank > own).then_some(&batch::INPUT_0_OUTPUT_0), matrix_diag_whole)
}

fn matrix_diag_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let diagonal = ctx.input(0)?;
    let dtype = diagonal.dtype;
    let first = kernel.def.op == "MatrixDiag";
    let (lo, hi) = if first { (0, 0) } else { diag_range(ctx, 1)? };
    let mut size = |index: usize, what: &str| -> Result<i64> {
        if first {
            return Ok(-1);
        }
        let (v, shape) = ctx.host_input_values(index)?;
        validate::scalar(&v, &shape, what)
    };
    let (mut rows, mut cols) = (size(2, "num_rows")?, size(3, "num_cols")?);
    let rank = diagonal.shape.len();
    if rank == 0 {
        return Err(Error::invalid_argument("diagonal must be at least 1-dim, received shape: []"));
    }
    let num_diags = hi - lo + 1;
    let mut batch = diagonal.shape[..rank - 1].to_vec();
    if lo != hi {
        if rank < 2 || diagonal.shape[rank - 2] != num_diags {
            return Err(Error::invalid_argument(format!(
                "The number of diagonals provided in the input does not match the lower_diag_index and \
                 upper_diag_index range: {} vs. {num_diags}",
                if rank < 2 { 0 } else { diagonal.shape[rank - 2] }
            )));
        }
        batch.pop();
    }
    let diag_len = diagonal.shape[rank - 1];
    let (min_rows, min_cols) = (diag_len - hi.min(0), diag_len + lo.max(0));
    match (rows, cols) {
        (-1, -1) => (rows, cols) = (min_rows.max(min_cols), min_rows.max(min_cols)),
        (-1, _) => rows = min_rows,
        (_, -1) => cols = min_cols,
        _ => {}
    }
    if rows < min_rows {
        return Err(Error::invalid_argument("The number of rows is too small."));
    }
    if cols < min_cols {
        return Err(Error::invalid_argument("The number of columns is too small."));
    }
    if rows != min_rows && cols != min_cols {
        return Err(Error::invalid_argument(
            "The number of rows or columns is not consistent with the specified d_lower, d_upper, and diagonal.",
        ));
    }
    let pad = padding(ctx, (!first).then_some(4), dtype)?;
    let mut shape = batch;
    shape.extend([rows, cols]);
    validate::num_elements(&shape)?;
    let out = ctx.allocate_output(0, dtype, &shape)?;
    let (super_left, sub_left) = alignment(kernel)?;
    let p = diag_params(BUILD, rows, cols, num_diags, diag_len, lo, hi, super_left, sub_left, kernel.def.op)?;
    // No diagonal elements (an empty diagonal, all padding): the padding stands in for its binding.
    let diagonal = if diagonal.num_elements() == 0 { pad.clone() } else { diagonal };
    launch_diag(ctx.stream()?, p, &diagonal, &pad, &out)
}

/// MatrixDiagPart(input), MatrixDiagPartV2/V3(input, k, padding_value): the diagonals of each
/// matrix, padded to the longest.
pub fn matrix_diag_part(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let batched = ctx.input(0)?.shape.len() > 2;
    batch::split_batch_if(ctx, kernel, batched.then_some(&batch::INPUT_0_OUTPUT_0), matrix_diag_part_whole)
}

fn matrix_diag_part_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let first = kernel.def.op == "MatrixDiagPart";
    let (lo, hi) = if first { (0, 0) } else { diag_range(ctx, 1)? };
    let (rows, cols, diag_len, shape) = diagonals_of(&input, lo, hi)?;
    let pad = padding(ctx, (!first).then_some(2), input.dtype)?;
    let out = ctx.allocate_output(0, input.dtype, &shape)?;
    let (super_left, sub_left) = alignment(kernel)?;
    let p = diag_params(PART, rows, cols, hi - lo + 1, diag_len, lo, hi, super_left, sub_left, kernel.def.op)?;
    launch_diag(ctx.stream()?, p, &input, &pad, &out)
}

/// MatrixSetDiag(input, diagonal), MatrixSetDiagV2/V3(input, diagonal, k): the matrices with the
/// given diagonals replaced.
pub fn matrix_set_diag(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    const MATRICES_AND_DIAGONALS: BatchArgs =
        BatchArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    let batched = ctx.input(0)?.shape.len() > 2;
    batch::split_batch_if(ctx, kernel, batched.then_some(&MATRICES_AND_DIAGONALS), matrix_set_diag_whole)
}

fn matrix_set_diag_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let diagonal = ctx.input(1)?;
    let (lo, hi) = if kernel.def.op == "MatrixSetDiag" { (0, 0) } else { diag_range(ctx, 2)? };
    let (rows, cols, diag_len, want) = diagonals_of(&input, lo, hi)?;
    if diagonal.shape != want {
        return Err(Error::invalid_argument(format!(
            "diagonal must have shape {}, received shape: {}",
            shape_string(&want),
            shape_string(&diagonal.shape)
        )));
    }
    let out = ctx.forward_input_or_allocate_output(&[0], 0, input.dtype, &input.shape)?;
    let (super_left, sub_left) = alignment(kernel)?;
    let p = diag_params(SET, rows, cols, hi - lo + 1, diag_len, lo, hi, super_left, sub_left, kernel.def.op)?;
    launch_diag(ctx.stream()?, p, &diagonal, &input, &out)
}

/// Diag(diagonal): the tensor of shape `diagonal.shape * 2` with `diagonal` on its diagonal, a
/// MatrixDiag of the flattened values.
pub fn diag(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let diagonal = ctx.input(0)?;
    if diagonal.shape.is_empty() {
        return Err(Error::invalid_argument("Input must be at least rank 1, got 0"));
    }
    let shape: Vec<i64> = diagonal.shape.iter().chain(&diagonal.shape).copied().collect();
    validate::num_elements(&shape)?;
    let out = ctx.allocate_output(0, diagonal.dtype, &shape)?;
    let n = diagonal.num_elements() as i64;
    let zero = padding(ctx, None, diagonal.dtype)?;
    let p = diag_params(BUILD, n, n, 1, n, 0, 0, true, true, kernel.def.op)?;
    launch_diag(ctx.stream()?, p, &diagonal, &zero, &out)
}

/// DiagPart(input): the diagonal of a tensor of shape `s * 2`, of shape `s`.
pub fn diag_part(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    if rank == 0 || rank % 2 != 0 {
        return Err(Error::invalid_argument(format!(
            "The rank of the tensor should be even and positive, got shape {}",
            shape_string(&input.shape)
        )));
    }
    let half = rank / 2;
    if let Some(i) = (0..half).find(|&i| input.shape[i] != input.shape[i + half]) {
        return Err(Error::invalid_argument(format!(
            "Invalid shape {}: dimensions {i} and {} do not match.",
            shape_string(&input.shape),
            i + half
        )));
    }
    let out = ctx.allocate_output(0, input.dtype, &input.shape[..half])?;
    let n = out.num_elements() as i64;
    let zero = padding(ctx, None, input.dtype)?;
    let p = diag_params(PART, n, n, 1, n, 0, 0, true, true, kernel.def.op)?;
    launch_diag(ctx.stream()?, p, &input, &zero, &out)
}

#[allow(clippy::too_many_arguments)]
fn diag_params(
    mode: u32,
    rows: i64,
    cols: i64,
    num_diags: i64,
    diag_len: i64,
    lo: i64,
    hi: i64,
    super_left: bool,
    sub_left: bool,
    op: &str,
) -> Result<DiagParams> {
    let narrow =
        |v: i64| i32::try_from(v).map_err(|_| Error::invalid_argument(format!("{op}: index {v} out of range")));
    Ok(DiagParams {
        mode,
        rows: shader_len(rows.max(0) as u64, op)?,
        cols: shader_len(cols.max(0) as u64, op)?,
        num_diags: shader_len(num_diags.max(1) as u64, op)?,
        diag_len: shader_len(diag_len.max(1) as u64, op)?,
        lo: narrow(lo)?,
        hi: narrow(hi)?,
        super_left: u32::from(super_left),
        sub_left: u32::from(sub_left),
        ..DiagParams::default()
    })
}

/// Launches `diag.wgsl` over `out`; matrices past a binding (the output's in modes 0 and 2, the
/// input's in mode 1) in windows of their rows, one matrix too.
fn launch_diag(stream: &Stream, mut p: DiagParams, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    let matrices = if p.mode == PART { a } else { out };
    let limit = binding_limit(stream.device());
    let total_rows = shader_len(matrices.num_elements() / u64::from(p.cols.max(1)), "MatrixDiag")?;
    if out.num_elements() == 0 || matrices.byte_len() <= limit {
        p.window_rows = total_rows;
        return launch_diag_window(stream, p, a, b, out);
    }
    let row_bytes = u64::from(p.cols) * matrices.dtype.size();
    let per_window = (limit / row_bytes.max(1)).max(1) as u32;
    // The matrices as [total_rows, cols]: a window is a range of those rows.
    let rows = |t: &TensorRef, first: u32, count: u32| {
        let matrix_rows = TensorRef { shape: vec![i64::from(total_rows), i64::from(p.cols)], ..t.clone() };
        windows::rows(&matrix_rows, i64::from(first), i64::from(count))
    };
    let mut first = 0;
    while first < total_rows {
        let count = per_window.min(total_rows - first);
        (p.first_row, p.window_rows) = (first, count);
        match p.mode {
            PART => launch_diag_window(stream, p, &rows(a, first, count), b, out)?,
            SET => launch_diag_window(stream, p, a, &rows(b, first, count), &rows(out, first, count))?,
            _ => launch_diag_window(stream, p, a, b, &rows(out, first, count))?,
        }
        first += count;
    }
    Ok(())
}

fn launch_diag_window(stream: &Stream, mut p: DiagParams, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    p.n = shader_len(out.num_elements(), "MatrixDiag")?;
    p.unit = (out.dtype.size() / 4) as u32;
    let device = stream.device();
    let mems = [a, b, out]
        .iter()
        .map(|t| device.memory.resolve(t.address, t.byte_len().max(4)))
        .collect::<Result<Vec<_>>>()?;
    let pipeline =
        device.pipelines.get(device, &DIAG_SHADER, &PipelineSpec { entry: "main", aliases: &[], constants: &[] })?;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &mems[0], 4)?;
        let (b_bind, b_off) = storage_window(core, &mems[1], 4)?;
        let (out_bind, out_off) = storage_window(core, &mems[2], 4)?;
        (p.a_off, p.b_off, p.out_off) = (a_off, b_off, out_off);
        dispatch(
            core,
            encoder,
            "matrix_diag",
            &pipeline,
            &[a_bind, b_bind, out_bind],
            bytemuck::bytes_of(&p),
            u64::from(p.n),
        )
    })
}
