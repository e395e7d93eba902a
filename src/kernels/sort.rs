//! Comparisons within rows (`wgsl/sort.wgsl`): TopKV2 (sorted, ties by lower index),
//! InTopKV2 and InTopK, LowerBound and UpperBound (TF's searchsorted), and Bucketize, on the real
//! types (64-bit ones as two words).
//! Each launch is one pass over the rows; TopK ranks each element against its row, O(n * k) per
//! row, and sorts long rows instead (a bitonic network, O(n log^2 n)).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{
    check_loop_iterations, dispatch, loop_budget, loops_fit, storage_window, PipelineSpec, Shader,
};
use crate::runtime::Stream;

use super::batch::{self, BatchArgs};
use super::validate::{self, shape_string};
use super::windows::{binding_limit, elementwise_parts, rows};
use super::{cast, shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "sort",
    source: concat!(include_str!("../../wgsl/math.wgsl"), include_str!("../../wgsl/sort.wgsl")),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    n: u32,
    k: u32,
    m: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    idx_off: u32,
    target_words: u32,
    words: u32,
    stage: u32,
    step: u32,
    target_prediction: u32,
    window_of_row: u32,
    _pad: [u32; 2],
}

/// Encodes `entry` over `invocations`, binding `a`, `b`, `out` and `idx` (offsets in words).
fn launch(stream: &Stream, entry: &'static str, p: Params, tensors: [&TensorRef; 4], invocations: u64) -> Result<()> {
    launch_kind(stream, entry, p, tensors, invocations, 0)
}

/// `launch` with top_k's `KIND` (its element type).
fn launch_kind(
    stream: &Stream,
    entry: &'static str,
    mut p: Params,
    tensors: [&TensorRef; 4],
    invocations: u64,
    kind: u32,
) -> Result<()> {
    let device = stream.device();
    let mems =
        tensors.iter().map(|t| device.memory.resolve(t.address, t.byte_len().max(1))).collect::<Result<Vec<_>>>()?;
    let constants = [("KIND", f64::from(kind))];
    let pipeline =
        device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &[], constants: &constants })?;
    stream.encode(|core, encoder| {
        let mut binds = Vec::with_capacity(4);
        let mut offsets = [0u32; 4];
        for (k, mem) in mems.iter().enumerate() {
            let (bind, off) = storage_window(core, mem, 4)?;
            binds.push(bind);
            offsets[k] = off;
        }
        [p.a_off, p.b_off, p.out_off, p.idx_off] = offsets;
        dispatch(core, encoder, entry, &pipeline, &binds, bytemuck::bytes_of(&p), invocations)
    })
}

/// Output `index`, an int32 tensor written by a shader, or its int16/int64 cast after one.
fn int_output(ctx: &mut dyn KernelContext, index: usize, shape: &[i64]) -> Result<(TensorRef, Option<TensorRef>)> {
    let dtype = ctx.expected_output_dtype(index)?;
    let out = ctx.allocate_output(index, dtype, shape)?;
    if dtype == DType::I32 {
        return Ok((out, None));
    }
    let temp = ctx.allocate_temp(DType::I32, shape)?;
    Ok((temp, Some(out)))
}

fn finish_int_output(ctx: &mut dyn KernelContext, written: &TensorRef, cast_to: Option<TensorRef>) -> Result<()> {
    match cast_to {
        Some(out) => cast_into(ctx, written, &out),
        None => Ok(()),
    }
}

/// `out` = `from` cast to `out`'s type. Packed 8- and 16-bit outputs are written a word at a time:
/// one that starts mid-word (a later range of a split batch) is cast into a temporary, then copied.
fn cast_into(ctx: &mut dyn KernelContext, from: &TensorRef, out: &TensorRef) -> Result<()> {
    if out.dtype.size() < 4 && !out.address.is_multiple_of(4) {
        let aligned = ctx.allocate_temp(out.dtype, &out.shape)?;
        let stream = ctx.stream()?;
        cast::launch(stream, from, &aligned)?;
        return stream.memcpy_dtod(out.address, aligned.address, out.byte_len());
    }
    cast::launch(ctx.stream()?, from, out)
}

