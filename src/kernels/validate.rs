//! Input validation every kernel goes through before it allocates or launches. TensorFlow aborts
//! the process (a failed CHECK in `TensorShape`) when an output shape has a negative dimension, more
//! than 254 dimensions or more elements than an int64 holds, so these checks return TF's own
//! `InvalidArgument` first. `registration` runs `output_shape` on every output and temporary a
//! kernel asks for, so a kernel cannot forget it; kernels use the arithmetic helpers below to
//! compute shapes without wrapping (the release build does not check overflow).

use crate::error::{Error, Result};

use super::DType;

/// `TensorShape::MaxDimensions()`.
pub const MAX_RANK: usize = 254;

/// `a * b` for shape arithmetic, or TF's overflow error.
pub fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).filter(|_| a >= 0 && b >= 0).ok_or_else(|| {
        Error::invalid_argument(format!("Encountered overflow when multiplying {a} with {b}, result: -1"))
    })
}

/// `a + b` for shape arithmetic (paddings, concatenation), or an overflow error.
pub fn add(a: i64, b: i64) -> Result<i64> {
    a.checked_add(b).ok_or_else(|| Error::invalid_argument(format!("Encountered overflow when adding {a} and {b}")))
}

/// The number of elements of `shape`, after checking each dimension and the product as
/// `TensorShape` would.
pub fn num_elements(shape: &[i64]) -> Result<i64> {
    if shape.len() > MAX_RANK {
        return Err(Error::invalid_argument(format!(
            "Shape {shape:?} has too many dimensions: {} > {MAX_RANK}",
            shape.len()
        )));
    }
    if let Some(&d) = shape.iter().find(|&&d| d < 0) {
        return Err(Error::invalid_argument(format!("Dimension {d} must be >= 0")));
    }
    // TensorShape multiplies the dimensions in order and aborts the process where the running
    // product overflows, so [0, 2**62, 2**62] is an empty tensor but [18, 2**62, 0] is refused.
    let mut n = 1i64;
    for &d in shape {
        if n == 0 {
            break;
        }
        n = mul(n, d)?;
    }
    Ok(n)
}

/// Checks an output or temporary shape and returns its size in bytes. Sizes no allocation can
/// serve are `ResourceExhausted`, as TF reports a failed allocation.
pub fn output_bytes(dtype: DType, shape: &[i64], budget: u64) -> Result<u64> {
    let elements = num_elements(shape)? as u64;
    let bytes = elements.checked_mul(dtype.size()).filter(|&b| b <= budget).ok_or_else(|| {
        Error::resource_exhausted(format!(
            "OOM when allocating tensor with shape {shape:?} and type {}: {elements} elements do not fit the \
             device memory budget of {budget} bytes",
            dtype.tf_name()
        ))
    })?;
    Ok(bytes)
}

/// `axis` in `[-rank, rank)` as an index, with TF's wording for `what` ("split_dim", "axis", ...).
pub fn axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let rank_i = rank as i64;
    if axis < -rank_i || axis >= rank_i {
        return Err(Error::invalid_argument(format!(
            "Expected {what} in the range [{}, {rank_i}), but got {axis}",
            -rank_i
        )));
    }
    Ok(if axis < 0 { (axis + rank_i) as usize } else { axis as usize })
}

/// A host input that must be a scalar: its one value.
pub fn scalar(values: &[i64], shape: &[i64], what: &str) -> Result<i64> {
    match (values, shape.is_empty()) {
        ([v], true) => Ok(*v),
        _ => Err(Error::invalid_argument(format!("{what} must be a scalar but has shape {shape:?}"))),
    }
}

/// A shape as TF's `TensorShape::DebugString` writes it: `[2,3]`.
pub fn shape_string(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("[{}]", dims.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_dimensions_and_overflow_are_errors() {
        assert_eq!(num_elements(&[2, 3]).unwrap(), 6);
        assert_eq!(num_elements(&[]).unwrap(), 1);
        assert_eq!(num_elements(&[0, 1 << 62, 1 << 62]).unwrap(), 0);
        // The running product overflows before it reaches the zero: TensorShape aborts on it.
        assert!(num_elements(&[18, 1 << 62, 0]).unwrap_err().message.contains("overflow"));
        assert!(num_elements(&[1 << 62, 0, -1]).unwrap_err().message.contains("must be >= 0"));
        assert!(num_elements(&[-2, 12]).unwrap_err().message.contains("must be >= 0"));
        let overflow = num_elements(&[20_000_000_000_000_000, 100_000_000, 1]).unwrap_err();
        assert!(overflow.message.contains("overflow"), "{overflow}");
        assert!(num_elements(&[1; MAX_RANK + 1]).is_err());
        assert!(num_elements(&[1; MAX_RANK]).is_ok());
    }

    #[test]
    fn sizes_past_the_budget_are_resource_exhausted() {
        assert_eq!(output_bytes(DType::F32, &[4, 4], 64).unwrap(), 64);
        let e = output_bytes(DType::F32, &[4, 5], 64).unwrap_err();
        assert_eq!(e.code, crate::error::Code::ResourceExhausted);
        // Elements that fit an int64 but whose bytes do not fit a u64.
        let e = output_bytes(DType::C128, &[1 << 62], u64::MAX).unwrap_err();
        assert_eq!(e.code, crate::error::Code::ResourceExhausted);
    }

    #[test]
    fn arithmetic_and_axes() {
        assert!(mul(i64::MAX, 2).is_err());
        assert!(mul(-1, 2).is_err());
        assert!(add(i64::MAX, 1).is_err());
        assert_eq!(axis(-1, 3, "axis").unwrap(), 2);
        assert!(axis(3, 3, "axis").is_err());
        assert!(axis(-4, 3, "axis").is_err());
        assert!(axis(0, 0, "axis").is_err());
        assert_eq!(scalar(&[5], &[], "x").unwrap(), 5);
        assert!(scalar(&[5], &[1], "x").is_err());
    }
}
