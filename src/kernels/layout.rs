//! Channels-first layouts (NCHW, NCDHW) for the convolution, pooling and batch-norm family.
//!
//! The family's kernels are channels-last. A channels-first node runs the same kernel through
//! `channels_last`: its image inputs are transposed to channels-last temporaries, its attribute
//! lists and shape inputs are reordered, and its image outputs are computed in temporaries and
//! transposed back. That costs two transposes per image, but every layout serves the whole domain
//! of its op, which a registered kernel must (TF falls back to the CPU only when no kernel is
//! registered, and TF-CPU itself has no NCHW kernels for most of these ops).

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::batch::{is_binding_limit, split_batch_on_overflow, BatchArgs};
use super::index::{permute_any_size, permuted_shape};
use super::{AttrValue, ComputeFn, DType, KernelContext, KernelInstance, TensorRef, VariableWork};

/// Which of an op's arguments are images in its `data_format`.
pub struct ImageArgs {
    /// Image inputs (transposed to channels-last before the kernel reads them).
    pub inputs: &'static [usize],
    /// Host inputs holding an image's shape (`input_sizes`, `orig_input_shape`).
    pub shape_inputs: &'static [usize],
    /// Image outputs (computed channels-last, then transposed back).
    pub outputs: &'static [usize],
}

/// Whether `format` puts channels second (`NCHW`, `NCDHW`); errors on formats TF does not define.
pub fn is_channels_first(format: &str) -> Result<bool> {
    match format {
        "NHWC" | "NDHWC" => Ok(false),
        "NCHW" | "NCDHW" => Ok(true),
        other => Err(Error::invalid_argument(format!("Invalid data format: {other}"))),
    }
}

/// Runs `compute`, written for channels-last, on a node whose `data_format` is channels-first.
pub fn channels_last(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    images: &ImageArgs,
    compute: ComputeFn,
) -> Result<()> {
    let format = kernel.attrs.str("data_format")?;
    let rank = format.len();
    let mut attrs = kernel.attrs.clone();
    attrs.set("data_format", AttrValue::Str(if rank == 5 { "NDHWC" } else { "NHWC" }.into()));
    for list in ["strides", "dilations", "ksize"] {
        if let Ok(values) = kernel.attrs.ints(list) {
            // A list of the wrong length stays as it is, for the kernel's own check to refuse.
            if values.len() == rank {
                attrs.set(list, AttrValue::IntList(to_channels_last(&values)));
            }
        }
    }
    if let Ok(pads) = kernel.attrs.ints("explicit_paddings") {
        if pads.len() == 2 * rank {
            let pairs: Vec<[i64; 2]> = pads.chunks(2).map(|p| [p[0], p[1]]).collect();
            attrs.set("explicit_paddings", AttrValue::IntList(to_channels_last(&pairs).concat()));
        }
    }
    let inner_kernel = KernelInstance::new(kernel.def, attrs);
    let mut adapter = ChannelsLastContext { inner: ctx, images, transposed: Vec::new(), pending: Vec::new() };
    compute(&mut adapter, &inner_kernel)?;
    let ChannelsLastContext { inner, pending, .. } = adapter;
    for (channels_last, output) in pending {
        transpose_to(inner, &channels_last, &output, to_channels_first_perm(output.shape.len()))?;
    }
    Ok(())
}

/// `[n, c, spatial...]` reordered to `[n, spatial..., c]`.
fn to_channels_last<T: Clone>(values: &[T]) -> Vec<T> {
    let mut out = values.to_vec();
    if out.len() > 2 {
        out[1..].rotate_left(1);
    }
    out
}

/// The permutation that takes a channels-first tensor of `rank` to channels-last.
fn to_channels_last_perm(rank: usize) -> Vec<usize> {
    to_channels_last(&(0..rank).collect::<Vec<_>>())
}

/// The permutation that takes a channels-last tensor of `rank` to channels-first.
fn to_channels_first_perm(rank: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..rank).collect();
    if rank > 2 {
        perm[1..].rotate_right(1);
    }
    perm
}

fn transpose_to(ctx: &mut dyn KernelContext, input: &TensorRef, out: &TensorRef, perm: Vec<usize>) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    permute_any_size(ctx, input, out, &perm)
}

/// Image input `index` (`input`) permuted by `perm` into a temporary, seen with the shape `view`
/// makes of the permuted one; made once per input, then taken from `transposed`.
fn transposed_once(
    inner: &mut dyn KernelContext,
    transposed: &mut Vec<(usize, TensorRef)>,
    (index, input): (usize, &TensorRef),
    perm: Vec<usize>,
    view: impl FnOnce(Vec<i64>) -> Vec<i64>,
) -> Result<TensorRef> {
    if let Some((_, t)) = transposed.iter().find(|(i, _)| *i == index) {
        return Ok(t.clone());
    }
    let temp = inner.allocate_temp(input.dtype, &permuted_shape(&input.shape, &perm))?;
    transpose_to(inner, input, &temp, perm)?;
    let seen = TensorRef { shape: view(temp.shape.clone()), ..temp };
    transposed.push((index, seen.clone()));
    Ok(seen)
}