/// The element types `key_kind` orders: TopKV2's and the searches' registrations.
pub const KEYED_TYPES: [DType; 10] = [
    DType::F32,
    DType::F64,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
];

/// `dtype`'s element kind in `sort.wgsl`'s total orders (its `KIND`) and words per element; 8- and
/// 16-bit integers compare as their 32-bit widening (the type to widen them to).
fn key_kind(dtype: DType, op: &str) -> Result<(u32, u32, Option<DType>)> {
    Ok(match dtype {
        DType::F32 => (0, 1, None),
        DType::F64 => (3, 2, None),
        DType::I32 => (1, 1, None),
        DType::U32 => (2, 1, None),
        DType::I64 => (1, 2, None),
        DType::U64 => (2, 2, None),
        DType::I8 | DType::I16 => (1, 1, Some(DType::I32)),
        DType::U8 | DType::U16 => (2, 1, Some(DType::U32)),
        other => return Err(Error::internal(format!("{op} of {other:?}"))),
    })
}

/// `t` cast to `dtype`, in a temporary.
fn widened(ctx: &mut dyn KernelContext, t: &TensorRef, dtype: DType) -> Result<TensorRef> {
    let wide = ctx.allocate_temp(dtype, &t.shape)?;
    cast::launch(ctx.stream()?, t, &wide)?;
    Ok(wide)
}

/// TopKV2(input, k): the k largest values of each last-axis row and their indices, sorted (also
/// for `sorted=False`, whose order TF leaves open).
pub fn top_k(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // Past a binding, a range of the leading rows at a time.
    const ROWS: BatchArgs = BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0, 1], summed_outputs: &[] };
    let rows = ctx.input(0)?.shape.len() >= 2;
    batch::split_batch_if(ctx, kernel, rows.then_some(&ROWS), top_k_whole)
}

fn top_k_whole(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (k, k_shape) = ctx.host_input_values(1)?;
    if !k_shape.is_empty() {
        return Err(Error::invalid_argument(format!("k must be 0-D, got shape {}", shape_string(&k_shape))));
    }
    let k = k[0];
    if k < 0 {
        return Err(Error::invalid_argument(format!("Need k >= 0, got {k}")));
    }
    let Some(&n) = input.shape.last() else {
        return Err(Error::invalid_argument(format!("input must be >= 1-D, got shape {}", shape_string(&input.shape))));
    };
    if n < k {
        return Err(Error::invalid_argument(format!("input must have at least k columns. Had {n}, needed {k}")));
    }
    let mut shape = input.shape.clone();
    *shape.last_mut().unwrap_or(&mut 0) = k;
    let values = ctx.allocate_output(0, input.dtype, &shape)?;
    let (indices, cast_to) = int_output(ctx, 1, &shape)?;
    if values.num_elements() == 0 {
        return Ok(());
    }
    let rows = shader_len(input.num_elements() / n as u64, "TopKV2")?;
    let (kind, words, wide) = key_kind(input.dtype, "TopKV2")?;
    let (input, values_wide) = match wide {
        Some(wide) => (widened(ctx, &input, wide)?, Some(ctx.allocate_temp(wide, &values.shape)?)),
        None => (input, None),
    };
    let p = Params { rows, n: shader_len(n as u64, "TopKV2")?, k: k as u32, words, ..Params::default() };
    let target = values_wide.as_ref().unwrap_or(&values);
    top_k_rows(ctx, p, kind, &input, target, &indices)?;
    if let Some(values_wide) = &values_wide {
        cast_into(ctx, values_wide, &values)?;
    }
    finish_int_output(ctx, &indices, cast_to)
}

/// The comparisons per row (n * k) past which TopKV2 sorts the row rather than rank each element
/// against it.
const RANK_WORK: u64 = 1 << 22;

