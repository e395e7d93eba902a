//! The generic `Conv` op (`tf.raw_ops.Conv`): any number of batch dimensions, 2 or 3 spatial ones,
//! channels last or first, groups. Its batch dimensions are merged into one and the node runs
//! through Conv2D's or Conv3D's kernels, with `data_format` and the attribute lists in their
//! terms; the output gets the node's batch dimensions back.

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::validate::shape_string;
use super::{conv, volume, AttrValue, DType, KernelContext, KernelInstance, TensorRef};

/// Conv: input [batch..., spatial..., C] (or [batch..., C, spatial...]), filter
/// [spatial..., C / groups, OC].
pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let batch_dims = kernel.attrs.int("batch_dims")?;
    let rank = input.shape.len() as i64;
    if batch_dims < 1 || batch_dims >= rank {
        return Err(Error::invalid_argument(format!(
            "batch_dims must be at least 1 and less than the input's rank {rank}, got {batch_dims}"
        )));
    }
    let spatial = rank - batch_dims - 1;
    if !(2..=3).contains(&spatial) {
        return Err(Error::invalid_argument(format!(
            "The input must have 2 or 3 spatial dimensions but got {spatial}"
        )));
    }
    let filter = ctx.input(1)?;
    if filter.shape.len() as i64 != spatial + 2 {
        return Err(Error::invalid_argument(format!(
            "filter must have {} dimensions, got {}",
            spatial + 2,
            shape_string(&filter.shape)
        )));
    }
    let groups = kernel.attrs.int("groups")?;
    let filter_depth = filter.shape[spatial as usize];
    let channels_first = match kernel.attrs.str("data_format")? {
        "CHANNELS_LAST" => false,
        "CHANNELS_FIRST" => true,
        other => return Err(Error::invalid_argument(format!("Invalid data format: {other}"))),
    };
    let depth = input.shape[if channels_first { batch_dims as usize } else { input.shape.len() - 1 }];
    if groups < 1 || filter_depth.checked_mul(groups) != Some(depth) {
        return Err(Error::invalid_argument(format!(
            "the input depth ({depth}) must be the filter's depth ({filter_depth}) times groups ({groups})"
        )));
    }
    let mut attrs = kernel.attrs.clone();
    // The op's default dilations are an empty list: no dilation.
    if kernel.attrs.ints("dilations")?.is_empty() {
        attrs.set("dilations", AttrValue::IntList(vec![1; spatial as usize + 2]));
    }
    for list in ["strides", "dilations"] {
        let values = attrs.ints(list)?;
        if values.len() as i64 != spatial + 2 {
            return Err(Error::invalid_argument(format!(
                "Sliding window {list} field must specify {} dimensions",
                spatial + 2
            )));
        }
    }
    let batch_shape = input.shape[..batch_dims as usize].to_vec();
    let merged_batch = batch_shape.iter().product::<i64>();
    let mut merged = vec![merged_batch];
    merged.extend_from_slice(&input.shape[batch_dims as usize..]);
    let format = match (spatial, channels_first) {
        (2, false) => "NHWC",
        (2, true) => "NCHW",
        (_, false) => "NDHWC",
        (_, true) => "NCDHW",
    };
    attrs.set("data_format", AttrValue::Str(format.into()));
    let instance = KernelInstance::new(kernel.def, attrs);
    let mut view = MergedBatch { inner: ctx, merged_input: merged, batch_shape };
    if spatial == 2 {
        conv::conv(&mut view, &instance)
    } else {
        volume::conv3d(&mut view, &instance)
    }
}

/// The node's context with input 0's batch dimensions merged into one, and output 0 allocated
/// with them split again.
struct MergedBatch<'a> {
    inner: &'a mut dyn KernelContext,
    merged_input: Vec<i64>,
    batch_shape: Vec<i64>,
}

impl KernelContext for MergedBatch<'_> {
    pass_through_to_inner!();
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        let tensor = self.inner.input(index)?;
        Ok(if index == 0 { TensorRef { shape: self.merged_input.clone(), ..tensor } } else { tensor })
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        if index != 0 || shape.is_empty() {
            return self.inner.allocate_output(index, dtype, shape);
        }
        let mut full = self.batch_shape.clone();
        full.extend_from_slice(&shape[1..]);
        let out = self.inner.allocate_output(index, dtype, &full)?;
        Ok(TensorRef { shape: shape.to_vec(), ..out })
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        self.inner.host_input_values(index)
    }
}
