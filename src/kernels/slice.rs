//! Slice, StridedSlice, Split and SplitV: strided copies (`wgsl/strided.wgsl`) of any dtype.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::batch;
use super::index::{DimMap, DimMode};
use super::windows::{self, binding_limit};
use super::{validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "strided",
    source: include_str!("../../wgsl/strided.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

const MAX_RANK: usize = 8;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    rank: u32,
    base: i32,
    unit: u32,
    src_off: u32,
    dst_off: u32,
    _pad: [u32; 2],
    shape: [u32; MAX_RANK],
    strides: [i32; MAX_RANK],
}

/// A strided view of a tensor, in elements: `view[idx] = tensor[base + sum(idx_d * strides_d)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedView {
    pub base: i64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
}

/// Row-major element strides of `shape`.
pub fn contiguous_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Copies the view of `input` into `out` (contiguous, `view.shape` elements).
pub fn launch(stream: &Stream, input: &TensorRef, view: &StridedView, out: &TensorRef) -> Result<()> {
    copy_view(stream, input, view, out, false)
}

/// The inverse of `launch`: writes `contiguous` (`view.shape` elements) into the view of `strided`,
/// leaving the rest of `strided` as it is. Elements of whole 32-bit words only (a view never maps
/// two elements to one place, so the writes do not race; smaller elements would share words).
pub fn launch_scatter(stream: &Stream, contiguous: &TensorRef, view: &StridedView, strided: &TensorRef) -> Result<()> {
    if !strided.dtype.size().is_multiple_of(4) {
        return Err(Error::internal(format!("strided scatter of {:?} elements", strided.dtype)));
    }
    copy_view(stream, strided, view, contiguous, true)
}

/// `launch` (`scatter` false) or `launch_scatter` (true), with `input` the strided tensor.
fn copy_view(stream: &Stream, input: &TensorRef, view: &StridedView, out: &TensorRef, scatter: bool) -> Result<()> {
    let count: i64 = view.shape.iter().product();
    if count == 0 {
        return Ok(());
    }
    let limit = binding_limit(stream.device());
    if input.byte_len() > limit || out.byte_len() > limit {
        let mut parts = Vec::new();
        split_view(limit, input, view.clone(), out.clone(), &mut parts)?;
        return parts.iter().try_for_each(|(input, view, out)| copy_view_within(stream, input, view, out, scatter));
    }
    copy_view_within(stream, input, view, out, scatter)
}

/// Most parts one strided copy splits into (each a dispatch) before it refuses the work.
const MAX_VIEW_PARTS: usize = 4096;

/// The lowest and highest element of the strided tensor a view reads.
fn view_span(view: &StridedView) -> (i64, i64) {
    view.shape.iter().zip(&view.strides).fold((view.base, view.base), |(lo, hi), (&n, &s)| {
        let reach = (n - 1).max(0) * s;
        (lo + reach.min(0), hi + reach.max(0))
    })
}

/// Splits a strided copy over tensors larger than a storage binding into parts that fit: ranges
/// of the view's leading dimension, each with the window of `strided` it reads, or one row at a
/// time where a single row is too big.
fn split_view(
    limit: u64,
    strided: &TensorRef,
    view: StridedView,
    contiguous: TensorRef,
    parts: &mut Vec<(TensorRef, StridedView, TensorRef)>,
) -> Result<()> {
    let size = strided.dtype.size();
    let (lo, hi) = view_span(&view);
    let window = (hi - lo + 1) as u64 * size;
    if window <= limit && contiguous.byte_len() <= limit {
        let rebased =
            TensorRef { address: strided.address + lo as u64 * size, dtype: strided.dtype, shape: vec![hi - lo + 1] };
        parts.push((rebased, StridedView { base: view.base - lo, ..view }, contiguous));
        return Ok(());
    }
    if view.shape.is_empty() || parts.len() >= MAX_VIEW_PARTS {
        return Err(Error::unimplemented(format!(
            "strided copy of {:?}: its parts would exceed the {limit}-byte storage binding or number more than \
             {MAX_VIEW_PARTS}",
            contiguous.shape
        )));
    }
    let (rows, step) = (view.shape[0], view.strides[0]);
    let row_view =
        StridedView { base: view.base, shape: view.shape[1..].to_vec(), strides: view.strides[1..].to_vec() };
    let (row_lo, row_hi) = view_span(&row_view);
    let row_reach = (row_hi - row_lo + 1) as u64;
    let row_bytes = contiguous.byte_len() / rows.max(1) as u64;
    // Rows per part: the output's part and the window of `strided` (each row one `step` further).
    let by_window = match step.unsigned_abs() {
        _ if row_reach * size > limit => 0,
        0 => u64::MAX,
        step => (limit / size - row_reach) / step + 1,
    };
    let per_part = (limit / row_bytes.max(1)).min(by_window) as i64;
    let part_of = |start: i64, count: i64| {
        let view = StridedView {
            base: view.base + start * step,
            shape: [&[count], &view.shape[1..]].concat(),
            strides: view.strides.clone(),
        };
        let out = TensorRef {
            address: contiguous.address + start as u64 * row_bytes,
            dtype: contiguous.dtype,
            shape: vec![count * (row_bytes / size) as i64],
        };
        (view, out)
    };
    if per_part >= 1 && rows > 1 {
        let mut start = 0;
        while start < rows {
            let count = per_part.min(rows - start);
            let (view, out) = part_of(start, count);
            split_view(limit, strided, view, out, parts)?;
            start += count;
        }
        return Ok(());
    }
    for row in 0..rows {
        let (mut view, out) = part_of(row, 1);
        view.shape.remove(0);
        view.strides.remove(0);
        split_view(limit, strided, view, out, parts)?;
    }
    Ok(())
}

