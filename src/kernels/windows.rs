//! Elementwise work on tensors larger than one storage binding.
//!
//! A shader sees a tensor through one storage binding, at most `max_storage_buffer_binding_size`
//! bytes (128 MiB on lavapipe, WebGPU's default), while tensors may be as large as a buffer.
//! Elementwise kernels split such work into parts along the output's leading dimensions, each part
//! a set of smaller tensors (the same device memory, at an offset) that the kernel launches as it
//! would any other.

use crate::error::{Error, Result};
use crate::runtime::DeviceCore;

use super::TensorRef;

/// One part of an elementwise launch: the output's part and each operand's.
pub struct Part {
    pub out: TensorRef,
    pub operands: Vec<TensorRef>,
}

/// The parts of `out = f(operands...)` (operands broadcasting to `out`'s shape), each of whose
/// tensors fits one storage binding; `None` where the whole launch already fits.
pub fn elementwise_parts(core: &DeviceCore, out: &TensorRef, operands: &[&TensorRef]) -> Result<Option<Vec<Part>>> {
    let limit = binding_limit(core);
    let fits = |t: &TensorRef| t.byte_len() <= limit;
    if fits(out) && operands.iter().all(|t| fits(t)) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let n = out.num_elements();
    if operands.iter().all(|t| t.num_elements() == n || t.num_elements() == 1) {
        // No broadcasting but by single elements: one flat range, in parts that start on whole
        // words even for byte-sized elements.
        let flat = |t: &TensorRef| TensorRef { shape: vec![t.num_elements() as i64], ..t.clone() };
        split(limit, flat(out), operands.iter().map(|t| flat(t)).collect(), &mut parts)?;
    } else {
        let operands: Vec<TensorRef> = operands.iter().map(|t| aligned_to(t, out.shape.len())).collect();
        split(limit, out.clone(), operands, &mut parts)?;
    }
    Ok(Some(parts))
}

/// The largest tensor, in bytes, that one storage binding is sure to hold: the adapter's limit less
/// room for the skew of a binding that starts at an aligned offset before the tensor.
pub fn binding_limit(core: &DeviceCore) -> u64 {
    core.limits
        .max_storage_buffer_binding_size
        .saturating_sub(u64::from(core.limits.min_storage_buffer_offset_alignment))
}

/// `t` with leading 1s up to `rank` dimensions (as broadcasting reads it).
fn aligned_to(t: &TensorRef, rank: usize) -> TensorRef {
    let mut shape = vec![1; rank.saturating_sub(t.shape.len())];
    shape.extend_from_slice(&t.shape);
    TensorRef { shape, ..t.clone() }
}

/// Rows `start..start + count` of `t` along its first dimension.
pub fn rows(t: &TensorRef, start: i64, count: i64) -> TensorRef {
    let row_bytes = t.byte_len() / t.shape[0].max(1) as u64;
    let mut shape = t.shape.clone();
    shape[0] = count;
    TensorRef { address: t.address + start as u64 * row_bytes, dtype: t.dtype, shape }
}

/// Rows `first..first + count` of the one image of `t` ([1, h, w, c], NHWC; or planes of a volume
/// [1, d, h, w, c]), as an image of `count` rows: a band of a convolution, pool or resize.
pub fn image_rows(t: &TensorRef, first: i64, count: i64) -> TensorRef {
    let row_bytes = t.byte_len() / t.shape[1].max(1) as u64;
    let mut shape = t.shape.clone();
    shape[1] = count;
    TensorRef { address: t.address + first as u64 * row_bytes, dtype: t.dtype, shape }
}

/// A band of input rows `first..end` of a gradient that gathers, for each input element, over the
/// windows covering it: `zeros`, rows no window reads (first, count), and `windows` (first, end)
/// covering the band, the first of which starts at input row `start` (0 where it starts in the
/// padding; at most `first` unless strides pass the window).
pub struct GatherBand {
    pub first: i64,
    pub end: i64,
    pub zeros: Option<(i64, i64)>,
    pub windows: Option<(i64, i64, i64)>,
}

/// The bands of `rows` rows of an input of `size` rows under `out` windows of `k` rows, `stride`
/// apart, the first starting `pad` rows before the input: the last band first (a band writes the
/// rows from its first window's start, which its own first rows' band, run after it, rewrites).
pub fn gather_bands(size: i64, rows: i64, (k, stride, pad, out): (i64, i64, i64, i64)) -> Vec<GatherBand> {
    let firsts: Vec<i64> = (0..size).step_by(rows.max(1) as usize).collect();
    firsts
        .into_iter()
        .rev()
        .map(|first| {
            let end = (first + rows).min(size);
            // The first window whose last row reaches `first`, and one past the last that starts
            // by `end`.
            let reach_first = first + pad - k + 1;
            let first_window = if reach_first <= 0 { 0 } else { (reach_first + stride - 1) / stride };
            let end_window = ((end - 1 + pad).div_euclid(stride) + 1).min(out);
            if first_window >= end_window {
                return GatherBand { first, end, zeros: Some((first, end - first)), windows: None };
            }
            let start = (first_window * stride - pad).max(0);
            let zeros = (start > first).then_some((first, start - first));
            GatherBand { first, end, zeros, windows: Some((first_window, end_window, start)) }
        })
        .collect()
}