/// The node's context as a channels-last kernel sees it.
struct ChannelsLastContext<'a> {
    inner: &'a mut dyn KernelContext,
    images: &'a ImageArgs,
    /// Image inputs already transposed, by index.
    transposed: Vec<(usize, TensorRef)>,
    /// Channels-last temporaries and the channels-first outputs they become.
    pending: Vec<(TensorRef, TensorRef)>,
}

impl ChannelsLastContext<'_> {
    fn image_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let output =
            self.inner.allocate_output(index, dtype, &permuted_shape(shape, &to_channels_first_perm(shape.len())))?;
        let temp = self.inner.allocate_temp(dtype, shape)?;
        self.pending.push((temp.clone(), output));
        Ok(temp)
    }
}

impl KernelContext for ChannelsLastContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        let input = self.inner.input(index)?;
        // Images of another rank go through as they are; the kernel's rank check refuses them.
        if !self.images.inputs.contains(&index) || input.shape.len() < 3 {
            return Ok(input);
        }
        let perm = to_channels_last_perm(input.shape.len());
        transposed_once(self.inner, &mut self.transposed, (index, &input), perm, |shape| shape)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        if self.images.outputs.contains(&index) && shape.len() >= 3 {
            return self.image_output(index, dtype, shape);
        }
        self.inner.allocate_output(index, dtype, shape)
    }

    fn forward_input_or_allocate_output(
        &mut self,
        candidates: &[usize],
        index: usize,
        dtype: DType,
        shape: &[i64],
    ) -> Result<TensorRef> {
        if self.images.outputs.contains(&index) && shape.len() >= 3 {
            return self.image_output(index, dtype, shape);
        }
        self.inner.forward_input_or_allocate_output(candidates, index, dtype, shape)
    }

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (values, shape) = self.inner.host_input_values(index)?;
        if self.images.shape_inputs.contains(&index) && values.len() >= 3 {
            return Ok((to_channels_last(&values), shape));
        }
        Ok((values, shape))
    }
}

/// Runs `compute`, a channels-last op whose channels are independent of each other (pools,
/// resizes and their gradients); where a tensor was too big to bind even so (one window's input,
/// all its channels, passes a binding: millions of channels), runs it again with every channel as
/// an image of its own: image inputs [n, spatial..., c] become [n * c, spatial..., 1] (transposed
/// to channels-first, which is that shape's layout), and image outputs computed so are transposed
/// back. The batch of n * c images then splits as any batch does.
pub fn channels_as_images_on_overflow(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    images: &ImageArgs,
    compute: impl Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
) -> Result<()> {
    let Some(failed) = try_binding(ctx, kernel, &compute)? else { return Ok(()) };
    channels_as_images(ctx, kernel, images, &compute, failed).map(drop)
}

/// `compute` with each channel an image (`channels_as_images_on_overflow`), after a first run
/// failed with `error` having allocated `allocated`; returns the node's outputs, by index.
pub fn channels_as_images(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    images: &ImageArgs,
    compute: &impl Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    (error, allocated): (Error, Allocated),
) -> Result<Allocated> {
    // A window across channels (depthwise pooling) ties them together.
    let across_channels = ["ksize", "strides"]
        .iter()
        .any(|list| kernel.attrs.ints(list).is_ok_and(|v| v.last().is_some_and(|&k| k != 1)));
    let channels = match images.inputs.first() {
        Some(&i) => ctx.input(i)?.shape.last().copied().unwrap_or(1),
        None => 1,
    };
    if across_channels || channels <= 1 {
        return Err(error);
    }
    let mut adapter = ChannelsAsImagesContext {
        inner: ctx,
        images,
        channels,
        allocated,
        transposed: Vec::new(),
        pending: Vec::new(),
    };
    compute(&mut adapter, kernel)?;
    let ChannelsAsImagesContext { inner, pending, allocated, .. } = adapter;
    for (per_channel, output) in pending {
        transpose_to(inner, &per_channel, &output, to_channels_last_perm(output.shape.len()))?;
    }
    Ok(allocated)
}

/// `whole`, a channels-last op of independent channels, in ranges of its batch where its tensors
/// pass a binding, and with each channel an image where that does not serve either.
pub fn in_batches_of_images(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    (images, batched): (&ImageArgs, &BatchArgs),
    whole: ComputeFn,
) -> Result<()> {
    channels_as_images_on_overflow(ctx, kernel, images, |ctx, kernel| {
        split_batch_on_overflow(ctx, kernel, batched, whole)
    })
}

/// A node's outputs allocated so far, by index.
pub type Allocated = Vec<(usize, TensorRef)>;