/// `copy_view` of tensors that fit a storage binding.
fn copy_view_within(
    stream: &Stream,
    input: &TensorRef,
    view: &StridedView,
    out: &TensorRef,
    scatter: bool,
) -> Result<()> {
    let count: i64 = view.shape.iter().product();
    // Merge dimensions that are contiguous with each other, so most copies are rank 1 or 2.
    let (mut shape, mut strides): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for (&d, &s) in view.shape.iter().zip(&view.strides) {
        if d == 1 {
            continue;
        }
        match (shape.last_mut(), strides.last_mut()) {
            (Some(ld), Some(ls)) if *ls == s * d => {
                *ld *= d;
                *ls = s;
            }
            _ => {
                shape.push(d);
                strides.push(s);
            }
        }
    }
    if shape.len() > MAX_RANK {
        return Err(Error::unimplemented(format!("strided copies beyond rank {MAX_RANK} are not supported")));
    }
    let too_big = |v: i64| i32::try_from(v).is_err();
    if too_big(count) || too_big(input.num_elements() as i64) {
        return Err(Error::unimplemented("strided copy of more than 2^31 elements"));
    }
    let size = input.dtype.size();
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let whole_words = size.is_multiple_of(4);
    let entry = match (scatter, whole_words) {
        (true, _) => "scatter_words",
        (false, true) => "copy_words",
        (false, false) => "copy_bytes",
    };
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, ..Default::default() })?;
    let unit = if whole_words { size / 4 } else { size };
    // 16-byte elements under 2^31 can still pass 2^32 words.
    let n = super::shader_len(count as u64 * unit, "strided copy")?;
    stream.encode(|core, encoder| {
        let unit_bytes = if whole_words { 4 } else { 1 };
        let (in_bind, src_off) = storage_window(core, &in_mem, unit_bytes)?;
        let (out_bind, dst_off) = storage_window(core, &out_mem, unit_bytes)?;
        let n = n as u64;
        let mut params = Params {
            n: n as u32,
            rank: shape.len() as u32,
            base: view.base as i32,
            unit: unit as u32,
            src_off,
            dst_off,
            _pad: [0; 2],
            shape: [1; MAX_RANK],
            strides: [0; MAX_RANK],
        };
        for (i, (&d, &s)) in shape.iter().zip(&strides).enumerate() {
            params.shape[i] = d as u32;
            params.strides[i] = s as i32;
        }
        let invocations = if whole_words { n } else { (dst_off as u64 + n).div_ceil(4) - dst_off as u64 / 4 };
        dispatch(core, encoder, entry, &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&params), invocations)
    })
}