/// `t` without its first dimension, row `index` of it (or the only row, where it broadcasts).
fn row(t: &TensorRef, index: i64) -> TensorRef {
    let index = if t.shape[0] == 1 { 0 } else { index };
    let mut part = rows(t, index, 1);
    part.shape.remove(0);
    part
}

fn split(limit: u64, out: TensorRef, operands: Vec<TensorRef>, parts: &mut Vec<Part>) -> Result<()> {
    let fits = |t: &TensorRef| t.byte_len() <= limit;
    if fits(&out) && operands.iter().all(fits) {
        parts.push(Part { out, operands });
        return Ok(());
    }
    let refuse = || {
        Error::invalid_argument(format!(
            "operands {:?} do not broadcast to {:?} in parts of {limit} bytes",
            operands.iter().map(|t| t.shape.clone()).collect::<Vec<_>>(),
            out.shape
        ))
    };
    // A scalar output always fits: an operand larger than it does not broadcast; nor does one
    // whose leading dimension is neither 1 nor the output's.
    let &leading = out.shape.first().ok_or_else(refuse)?;
    if operands.iter().any(|t| t.shape.first().is_some_and(|&d| d != 1 && d != leading)) {
        return Err(refuse());
    }
    // Operands that run along the leading dimension split with the output; the others repeat.
    let splits = |t: &TensorRef| t.shape[0] == leading && leading != 1;
    let row_bytes = |t: &TensorRef| t.byte_len() / leading.max(1) as u64;
    let repeated_fit = operands.iter().filter(|t| !splits(t)).all(fits);
    let mut per_part = std::iter::once(&out)
        .chain(operands.iter().filter(|t| splits(t)))
        .map(|t| limit / row_bytes(t).max(1))
        .min()
        .unwrap_or(0) as i64;
    // Parts of elements smaller than a word (bools, halves) start on whole words.
    if std::iter::once(&out).chain(&operands).any(|t| t.dtype.size() < 4) && per_part >= 4 {
        per_part -= per_part % 4;
    }
    if repeated_fit && per_part >= 1 && leading > 1 {
        let mut start = 0;
        while start < leading {
            let count = per_part.min(leading - start);
            let ops = operands.iter().map(|t| if splits(t) { rows(t, start, count) } else { t.clone() }).collect();
            parts.push(Part { out: rows(&out, start, count), operands: ops });
            start += count;
        }
        return Ok(());
    }
    // One row is too big, or a repeated operand is: split each row along the next dimension.
    for index in 0..leading {
        split(limit, row(&out, index), operands.iter().map(|t| row(t, index)).collect(), parts)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::DType;

    fn tensor(address: u64, shape: &[i64]) -> TensorRef {
        TensorRef { address, dtype: DType::F32, shape: shape.to_vec() }
    }

    fn parts(limit: u64, out: &TensorRef, operands: &[&TensorRef]) -> Vec<Part> {
        let mut parts = Vec::new();
        split(limit, out.clone(), operands.iter().map(|t| aligned_to(t, out.shape.len())).collect(), &mut parts)
            .unwrap();
        parts
    }

    #[test]
    fn leading_rows_split_and_broadcast_operands_repeat() {
        // [10, 4] floats in parts of 128 bytes at most: 8 rows of 16 bytes, then 2.
        let out = tensor(1000, &[10, 4]);
        let a = tensor(2000, &[10, 4]);
        let bias = tensor(3000, &[4]);
        let p = parts(128, &out, &[&a, &bias]);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].out.address, p[0].out.shape.clone()), (1000, vec![8, 4]));
        assert_eq!((p[1].out.address, p[1].out.shape.clone()), (1128, vec![2, 4]));
        assert_eq!(p[1].operands[0].address, 2128);
        assert_eq!((p[1].operands[1].address, p[1].operands[1].shape.clone()), (3000, vec![1, 4]));
    }

    #[test]
    fn rows_too_big_split_along_the_next_dimension() {
        let out = tensor(0, &[2, 3, 8]);
        let column = tensor(5000, &[2, 3, 1]);
        let p = parts(64, &out, &[&column]);
        // Each [3, 8] row is 96 bytes: each splits into [2, 8] and [1, 8].
        assert_eq!(p.len(), 4);
        assert_eq!(p[2].out.address, 96);
        assert_eq!(p[2].out.shape, vec![2, 8]);
        assert_eq!(p[2].operands[0].address, 5000 + 12);
        assert_eq!(p[2].operands[0].shape, vec![2, 1]);
    }
}