/// The top `p.k` of each of `p.rows` rows of `p.n` elements of `input` into `values` and `indices`.
fn top_k_rows(
    ctx: &mut dyn KernelContext,
    p: Params,
    kind: u32,
    input: &TensorRef,
    values: &TensorRef,
    indices: &TensorRef,
) -> Result<()> {
    let (n, k) = (u64::from(p.n), u64::from(p.k));
    let limit = binding_limit(ctx.stream()?.device());
    if n * input.dtype.size() > limit {
        return top_k_of_long_rows(ctx, p, kind, input, values, indices, longest_sorted_row(limit));
    }
    // Each element's rank is a loop over its row, until k greater ones: long rows sort instead.
    if !loops_fit(ctx.stream()?.device(), n) || n * k > RANK_WORK {
        return top_k_by_sorting(ctx, p, kind, input, values, indices);
    }
    launch_kind(ctx.stream()?, "top_k", p, [input, input, values, indices], u64::from(p.rows) * n, kind)
}

/// The pieces of a long row that `top_k_of_long_rows` ranks where k is at most
/// `RANKED_PIECE_K_MAX`: their candidates are then at most a sixteenth of the row.
const RANKED_PIECE: u64 = 4096;
const RANKED_PIECE_K_MAX: u64 = 256;

/// The longest row `top_k_by_sorting` sorts within a binding of `limit` bytes: its scratch holds
/// three words per element, padded to a power of two.
fn longest_sorted_row(limit: u64) -> u64 {
    1 << (limit / 12).max(2).ilog2()
}

/// `count` elements of `t` from element `first` on, as a vector.
fn elements(t: &TensorRef, first: u64, count: u64) -> TensorRef {
    rows(&TensorRef { shape: vec![t.num_elements() as i64], ..t.clone() }, first as i64, count as i64)
}

/// TopKV2 of rows too long to sort whole (a row, or its sorting scratch, past a binding), one row
/// at a time: the row's pieces of at most `longest` elements give their top k each, then the top k of
/// those candidates (piece after piece, each in TopK's order) are the row's, their positions mapped
/// back to the row (`top_k_row_indices`). Equal values keep TF's order, the lower index first: the
/// candidates' order is the row's among equal values. Where k passes the shortest piece or the
/// candidates pass a sort (`tf.sort` of a long vector is TopKV2 with k = n), the rows are ranked
/// on the host instead (`top_k_on_host`).
fn top_k_of_long_rows(
    ctx: &mut dyn KernelContext,
    p: Params,
    kind: u32,
    input: &TensorRef,
    values: &TensorRef,
    indices: &TensorRef,
    longest: u64,
) -> Result<()> {
    let (n, k) = (u64::from(p.n), u64::from(p.k));
    let limit = binding_limit(ctx.stream()?.device());
    // A small k ranks pieces of RANKED_PIECE elements (each element's rank loop stops after k
    // greater ones): a 9M-element row with k = 10 took 50 s in two sorted pieces.
    let piece_max = if k <= RANKED_PIECE_K_MAX { longest.min(RANKED_PIECE) } else { longest };
    let piece = n.div_ceil(n.div_ceil(piece_max));
    // A last piece shorter than k joins the one before it (its sort then splits it again if it
    // must): every piece gives k candidates.
    let mut pieces = n.div_ceil(piece);
    if pieces > 1 && n - (pieces - 1) * piece < k {
        pieces -= 1;
    }
    let last = n - (pieces - 1) * piece;
    let candidates = pieces * k;
    if k > piece.min(last) || candidates.next_power_of_two() > longest {
        return top_k_on_host(ctx, p, kind, input, values, indices);
    }
    let candidate_values = ctx.allocate_temp(values.dtype, &[candidates as i64])?;
    let candidate_indices = ctx.allocate_temp(DType::I32, &[candidates as i64])?;
    // Whole pieces go as the rows of [group, piece] matrices that fit a binding, the last alone.
    let group = (limit / (piece * input.dtype.size())).max(1);
    let mut rounds: Vec<(u64, u64, u64)> =
        (0..pieces - 1).step_by(group as usize).map(|j| (j, group.min(pieces - 1 - j), piece)).collect();
    rounds.push((pieces - 1, 1, last));
    for row in 0..u64::from(p.rows) {
        for &(j, rows, len) in &rounds {
            let q = Params { rows: rows as u32, n: len as u32, ..p };
            top_k_rows(
                ctx,
                q,
                kind,
                &elements(input, row * n + j * piece, rows * len),
                &elements(&candidate_values, j * k, rows * k),
                &elements(&candidate_indices, j * k, rows * k),
            )?;
        }
        let row_values = elements(values, row * k, k);
        let row_indices = elements(indices, row * k, k);
        let q = Params { rows: 1, n: candidates as u32, ..p };
        top_k_rows(ctx, q, kind, &candidate_values, &row_values, &row_indices)?;
        let q = Params { rows: 1, step: piece as u32, ..p };
        let tensors = [&row_indices, &candidate_indices, &row_indices, &row_indices];
        launch(ctx.stream()?, "top_k_row_indices", q, tensors, k)?;
    }
    Ok(())
}