/// TF's StridedSlice semantics: the strided view of `input_shape` and the op's output shape.
pub fn strided_slice_view(
    input_shape: &[i64],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: [i64; 5],
) -> Result<(StridedView, Vec<i64>)> {
    // The mask attributes are int32 in TF's kernels, which refuse wider values at construction.
    let names = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"];
    if let Some((name, value)) = names.iter().zip(masks).find(|(_, m)| i32::try_from(*m).is_err()) {
        return Err(Error::invalid_argument(format!("Attr {name} has value {value} out of range for an int32")));
    }
    let [begin_mask, end_mask, mut ellipsis_mask, new_axis_mask, shrink_axis_mask] = masks;
    let bit = |mask: i64, i: usize| mask & (1 << i) != 0;
    // The masks are 32-bit in TF; more entries than bits would shift them away.
    if begin.len() != end.len() || begin.len() != strides.len() || begin.len() > 32 {
        return Err(Error::invalid_argument(format!(
            "Expected begin, end, and strides to be 1D equal size tensors of at most 32 entries, but got {}, {} and {}",
            begin.len(),
            end.len(),
            strides.len()
        )));
    }
    if ellipsis_mask.count_ones() > 1 {
        return Err(Error::invalid_argument("Multiple ellipses in slice spec not allowed"));
    }
    let mut sparse_dims = begin.len();
    if ellipsis_mask == 0 {
        ellipsis_mask = 1 << sparse_dims;
        sparse_dims += 1;
    }
    let ellipsis_at = ellipsis_mask.trailing_zeros() as usize;
    let new_axis_after_ellipsis = (ellipsis_at + 1..sparse_dims).filter(|&i| bit(new_axis_mask, i)).count();
    let rank = input_shape.len();

    // Dense spec: one entry per input dimension.
    struct Dense {
        begin: i64,
        end: i64,
        stride: i64,
        begin_masked: bool,
        end_masked: bool,
        shrink: bool,
    }
    let mut dense: Vec<Dense> = Vec::with_capacity(rank);
    // Output dims: Some(dense index) or None for a new axis.
    let mut gather: Vec<Option<usize>> = Vec::new();
    for i in 0..sparse_dims {
        if bit(ellipsis_mask, i) {
            let next = (rank + 1 + new_axis_after_ellipsis).saturating_sub(sparse_dims - i).min(rank);
            while dense.len() < next {
                gather.push(Some(dense.len()));
                dense.push(Dense { begin: 0, end: 0, stride: 1, begin_masked: true, end_masked: true, shrink: false });
            }
        } else if bit(new_axis_mask, i) {
            gather.push(None);
        } else {
            if dense.len() >= rank {
                return Err(Error::invalid_argument(format!(
                    "Index out of range using input dim {}; input has only {rank} dims",
                    dense.len()
                )));
            }
            let shrink = bit(shrink_axis_mask, i);
            if !shrink {
                gather.push(Some(dense.len()));
            }
            dense.push(Dense {
                begin: begin[i],
                end: end[i],
                stride: strides[i],
                begin_masked: bit(begin_mask, i),
                end_masked: bit(end_mask, i),
                shrink,
            });
        }
    }
    while dense.len() < rank {
        gather.push(Some(dense.len()));
        dense.push(Dense { begin: 0, end: 0, stride: 1, begin_masked: true, end_masked: true, shrink: false });
    }

    let input_strides = contiguous_strides(input_shape);
    let mut view = StridedView { base: 0, shape: Vec::with_capacity(rank), strides: Vec::with_capacity(rank) };
    for (d, spec) in dense.iter().enumerate() {
        let dim = input_shape[d];
        let stride = spec.stride;
        if stride == 0 {
            return Err(Error::invalid_argument(format!("strides[{d}] must be non-zero")));
        }
        let (first, size) = if spec.shrink {
            if stride < 0 {
                return Err(Error::invalid_argument("only stride 1 allowed on non-range indexing."));
            }
            let at = if spec.begin < 0 { dim + spec.begin } else { spec.begin };
            if at < 0 || at >= dim {
                return Err(Error::invalid_argument(format!(
                    "slice index {} of dimension {d} out of bounds.",
                    spec.begin
                )));
            }
            (at, 1)
        } else {
            let canonical = |x: i64, masked: bool, is_end: bool| -> i64 {
                if masked {
                    return match (stride > 0, is_end) {
                        (true, false) => 0,
                        (true, true) => dim,
                        (false, false) => dim - 1,
                        (false, true) => -1,
                    };
                }
                let x = if x < 0 { dim + x } else { x };
                if stride > 0 {
                    x.clamp(0, dim)
                } else {
                    x.clamp(-1, dim - 1)
                }
            };
            let b = canonical(spec.begin, spec.begin_masked, false);
            let e = canonical(spec.end, spec.end_masked, true);
            let interval = e - b;
            let size = if interval == 0 || (interval < 0) != (stride < 0) {
                0
            } else {
                interval / stride + i64::from(interval % stride != 0)
            };
            (b, size)
        };
        if size > 0 {
            view.base += first * input_strides[d];
        }
        view.shape.push(size);
        // A step only matters between two elements; then |stride| < dim and the product cannot
        // overflow (TF accepts any stride).
        view.strides.push(if size > 1 { stride * input_strides[d] } else { 0 });
    }
    let out_shape = gather.iter().map(|g| g.map_or(1, |d| view.shape[d])).collect();
    Ok((view, out_shape))
}