/// Runs `compute`: None where it ran, or, where a tensor was too big to bind, that error and the
/// outputs the run allocated (a second way of running the node must write those: TF allocates
/// each once).
pub fn try_binding(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    compute: &impl Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
) -> Result<Option<(Error, Allocated)>> {
    let mut first = RecordingContext { inner: ctx, allocated: Vec::new() };
    match compute(&mut first, kernel) {
        Err(e) if is_binding_limit(&e) => Ok(Some((e, first.allocated))),
        other => other.map(|()| None),
    }
}

/// The node's context, remembering the outputs a run allocated (TF allocates each once, and a
/// second run must write the same ones).
struct RecordingContext<'a> {
    inner: &'a mut dyn KernelContext,
    allocated: Vec<(usize, TensorRef)>,
}

impl KernelContext for RecordingContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        self.inner.input(index)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let t = self.inner.allocate_output(index, dtype, shape)?;
        self.allocated.push((index, t.clone()));
        Ok(t)
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        self.inner.host_input_values(index)
    }
}

/// The node's context as a channels-last kernel sees it with each of `channels` channels an image
/// (`channels_as_images_on_overflow`).
struct ChannelsAsImagesContext<'a> {
    inner: &'a mut dyn KernelContext,
    images: &'a ImageArgs,
    channels: i64,
    /// Outputs the first run allocated, by index.
    allocated: Vec<(usize, TensorRef)>,
    /// Image inputs already transposed, by index.
    transposed: Vec<(usize, TensorRef)>,
    /// Per-channel temporaries, as [n, c, spatial...], and the outputs they become.
    pending: Vec<(TensorRef, TensorRef)>,
}

impl ChannelsAsImagesContext<'_> {
    /// [n, spatial..., c] as [n * c, spatial..., 1].
    fn as_images(&self, shape: &[i64]) -> Vec<i64> {
        let mut out = shape.to_vec();
        let r = out.len();
        out[0] *= out[r - 1];
        out[r - 1] = 1;
        out
    }

    fn output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        output_once(self.inner, &mut self.allocated, (index, dtype, shape))
    }
}

/// Output `index` of the node: the one already in `allocated`, or one allocated now and recorded
/// there (TF allocates each output once, and a node run in parts must write the same one).
pub fn output_once(
    inner: &mut dyn KernelContext,
    allocated: &mut Allocated,
    (index, dtype, shape): (usize, DType, &[i64]),
) -> Result<TensorRef> {
    if let Some((_, t)) = allocated.iter().find(|(i, _)| *i == index) {
        return Ok(t.clone());
    }
    let t = inner.allocate_output(index, dtype, shape)?;
    allocated.push((index, t.clone()));
    Ok(t)
}

impl KernelContext for ChannelsAsImagesContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        let input = self.inner.input(index)?;
        if !self.images.inputs.contains(&index) || input.shape.len() < 3 {
            return Ok(input);
        }
        let perm = to_channels_first_perm(input.shape.len());
        let images = self.as_images(&input.shape);
        transposed_once(self.inner, &mut self.transposed, (index, &input), perm, |_| images)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let r = shape.len();
        if !self.images.outputs.contains(&index) || r < 3 || shape[r - 1] != 1 || shape[0] % self.channels != 0 {
            return self.output(index, dtype, shape);
        }
        // [n * c, spatial..., 1] back to [n, spatial..., c].
        let (n, c) = (shape[0] / self.channels, self.channels);
        let mut node_shape = shape.to_vec();
        (node_shape[0], node_shape[r - 1]) = (n, c);
        let output = self.output(index, dtype, &node_shape)?;
        let mut channels_first = vec![n, c];
        channels_first.extend_from_slice(&shape[1..r - 1]);
        let temp = self.inner.allocate_temp(dtype, &channels_first)?;
        self.pending.push((temp.clone(), output));
        Ok(TensorRef { shape: shape.to_vec(), ..temp })
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (values, shape) = self.inner.host_input_values(index)?;
        if self.images.shape_inputs.contains(&index) && values.len() >= 3 {
            return Ok((self.as_images(&values), shape));
        }
        Ok((values, shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_move_last_and_back() {
        assert_eq!(to_channels_last(&[1, 2, 3, 4]), vec![1, 3, 4, 2]);
        assert_eq!(to_channels_last_perm(5), vec![0, 2, 3, 4, 1]);
        assert_eq!(permuted_shape(&[8, 3, 5, 7], &to_channels_last_perm(4)), vec![8, 5, 7, 3]);
        assert_eq!(permuted_shape(&[8, 5, 7, 3], &to_channels_first_perm(4)), vec![8, 3, 5, 7]);
        let pairs = [[0, 0], [1, 2], [3, 4], [5, 6]];
        assert_eq!(to_channels_last(&pairs).concat(), vec![0, 0, 3, 4, 5, 6, 1, 2]);
    }
}