/// An element's key in `sort.wgsl`'s total order for `kind` (its `element_key`): greater keys
/// first, -0 equal to +0, NaN past the infinities in its sign's order. `bits` holds the element's
/// `words` 32-bit words, low word first.
fn host_order_key(bits: u64, kind: u32, words: u32) -> u64 {
    let wide = words == 2;
    let sign: u64 = if wide { 1 << 63 } else { 1 << 31 };
    let key = match kind {
        // float32 and float64: zeros as +0, negative values below the positive ones, reversed.
        0 | 3 if bits & !sign == 0 => sign,
        0 | 3 if bits & sign != 0 => !bits & if wide { u64::MAX } else { u64::from(u32::MAX) },
        0 | 3 => bits | sign,
        1 => bits ^ sign,
        _ => bits,
    };
    if wide {
        key
    } else {
        key << 32
    }
}

/// TopKV2 of rows whose top k the device cannot sort within a binding, ranked on the host: each
/// row is read back, its top k chosen in TF's order (greater first, ties by lower index), and the
/// values and int32 indices written back. One sync per row.
fn top_k_on_host(
    ctx: &mut dyn KernelContext,
    p: Params,
    kind: u32,
    input: &TensorRef,
    values: &TensorRef,
    indices: &TensorRef,
) -> Result<()> {
    let (n, k) = (u64::from(p.n), u64::from(p.k));
    let size = input.dtype.size();
    let stream = ctx.stream()?;
    for row in 0..u64::from(p.rows) {
        let bytes = stream.read_now(input.address + row * n * size, n * size)?;
        let element = |i: u32| {
            let at = i as usize * size as usize;
            let mut word = [0u8; 8];
            word[..size as usize].copy_from_slice(&bytes[at..at + size as usize]);
            u64::from_le_bytes(word)
        };
        // Sorting (key descending, index ascending) pairs puts the row in TopK's order.
        let mut order: Vec<(u64, u32)> =
            (0..n as u32).map(|i| (!host_order_key(element(i), kind, p.words), i)).collect();
        if k < n {
            order.select_nth_unstable(k as usize);
            order.truncate(k as usize);
        }
        order.sort_unstable();
        let top_values: Vec<u8> = order
            .iter()
            .flat_map(|&(_, i)| {
                let at = i as usize * size as usize;
                bytes[at..at + size as usize].iter().copied()
            })
            .collect();
        let top_indices: Vec<u8> = order.iter().flat_map(|&(_, i)| i.to_le_bytes()).collect();
        stream.memcpy_htod(values.address + row * k * size, &top_values)?;
        stream.memcpy_htod(indices.address + row * k * 4, &top_indices)?;
    }
    Ok(())
}