/// StridedSlice's view of `input_shape` from its `begin`, `end` and `strides` host inputs (1 to 3)
/// and mask attributes, and the output shape.
fn strided_slice_plan(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    input_shape: &[i64],
) -> Result<(StridedView, Vec<i64>)> {
    let (begin, begin_shape) = ctx.host_input_values(1)?;
    let (end, end_shape) = ctx.host_input_values(2)?;
    let (strides, strides_shape) = ctx.host_input_values(3)?;
    if [&begin_shape, &end_shape, &strides_shape].iter().any(|s| s.len() != 1) {
        return Err(Error::invalid_argument(format!(
            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes {begin_shape:?}, \
             {end_shape:?}, and {strides_shape:?} instead."
        )));
    }
    strided_slice_view(input_shape, &begin, &end, &strides, slice_masks(kernel)?)
}

pub fn strided_slice(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (view, out_shape) = strided_slice_plan(ctx, kernel, &input.shape)?;
    let out = ctx.allocate_output(0, input.dtype, &out_shape)?;
    launch(ctx.stream()?, &input, &view, &out)
}

/// StridedSlice of int32, all in host memory as CUDA TF registers it for the GPU (int32 tensors are
/// shape math there): computed on the host. TF's optimizers colocate such slices with variables
/// (the TF1 optimizers' sum of duplicate indices), which without this kernel cannot be placed.
pub fn strided_slice_host(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (input, input_shape) = ctx.host_input_values(0)?;
    let (view, out_shape) = strided_slice_plan(ctx, kernel, &input_shape)?;
    let count = validate::num_elements(&view.shape)? as usize;
    let mut bytes = Vec::with_capacity(count * 4);
    let mut index = vec![0i64; view.shape.len()];
    for _ in 0..count {
        let offset = view.base + index.iter().zip(&view.strides).map(|(i, s)| i * s).sum::<i64>();
        let value = *input.get(offset as usize).ok_or_else(|| Error::internal("strided slice outside its input"))?;
        bytes.extend_from_slice(&(value as i32).to_le_bytes());
        // The next index in row-major order.
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < view.shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    ctx.write_host_output(0, DType::I32, &out_shape, &bytes)
}

/// StridedSlice's and StridedSliceGrad's five mask attributes, in `strided_slice_view`'s order.
fn slice_masks(kernel: &KernelInstance) -> Result<[i64; 5]> {
    let a = &kernel.attrs;
    Ok([
        a.int("begin_mask")?,
        a.int("end_mask")?,
        a.int("ellipsis_mask")?,
        a.int("new_axis_mask")?,
        a.int("shrink_axis_mask")?,
    ])
}

/// StridedSliceGrad: zeros of the sliced input's `shape`, with `dy` written into the slice.
pub fn strided_slice_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (shape, shape_shape) = ctx.host_input_values(0)?;
    let (begin, begin_shape) = ctx.host_input_values(1)?;
    let (end, end_shape) = ctx.host_input_values(2)?;
    let (strides, strides_shape) = ctx.host_input_values(3)?;
    if [&shape_shape, &begin_shape, &end_shape, &strides_shape].iter().any(|s| s.len() != 1) {
        return Err(Error::invalid_argument(format!(
            "Expected shape, begin, end, and strides to be 1D tensors, but got shapes {shape_shape:?}, \
             {begin_shape:?}, {end_shape:?}, and {strides_shape:?} instead."
        )));
    }
    validate::num_elements(&shape)?;
    let dy = ctx.input(4)?;
    let masks = slice_masks(kernel)?;
    let (view, sliced_shape) = strided_slice_view(&shape, &begin, &end, &strides, masks)?;
    if sliced_shape != dy.shape {
        return Err(Error::invalid_argument(format!("shape of dy was {:?} instead of {sliced_shape:?}", dy.shape)));
    }
    let out = ctx.allocate_output(0, dy.dtype, &shape)?;
    let stream = ctx.stream()?;
    stream.fill(out.address, out.byte_len(), 0)?;
    launch_scatter(stream, &dy, &view, &out)
}