/// TopKV2 of `p.rows` rows of `p.n` elements by sorting them (bitonic network): groups of rows
/// whose scratch (three words per padded element) fits a binding, each sorted whole, then the first
/// `p.k` of each row taken into `values` and `indices`.
fn top_k_by_sorting(
    ctx: &mut dyn KernelContext,
    mut p: Params,
    kind: u32,
    input: &TensorRef,
    values: &TensorRef,
    indices: &TensorRef,
) -> Result<()> {
    let padded = u64::from(p.n).next_power_of_two().max(2);
    let row_scratch = 3 * padded * 4;
    let limit = binding_limit(ctx.stream()?.device());
    if row_scratch > limit {
        return top_k_of_long_rows(ctx, p, kind, input, values, indices, longest_sorted_row(limit));
    }
    let group = (limit / row_scratch).min(u64::from(p.rows));
    let scratch = ctx.allocate_temp(DType::U32, &[(3 * padded * group) as i64])?;
    let stream = ctx.stream()?;
    let (n, k, total_rows) = (u64::from(p.n), u64::from(p.k), u64::from(p.rows));
    let part = |t: &TensorRef, first: u64, count: u64, row: u64| elements(t, first * row, count * row);
    p.m = padded as u32;
    let mut first = 0;
    while first < total_rows {
        let rows = group.min(total_rows - first);
        p.rows = rows as u32;
        let input = part(input, first, rows, n);
        let tensors = [&input, &scratch, &part(values, first, rows, k), &part(indices, first, rows, k)];
        launch_kind(stream, "top_k_keys", p, tensors, rows * padded, kind)?;
        let mut stage = 2;
        while stage <= padded {
            let mut step = stage / 2;
            while step > 0 {
                (p.stage, p.step) = (stage as u32, step as u32);
                launch_kind(stream, "top_k_merge", p, tensors, rows * padded / 2, kind)?;
                step /= 2;
            }
            stage *= 2;
        }
        launch_kind(stream, "top_k_take", p, tensors, rows * k, kind)?;
        first += rows;
    }
    Ok(())
}

/// InTopKV2(predictions, targets, k) and InTopK(predictions, targets; k): whether each row's
/// target class is among its k most probable, as TF-CPU decides it.
pub fn in_top_k(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // Past a binding, a range of the batch (predictions' rows and their targets) at a time.
    const BATCH: BatchArgs = BatchArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    batch::split_batch_on_overflow(ctx, kernel, &BATCH, in_top_k_whole)
}

fn in_top_k_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let predictions = ctx.input(0)?;
    let targets = ctx.input(1)?;
    let k = if kernel.def.op == "InTopK" {
        kernel.attrs.int("k")?
    } else {
        let (k, k_shape) = ctx.host_input_values(2)?;
        if !k_shape.is_empty() {
            return Err(Error::invalid_argument(format!("k must be 0-D, got shape {}", shape_string(&k_shape))));
        }
        k[0]
    };
    if predictions.shape.len() != 2 {
        return Err(Error::invalid_argument(format!(
            "predictions must be 2-dimensional, got {}",
            shape_string(&predictions.shape)
        )));
    }
    if targets.shape.len() != 1 {
        return Err(Error::invalid_argument(format!(
            "targets must be 1-dimensional, got {}",
            shape_string(&targets.shape)
        )));
    }
    if predictions.shape[0] != targets.shape[0] {
        return Err(Error::invalid_argument(format!(
            "First dimension of predictions {} must match length of targets {}",
            predictions.shape[0], targets.shape[0]
        )));
    }
    let out = ctx.allocate_output(0, DType::Bool, &targets.shape)?;
    let rows = shader_len(targets.shape[0] as u64, "InTopKV2")?;
    if rows == 0 {
        return Ok(());
    }
    // The shader writes four results a word: a later range of the batch that starts mid-word
    // writes a temporary, copied into place.
    if !out.address.is_multiple_of(4) {
        let aligned = ctx.allocate_temp(DType::Bool, &targets.shape)?;
        in_top_k_into(ctx, kernel, k, (predictions, targets), &aligned)?;
        return ctx.stream()?.memcpy_dtod(out.address, aligned.address, out.byte_len());
    }
    in_top_k_into(ctx, kernel, k, (predictions, targets), &out)
}