pub const REVERSE_SEQUENCE_SHADER: Shader = Shader {
    name: "reverse_sequence",
    source: include_str!("../../wgsl/reverse_sequence.wgsl"),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReverseSequenceParams {
    n: u32,
    unit: u32,
    seq_stride: u32,
    seq_size: u32,
    batch_stride: u32,
    batch_size: u32,
    src_off: u32,
    dst_off: u32,
    lens_off: u32,
    _pad: [u32; 3],
}

/// ReverseSequence (elements of whole 32-bit words; `seq_lengths` in host memory, checked as
/// TF-CPU checks them).
pub fn reverse_sequence(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    // Checked whole first: a range of the batch then takes its own lengths.
    let (lengths, seq_dim, batch_dim) = reverse_sequence_args(ctx, kernel, &input, false)?;
    if seq_dim == 0 && input.byte_len() > binding_limit(ctx.stream()?.device()) {
        return reverse_sequence_time_major(ctx, &input, &lengths, batch_dim);
    }
    // Past a binding, a range of the leading dimension at a time unless the sequences run along it.
    let leading_is_other = seq_dim != 0 && !input.shape.is_empty();
    batch::split_batch_if(ctx, kernel, leading_is_other.then_some(&batch::INPUT_0_OUTPUT_0), reverse_sequence_whole)
}

/// The checked lengths, sequence and batch dimensions of a ReverseSequence of `input`, a range of
/// the node's batch along dimension 0 where `batch_range` (its own sequences' lengths then).
fn reverse_sequence_args(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    input: &TensorRef,
    batch_range: bool,
) -> Result<(Vec<u32>, usize, usize)> {
    let (mut lengths, mut lengths_shape) = ctx.host_input_values(1)?;
    if batch_range && kernel.attrs.int("batch_dim")? == 0 && lengths_shape.len() == 1 && !input.shape.is_empty() {
        let (start, count) = (ctx.batch_start(), input.shape[0]);
        if start > 0 || count < lengths_shape[0] {
            lengths = lengths.get(start as usize..(start + count) as usize).unwrap_or_default().to_vec();
            lengths_shape[0] = lengths.len() as i64;
        }
    }
    let rank = input.shape.len();
    let (seq_attr, batch_attr) = (kernel.attrs.int("seq_dim")?, kernel.attrs.int("batch_dim")?);
    // TF-CPU takes no negative axes here.
    for (name, value) in [("seq_dim", seq_attr), ("batch_dim", batch_attr)] {
        if value < 0 || value >= rank as i64 {
            return Err(Error::invalid_argument(format!("Invalid {name} {value} for an input of rank {rank}")));
        }
    }
    if seq_attr == batch_attr {
        return Err(Error::invalid_argument(format!("batch_dim == seq_dim == {seq_attr}")));
    }
    let (seq_dim, batch_dim) = (seq_attr as usize, batch_attr as usize);
    if lengths_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("seq_lengths must be 1-dim, not {}", lengths_shape.len())));
    }
    if lengths_shape[0] != input.shape[batch_dim] {
        return Err(Error::invalid_argument(format!(
            "Length of seq_lengths != input.dims({batch_dim}), ({} vs. {})",
            lengths_shape[0], input.shape[batch_dim]
        )));
    }
    let seq_size = input.shape[seq_dim];
    let lengths = lengths
        .iter()
        .enumerate()
        .map(|(d, &len)| match len {
            len if len < 0 => Err(Error::invalid_argument(format!("seq_lens({d}) < 0"))),
            len if len > seq_size => {
                Err(Error::invalid_argument(format!("seq_lens({d}) > input.dims({seq_dim}), ({len} vs. {seq_size})")))
            }
            len => Ok(len as u32),
        })
        .collect::<Result<Vec<u32>>>()?;
    Ok((lengths, seq_dim, batch_dim))
}

fn reverse_sequence_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (lengths, seq_dim, batch_dim) = reverse_sequence_args(ctx, kernel, &input, true)?;
    let out = ctx.allocate_output(0, input.dtype, &input.shape)?;
    launch_reverse_sequence(ctx, &input, &lengths, seq_dim, batch_dim, &out)
}

/// ReverseSequence along dimension 0 of a tensor past a binding, where ranges of the leading
/// dimension cannot split it (`reverse_time_major_into`).
fn reverse_sequence_time_major(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    lengths: &[u32],
    batch_dim: usize,
) -> Result<()> {
    let out = ctx.allocate_output(0, input.dtype, &input.shape)?;
    if input.num_elements() == 0 {
        return Ok(());
    }
    reverse_time_major_into(ctx, input, lengths, batch_dim, &out)
}

/// ReverseSequence along dimension 0 of `input` into `out`: dimensions 0 and 1 swapped (a windowed
/// transpose), the sequences reversed along dimension 1 a range of the new leading dimension at a
/// time, and swapped back. A row of the swapped tensor past a binding is one sequence (the batch
/// leads: its first `length` rows reversed by a windowed index map, the rest copied) or, where the
/// batch lies deeper, itself a time-major ReverseSequence of one rank less.
fn reverse_time_major_into(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    lengths: &[u32],
    batch_dim: usize,
    out: &TensorRef,
) -> Result<()> {
    let mut perm: Vec<usize> = (0..input.shape.len()).collect();
    perm.swap(0, 1);
    let swapped_shape = super::index::permuted_shape(&input.shape, &perm);
    let swapped = ctx.allocate_temp(input.dtype, &swapped_shape)?;
    let reversed = ctx.allocate_temp(input.dtype, &swapped_shape)?;
    super::index::permute_any_size(ctx, input, &swapped, &perm)?;
    let batch_dim = perm.iter().position(|&d| d == batch_dim).unwrap_or(batch_dim);
    let (leading, row) = (swapped_shape[0], input.num_elements() as i64 / swapped_shape[0]);
    let row_bytes = row as u64 * input.dtype.size();
    let limit = binding_limit(ctx.stream()?.device());
    let per_part = (limit / row_bytes.max(1)).max(1) as i64;
    let mut start = 0;
    while start < leading {
        let count = per_part.min(leading - start);
        let part = |t: &TensorRef| windows::rows(t, start, count);
        // A range of the batch (now leading) takes its sequences' lengths.
        let part_lengths = if batch_dim == 0 { &lengths[start as usize..(start + count) as usize] } else { lengths };
        if row_bytes <= limit {
            launch_reverse_sequence(ctx, &part(&swapped), part_lengths, 1, batch_dim, &part(&reversed))?;
        } else {
            let one_row = |t: &TensorRef| {
                let mut row = windows::rows(t, start, 1);
                row.shape.remove(0);
                row
            };
            let (from, to) = (one_row(&swapped), one_row(&reversed));
            if batch_dim == 0 {
                reverse_prefix(ctx.stream()?, &from, i64::from(part_lengths[0]), &to)?;
            } else {
                reverse_time_major_into(ctx, &from, part_lengths, batch_dim - 1, &to)?;
            }
        }
        start += count;
    }
    super::index::permute_any_size(ctx, &reversed, out, &perm)
}

/// `out` = `input` with its first `length` rows (along dimension 0) in reverse order.
fn reverse_prefix(stream: &Stream, input: &TensorRef, length: i64, out: &TensorRef) -> Result<()> {
    let rows = input.shape[0].max(1);
    let inner = input.num_elements() as i64 / rows;
    let row_bytes = inner as u64 * input.dtype.size();
    let reversed = [
        DimMap { out: length, in_dim: length, in_stride: inner, offset: 0, mode: DimMode::Reverse },
        DimMap { out: inner, in_dim: inner, in_stride: 1, offset: 0, mode: DimMode::Direct },
    ];
    let head = |t: &TensorRef| windows::rows(t, 0, length);
    super::index::map(stream, &head(input), &head(out), &reversed, None)?;
    let tail = length as u64 * row_bytes;
    stream.memcpy_dtod(out.address + tail, input.address + tail, input.byte_len() - tail)
}