/// InTopK's results into `out`, which starts on a word.
fn in_top_k_into(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    k: i64,
    (predictions, targets): (TensorRef, TensorRef),
    out: &TensorRef,
) -> Result<()> {
    let rows = shader_len(targets.shape[0] as u64, "InTopKV2")?;
    let limit = binding_limit(ctx.stream()?.device());
    if predictions.shape[0] == 1 && predictions.byte_len() > limit {
        // One row past a binding (where more rows pass it, the batch splits into ranges first).
        return in_top_k_long_row(ctx, &predictions, &targets, k, out, limit);
    }
    let classes = shader_len(predictions.shape[1] as u64, "InTopKV2")?;
    // No classes: every target is out of range; the shader still needs a predictions binding.
    let predictions = if classes == 0 { ctx.allocate_temp(DType::F32, &[1])? } else { predictions };
    // Counts in chunks of a row, whose sums loop over a row's chunks (four rows to an invocation).
    let budget = loop_budget(ctx.stream()?.device(), 0);
    let chunk = IN_TOP_K_CHUNK.min(budget);
    let chunks = u64::from(classes).div_ceil(chunk).max(1);
    check_loop_iterations(ctx.stream()?.device(), 4 * chunks, kernel.def.op)?;
    let counts = ctx.allocate_temp(DType::U32, &[(u64::from(rows) * chunks) as i64])?;
    let p = Params {
        rows,
        n: classes,
        k: (k.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32) as u32,
        m: chunks as u32,
        step: chunk as u32,
        target_words: (targets.dtype.size() / 4) as u32,
        ..Params::default()
    };
    let stream = ctx.stream()?;
    let tensors = [&predictions, &targets, &counts, out];
    launch(stream, "in_top_k_count", p, tensors, u64::from(rows) * chunks)?;
    launch(stream, "in_top_k", p, tensors, u64::from(rows.div_ceil(4)))
}

/// InTopK of one row past a binding: the host reads the target and its prediction (TF-CPU's
/// checks: a target in range, a finite prediction), then the row's windows count their greater
/// predictions in chunks, and one pass adds up the chunks.
fn in_top_k_long_row(
    ctx: &mut dyn KernelContext,
    predictions: &TensorRef,
    targets: &TensorRef,
    k: i64,
    out: &TensorRef,
    limit: u64,
) -> Result<()> {
    let classes = predictions.shape[1] as u64;
    let stream = ctx.stream()?;
    let target_bytes = stream.read_now(targets.address, targets.dtype.size())?;
    let target = match target_bytes[..] {
        [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => return Err(Error::internal("InTopK: targets of neither 4 nor 8 bytes")),
    };
    let prediction = if (0..classes as i64).contains(&target) {
        let bytes = stream.read_now(predictions.address + 4 * target as u64, 4)?;
        Some(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])).filter(|v| v.is_finite())
    } else {
        None
    };
    let Some(prediction) = prediction else {
        // Out of range or not finite: false, as TF-CPU answers.
        return stream.fill(out.address, out.byte_len(), 0);
    };
    let chunk = IN_TOP_K_CHUNK.min(loop_budget(stream.device(), 0)).min(limit / 4);
    let window = (limit / 4 / chunk).max(1) * chunk;
    let chunks = classes.div_ceil(chunk);
    check_loop_iterations(stream.device(), 4 * chunks, "InTopKV2")?;
    let counts = ctx.allocate_temp(DType::U32, &[chunks as i64])?;
    let stream = ctx.stream()?;
    let p = Params {
        rows: 1,
        k: (k.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32) as u32,
        step: chunk as u32,
        target_prediction: prediction.to_bits(),
        window_of_row: 1,
        ..Params::default()
    };
    let mut first = 0;
    while first < classes {
        let len = window.min(classes - first);
        let part =
            TensorRef { address: predictions.address + 4 * first, dtype: predictions.dtype, shape: vec![len as i64] };
        let part_counts = TensorRef {
            address: counts.address + 4 * (first / chunk),
            dtype: DType::U32,
            shape: vec![len.div_ceil(chunk) as i64],
        };
        let window_params = Params { n: len as u32, m: len.div_ceil(chunk) as u32, ..p };
        launch(stream, "in_top_k_count", window_params, [&part, targets, &part_counts, out], len.div_ceil(chunk))?;
        first += len;
    }
    // The predictions are not read again (`counts` stands in for them).
    launch(stream, "in_top_k", Params { m: chunks as u32, window_of_row: 0, ..p }, [&counts, targets, &counts, out], 1)
}

/// The classes one invocation of InTopK's count compares with a row's target.
const IN_TOP_K_CHUNK: u64 = 4096;

/// LowerBound(sorted_inputs, values) and UpperBound: for each value, the first index of its row of
/// `sorted_inputs` whose element is not less than it (greater than it, for UpperBound).
pub fn search_sorted(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let sorted = ctx.input(0)?;
    let values = ctx.input(1)?;
    if sorted.shape.len() != 2 || values.shape.len() != 2 {
        return Err(Error::invalid_argument(format!(
            "sorted_inputs and values must be matrices, got {} and {}",
            shape_string(&sorted.shape),
            shape_string(&values.shape)
        )));
    }
    if sorted.shape[0] != values.shape[0] {
        return Err(Error::invalid_argument("Leading dim_size of both tensors must match."));
    }
    let (out, cast_to) = int_output(ctx, 0, &values.shape)?;
    if values.num_elements() == 0 {
        return Ok(());
    }
    let entry = if kernel.def.op == "LowerBound" { "lower_bound" } else { "upper_bound" };
    let row_length = shader_len(sorted.shape[1] as u64, kernel.def.op)?;
    let (kind, words, wide) = key_kind(values.dtype, kernel.def.op)?;
    let (sorted, values) = match wide {
        Some(wide) => (widened(ctx, &sorted, wide)?, widened(ctx, &values, wide)?),
        None => (sorted, values),
    };
    // An empty row: every value's bound is 0; the shader still needs a binding to search.
    let sorted = if sorted.num_elements() == 0 { ctx.allocate_temp(sorted.dtype, &[1])? } else { sorted };
    let p = Params {
        rows: shader_len(values.shape[0] as u64, kernel.def.op)?,
        n: row_length,
        m: shader_len(values.shape[1] as u64, kernel.def.op)?,
        words,
        ..Params::default()
    };
    launch_kind(ctx.stream()?, entry, p, [&sorted, &values, &out, &out], values.num_elements(), kind)?;
    finish_int_output(ctx, &out, cast_to)
}

/// Bucketize(input; boundaries): the number of boundaries at or below each value (int32), the
/// boundaries uploaded as one row to search.
pub fn bucketize(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let boundaries = kernel.attrs.floats("boundaries")?;
    // std::is_sorted, as TF checks: only a boundary below the one before it fails (NaN passes).
    if boundaries.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::invalid_argument("Expected sorted boundaries"));
    }
    let out = ctx.allocate_output(0, DType::I32, &input.shape)?;
    if input.num_elements() == 0 {
        return Ok(());
    }
    validate::num_elements(&input.shape)?;
    shader_len(input.num_elements(), "Bucketize")?;
    // TF compares `value < boundary` in C++: a float64 value with the boundary widened to double,
    // an integer converted to float (so it is cast to float32 here).
    let (input, kind, words) = match input.dtype {
        DType::F64 => (input, 3, 2),
        DType::F32 => (input, 0, 1),
        _ => (widened(ctx, &input, DType::F32)?, 0, 1),
    };
    let row = ctx.allocate_temp(input.dtype, &[boundaries.len().max(1) as i64])?;
    let stream = ctx.stream()?;
    if kind == 3 {
        let wide: Vec<f64> = boundaries.iter().map(|&b| f64::from(b)).collect();
        stream.memcpy_htod(row.address, bytemuck::cast_slice(&wide))?;
    } else {
        stream.memcpy_htod(row.address, bytemuck::cast_slice(&boundaries))?;
    }
    // Elementwise: ranges of the values where they pass a binding.
    let parts = match elementwise_parts(stream.device(), &out, &[&input])? {
        Some(parts) => parts.into_iter().map(|part| (part.operands[0].clone(), part.out)).collect(),
        None => vec![(input, out)],
    };
    for (values, buckets) in parts {
        let p = Params {
            rows: 0,
            n: shader_len(boundaries.len() as u64, "Bucketize")?,
            m: shader_len(values.num_elements(), "Bucketize")?,
            words,
            ..Params::default()
        };
        launch_kind(stream, "upper_bound", p, [&row, &values, &buckets, &buckets], values.num_elements(), kind)?;
    }
    Ok(())
}