/// `out` = `input` with the first `lengths[b]` elements along `seq_dim` of each batch element `b`
/// (along `batch_dim`) reversed.
fn launch_reverse_sequence(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    lengths: &[u32],
    seq_dim: usize,
    batch_dim: usize,
    out: &TensorRef,
) -> Result<()> {
    let count = input.num_elements();
    if count == 0 {
        return Ok(());
    }
    let unit = input.dtype.size() / 4;
    let words = super::shader_len(count * unit, "ReverseSequence")?;
    let lens = ctx.allocate_temp(super::DType::I32, &[lengths.len() as i64])?;
    let stream = ctx.stream()?;
    stream.memcpy_htod(lens.address, bytemuck::cast_slice(lengths))?;
    let strides = contiguous_strides(&input.shape);
    let device = stream.device();
    let mems = [input, out, &lens].map(|t| device.memory.resolve(t.address, t.byte_len()));
    let [in_mem, out_mem, lens_mem] = mems;
    let (in_mem, out_mem, lens_mem) = (in_mem?, out_mem?, lens_mem?);
    let pipeline = device.pipelines.get(
        device,
        &REVERSE_SEQUENCE_SHADER,
        &PipelineSpec { entry: "main", ..Default::default() },
    )?;
    stream.encode(|core, encoder| {
        let (in_bind, src_off) = storage_window(core, &in_mem, 4)?;
        let (out_bind, dst_off) = storage_window(core, &out_mem, 4)?;
        let (lens_bind, lens_off) = storage_window(core, &lens_mem, 4)?;
        let params = ReverseSequenceParams {
            n: words,
            unit: unit as u32,
            seq_stride: strides[seq_dim] as u32,
            seq_size: input.shape[seq_dim] as u32,
            batch_stride: strides[batch_dim] as u32,
            batch_size: input.shape[batch_dim] as u32,
            src_off,
            dst_off,
            lens_off,
            _pad: [0; 3],
        };
        let bindings = [in_bind, out_bind, lens_bind];
        dispatch(core, encoder, "reverse_sequence", &pipeline, &bindings, bytemuck::bytes_of(&params), words as u64)
    })
}

pub fn slice(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (begin, begin_shape) = ctx.host_input_values(1)?;
    let (size, size_shape) = ctx.host_input_values(2)?;
    let rank = input.shape.len();
    if begin_shape != [rank as i64] || size_shape != [rank as i64] {
        return Err(Error::invalid_argument(format!(
            "Expected begin and size arguments to be 1-D tensors of size {rank}, but got shapes {begin_shape:?} and {size_shape:?} instead."
        )));
    }
    let strides = contiguous_strides(&input.shape);
    let mut view = StridedView { base: 0, shape: Vec::new(), strides: strides.clone() };
    for d in 0..rank {
        let dim = input.shape[d];
        let len = if size[d] == -1 { dim - begin[d] } else { size[d] };
        // `len > dim - begin`, not `begin + len > dim`: the sum can wrap.
        if begin[d] < 0 || begin[d] > dim || len < 0 || len > dim - begin[d] {
            return Err(Error::invalid_argument(format!(
                "Expected begin[{d}] in [0, {dim}] and size[{d}] in [0, {}], but got {} and {}",
                dim - begin[d],
                begin[d],
                size[d]
            )));
        }
        view.base += begin[d] * strides[d];
        view.shape.push(len);
    }
    let out = ctx.allocate_output(0, input.dtype, &view.shape.clone())?;
    launch(ctx.stream()?, &input, &view, &out)
}

/// The split axis as an index, with TF's wording.
fn split_axis(axis: &[i64], axis_shape: &[i64], input: &TensorRef) -> Result<usize> {
    let axis = validate::scalar(axis, axis_shape, "split_dim")?;
    let rank = input.shape.len() as i64;
    validate::axis(axis, input.shape.len(), "split_dim").map_err(|_| {
        Error::invalid_argument(format!("-input rank(-{rank}) <= split_dim < input rank ({rank}), but got {axis}"))
    })
}

/// Splits `input` along `axis` into pieces of the given sizes (checked by the caller: each
/// non-negative, summing to the axis), one output each.
fn split_into(ctx: &mut dyn KernelContext, input: &TensorRef, axis: usize, sizes: &[i64]) -> Result<()> {
    let strides = contiguous_strides(&input.shape);
    let mut offset = 0;
    for (i, &len) in sizes.iter().enumerate() {
        let mut shape = input.shape.clone();
        shape[axis] = len;
        let out = ctx.allocate_output(i, input.dtype, &shape)?;
        let view = StridedView { base: offset * strides[axis], shape, strides: strides.clone() };
        launch(ctx.stream()?, input, &view, &out)?;
        offset += len;
    }
    Ok(())
}

pub fn split(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (axis, axis_shape) = ctx.host_input_values(0)?;
    let input = ctx.input(1)?;
    let num_split = kernel.attrs.int("num_split")?;
    if num_split <= 0 || num_split as usize != ctx.num_outputs() {
        return Err(Error::invalid_argument(format!("Number of ways to split should be > 0, but got {num_split}")));
    }
    let axis = split_axis(&axis, &axis_shape, &input)?;
    let dim = input.shape[axis];
    if dim % num_split != 0 {
        return Err(Error::invalid_argument(format!(
            "Number of ways to split should evenly divide the split dimension, but got split_dim {axis} (size = {dim}) and num_split {num_split}"
        )));
    }
    split_into(ctx, &input, axis, &vec![dim / num_split; num_split as usize])
}

pub fn split_v(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let (mut sizes, sizes_shape) = ctx.host_input_values(1)?;
    let (axis, axis_shape) = ctx.host_input_values(2)?;
    let num_split = kernel.attrs.int("num_split")?;
    if sizes_shape.len() != 1 || sizes.len() as i64 != num_split || sizes.len() != ctx.num_outputs() {
        return Err(Error::invalid_argument(format!(
            "size of the split_tensor must be 1-D and have the same elements as outputs got {} -D and {} elements",
            sizes_shape.len(),
            sizes.len()
        )));
    }
    let axis = split_axis(&axis, &axis_shape, &input)?;
    let dim = input.shape[axis];
    if num_split == 1 && sizes[0] != dim {
        // TF's own rule: a single output is the whole input, and -1 does not stand for it.
        return Err(Error::invalid_argument(format!(
            "If there is only one output, it must have the same size as the input. Input size: {dim} output size: {}",
            sizes[0]
        )));
    }
    let mut unknown = None;
    let mut known = 0i64;
    for (i, &size) in sizes.iter().enumerate() {
        match size {
            -1 if unknown.is_some() => return Err(Error::invalid_argument("There can only be one -1 in the input.")),
            -1 => unknown = Some(i),
            s if s < 0 => {
                return Err(Error::invalid_argument(format!("Split size at index {i} must be >= 0. Got: {s}")))
            }
            s => known = validate::add(known, s)?,
        }
    }
    match unknown {
        None if known == dim => {}
        Some(i) if known <= dim => sizes[i] = dim - known,
        _ => {
            return Err(Error::invalid_argument(format!(
                "Determined shape must either match input shape along split_dim exactly if fully specified, or be less than the size of the input along split_dim if not fully specified.  Got: {known}"
            )))
        }
    }
    split_into(ctx, &input, axis, &sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(begin: i64, end: i64, ellipsis: i64, new_axis: i64, shrink: i64) -> [i64; 5] {
        [begin, end, ellipsis, new_axis, shrink]
    }

    #[test]
    fn basic_and_negative_strides() {
        // x[1:5] of a length-7 vector.
        let (v, s) = strided_slice_view(&[7], &[1], &[5], &[1], masks(0, 0, 0, 0, 0)).unwrap();
        assert_eq!((v.base, v.shape.clone(), v.strides.clone(), s), (1, vec![4], vec![1], vec![4]));
        // x[::-2] of length 7: 6, 4, 2, 0.
        let (v, s) = strided_slice_view(&[7], &[0], &[0], &[-2], masks(1, 1, 0, 0, 0)).unwrap();
        assert_eq!((v.base, v.strides.clone(), s), (6, vec![-2], vec![4]));
    }

    #[test]
    fn shrink_new_axis_and_ellipsis() {
        // x[1, ..., tf.newaxis] of shape [3, 4, 5] -> [4, 5, 1].
        let (v, s) = strided_slice_view(&[3, 4, 5], &[1, 0, 0], &[2, 0, 0], &[1, 1, 1], masks(0, 0, 2, 4, 1)).unwrap();
        assert_eq!(s, vec![4, 5, 1]);
        assert_eq!(v.base, 20);
        // Out-of-range shrink index is an InvalidArgument.
        assert!(strided_slice_view(&[3], &[3], &[4], &[1], masks(0, 0, 0, 0, 1)).is_err());
    }
}
